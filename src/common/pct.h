/* Percent-encoding (RFC 3986 §2.1), the one codec of the programs:
 * grpc-message values (gRPC over HTTP/2: sluiced's answers, the CRI
 * client's reading of them) and URL paths and query strings (the kube API
 * front, sluice-hostd's admin endpoint). */
#ifndef SL_PCT_H
#define SL_PCT_H

#include <stddef.h>

/* A '%' not followed by two hex digits is an error (URLs); without it the
 * '%' is kept literally, as gRPC asks of a grpc-message receiver. */
#define SL_PCT_STRICT 1u
/* '+' decodes to a space (application/x-www-form-urlencoded queries). */
#define SL_PCT_PLUS_SPACE 2u

/* Decodes len bytes of s (no NUL needed) into out, room for outlen >= 1
 * bytes, and NUL-terminates it; output beyond outlen - 1 bytes is dropped
 * (decoding never writes past out[outlen - 1]). Returns the decoded length,
 * or -1 for a bad escape under SL_PCT_STRICT (out then holds a prefix). */
long sl_pct_decode(const char *s, size_t len, char *out, size_t outlen, unsigned flags);

/* The same into a new string (caller frees); NULL when out of memory or
 * for a bad escape under SL_PCT_STRICT. */
char *sl_pct_decode_dup(const char *s, size_t len, unsigned flags);

/* Encodes s for grpc-message: every byte outside 0x20..0x7e, and '%',
 * becomes %XX (upper-case hex); the rest is copied. Returns a new string
 * (caller frees), or NULL when out of memory. */
char *sl_pct_encode_grpc(const char *s);

#endif
