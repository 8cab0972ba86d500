#include "server/token_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util/base64.h"
#include "sluice/error.h"

#define TOKEN_TRIES 10      /* attempts to draw a token not already pending */
#define INITIAL_BUCKETS 16u /* power of two; the table doubles as entries grow */
#define MAX_BUCKETS (1u << 24)

typedef struct entry {
    struct entry *older, *newer; /* insertion (= expiry) order */
    struct entry *chain;         /* next in the same hash bucket */
    void *payload;
    uint64_t expires_ms; /* dead at now_ms >= expires_ms */
    uint32_t hash;
    sl_token_kind kind;
    char token[SL_TOKEN_LEN + 1];
} entry;

struct sl_token_cache {
    entry **buckets;
    uint32_t nbuckets; /* power of two */
    uint32_t count;    /* entries in the table, live or not yet collected */
    uint32_t max_pending;
    uint64_t ttl_ms;
    entry *oldest, *newest;
    void (*free_fn)(void *payload);
};

/* FNV-1a: tokens are random, so a simple byte hash spreads them well, and
 * peer-chosen strings are only looked up, never inserted. */
static uint32_t hash_token(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 16777619u;
    }
    return h;
}

sl_token_cache *sl_token_cache_new(uint32_t max_pending, uint64_t ttl_ms,
                                   void (*free_fn)(void *payload))
{
    sl_token_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->buckets = calloc(INITIAL_BUCKETS, sizeof(*c->buckets));
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    c->nbuckets = INITIAL_BUCKETS;
    c->max_pending = max_pending;
    c->ttl_ms = ttl_ms;
    c->free_fn = free_fn;
    return c;
}

static void drop_payload(sl_token_cache *c, void *payload)
{
    if (c->free_fn)
        c->free_fn(payload);
}

void sl_token_cache_free(sl_token_cache *c)
{
    if (!c)
        return;
    entry *e = c->oldest;
    while (e) {
        entry *next = e->newer;
        drop_payload(c, e->payload);
        free(e);
        e = next;
    }
    free(c->buckets);
    free(c);
}

/* Unlinks e from its bucket and the age list; the caller frees it. */
static void unlink_entry(sl_token_cache *c, entry *e)
{
    entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    c->count--;
}

/* Entries are in insertion order and share one TTL, so with a
 * non-decreasing clock the expired ones are exactly a prefix of the list. */
static void collect_expired(sl_token_cache *c, uint64_t now_ms)
{
    while (c->oldest && now_ms >= c->oldest->expires_ms) {
        entry *e = c->oldest;
        unlink_entry(c, e);
        drop_payload(c, e->payload);
        free(e);
    }
}

static entry *find(const sl_token_cache *c, const char *token, size_t len, uint32_t h)
{
    for (entry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->chain)
        if (e->hash == h && memcmp(e->token, token, len) == 0 && e->token[len] == '\0')
            return e;
    return NULL;
}

/* Doubles the bucket array. Failure is harmless: chains just get longer. */
static void maybe_grow(sl_token_cache *c)
{
    if (c->count < c->nbuckets || c->nbuckets >= MAX_BUCKETS)
        return;
    uint32_t n = c->nbuckets * 2;
    entry **b = calloc(n, sizeof(*b));
    if (!b)
        return;
    for (entry *e = c->oldest; e; e = e->newer) {
        entry **head = &b[e->hash & (n - 1)];
        e->chain = *head;
        *head = e;
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = n;
}

/* getrandom may return short reads (it should not for 16 bytes, but the
 * contract allows it) and EINTR while the pool initialises. */
static int fill_random(uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return SL_ERR_SYS;
        }
        got += (size_t)r;
    }
    return SL_OK;
}

/* Draws a token not currently in the table into e->token and e->hash. */
static int new_token(const sl_token_cache *c, entry *e)
{
    for (int i = 0; i < TOKEN_TRIES; i++) {
        uint8_t raw[SL_TOKEN_BYTES];
        int rc = fill_random(raw, sizeof(raw));
        if (rc != SL_OK)
            return rc;
        sl_base64_encode(e->token, raw, sizeof(raw), 1);
        e->hash = hash_token(e->token, SL_TOKEN_LEN);
        if (!find(c, e->token, SL_TOKEN_LEN, e->hash))
            return SL_OK;
    }
    errno = EEXIST; /* a broken random source, not a full cache */
    return SL_ERR_SYS;
}

static uint64_t expiry(uint64_t now_ms, uint64_t ttl_ms)
{
    return ttl_ms > UINT64_MAX - now_ms ? UINT64_MAX : now_ms + ttl_ms;
}

int sl_token_cache_insert(sl_token_cache *c, sl_token_kind kind, void *payload, uint64_t now_ms,
                          char token_out[SL_TOKEN_LEN + 1])
{
    if (!c || !payload || !token_out || kind < SL_TOKEN_EXEC || kind > SL_TOKEN_PORTFORWARD)
        return SL_ERR_INVAL;
    collect_expired(c, now_ms);
    if (c->count >= c->max_pending)
        return SL_ERR_FULL;
    entry *e = calloc(1, sizeof(*e));
    if (!e)
        return SL_ERR_NOMEM;
    int rc = new_token(c, e);
    if (rc != SL_OK) {
        free(e);
        return rc;
    }
    e->payload = payload;
    e->kind = kind;
    e->expires_ms = expiry(now_ms, c->ttl_ms);
    e->older = c->newest;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
    entry **head = &c->buckets[e->hash & (c->nbuckets - 1)];
    e->chain = *head;
    *head = e;
    c->count++;
    maybe_grow(c);
    memcpy(token_out, e->token, SL_TOKEN_LEN + 1);
    return SL_OK;
}

void *sl_token_cache_consume(sl_token_cache *c, const char *token, size_t token_len,
                             sl_token_kind kind, uint64_t now_ms)
{
    if (!c || !token || token_len != SL_TOKEN_LEN)
        return NULL;
    entry *e = find(c, token, token_len, hash_token(token, token_len));
    if (!e)
        return NULL;
    unlink_entry(c, e);
    void *payload = e->payload;
    int ok = e->kind == kind && now_ms < e->expires_ms;
    free(e);
    if (ok)
        return payload;
    drop_payload(c, payload);
    return NULL;
}

size_t sl_token_cache_pending(sl_token_cache *c, uint64_t now_ms)
{
    if (!c)
        return 0;
    collect_expired(c, now_ms);
    return c->count;
}
