/* Single-use token cache (protocol notes §2.3): random URL-safe tokens of
 * SL_TOKEN_BYTES random bytes from getrandom(), each carrying one parked
 * request, valid for a TTL, at most max_pending un-consumed. I/O free: the
 * caller supplies the current time in milliseconds. */
#ifndef SL_TOKEN_CACHE_H
#define SL_TOKEN_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "sluice/server.h"

#define SL_TOKEN_BYTES 16 /* 128 bits */
#define SL_TOKEN_LEN 22   /* base64url, no padding */

/* A token's kind is the kind of the request it parks. */
typedef sl_stream_kind sl_token_kind;
#define SL_TOKEN_EXEC SL_STREAM_EXEC
#define SL_TOKEN_ATTACH SL_STREAM_ATTACH
#define SL_TOKEN_PORTFORWARD SL_STREAM_PORTFORWARD

typedef struct sl_token_cache sl_token_cache;

/* free_fn releases a payload that is dropped unconsumed (expiry, cache
 * free). Returns NULL on ENOMEM. */
sl_token_cache *sl_token_cache_new(uint32_t max_pending, uint64_t ttl_ms,
                                   void (*free_fn)(void *payload));
void sl_token_cache_free(sl_token_cache *c);

/* Parks payload under a new token written to token_out (NUL-terminated).
 * Expired entries are dropped first. Returns SL_OK, SL_ERR_FULL when
 * max_pending live tokens exist, SL_ERR_SYS when getrandom fails. On error
 * the payload stays the caller's. */
int sl_token_cache_insert(sl_token_cache *c, sl_token_kind kind, void *payload, uint64_t now_ms,
                          char token_out[SL_TOKEN_LEN + 1]);

/* Removes the token (always, even when expired or of another kind) and
 * returns its payload when it was live and of `kind`; else NULL (an expired
 * or wrong-kind payload is freed with free_fn). */
void *sl_token_cache_consume(sl_token_cache *c, const char *token, size_t token_len,
                             sl_token_kind kind, uint64_t now_ms);

/* Live (un-expired, un-consumed) entries at now_ms. */
size_t sl_token_cache_pending(sl_token_cache *c, uint64_t now_ms);

#endif
