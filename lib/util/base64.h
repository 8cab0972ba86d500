/* Base64 (RFC 4648): the standard alphabet with padding (Kubernetes base64
 * channel protocols, WebSocket accept key) and the URL-safe one without
 * padding (tokens). */
#ifndef SL_BASE64_H
#define SL_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Output length of encoding n bytes. */
size_t sl_base64_encoded_len(size_t n, int url);
/* Encodes n bytes into dst (sl_base64_encoded_len + 1 bytes, NUL added).
 * url != 0: URL-safe alphabet, no padding. Returns the length written. */
size_t sl_base64_encode(char *dst, const uint8_t *src, size_t n, int url);
/* Decodes standard, padded base64 (length a multiple of 4, no whitespace).
 * dst needs 3 * len / 4 bytes. Returns the decoded length or -1 on malformed
 * input. */
long sl_base64_decode(uint8_t *dst, const char *src, size_t len);

#endif
