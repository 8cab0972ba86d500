#include "util/bufq.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

/* ---- per-thread cache of default-size chunks ---- */

/* Under AddressSanitizer every chunk is freed, so a use after consume is
 * still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_MAX 0u
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_MAX 0u
#endif
#endif
#ifndef CACHE_MAX
#define CACHE_MAX SL_BUFQ_CACHE_CHUNKS
#endif

static _Thread_local sl_bufq_chunk *cache;
static _Thread_local unsigned ncache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static bool cache_key_ok;

/* Thread exit: the cached chunks go with the thread. */
static void cache_drop(void *unused)
{
    (void)unused;
    while (cache) {
        sl_bufq_chunk *c = cache;
        cache = c->next;
        free(c);
    }
    ncache = 0;
}

static void cache_key_init(void)
{
    cache_key_ok = pthread_key_create(&cache_key, cache_drop) == 0;
}

static void chunk_free(sl_bufq_chunk *c)
{
    if (c->cap != SL_BUFQ_CHUNK || ncache + 1 > CACHE_MAX) { /* not `>=`: 0 under ASan */
        free(c);
        return;
    }
    if (!cache) { /* first chunk of this thread: arrange the exit cleanup */
        pthread_once(&cache_once, cache_key_init);
        if (!cache_key_ok || pthread_setspecific(cache_key, &cache) != 0) {
            free(c);
            return;
        }
    }
    c->next = cache;
    cache = c;
    ncache++;
}

void sl_bufq_init(sl_bufq *q)
{
    q->head = q->tail = NULL;
    q->len = 0;
}

void sl_bufq_fini(sl_bufq *q)
{
    sl_bufq_chunk *c = q->head;
    while (c) {
        sl_bufq_chunk *n = c->next;
        chunk_free(c);
        c = n;
    }
    sl_bufq_init(q);
}

static sl_bufq_chunk *chunk_new(size_t cap)
{
    sl_bufq_chunk *c;
    if (cap == SL_BUFQ_CHUNK && cache) {
        c = cache;
        cache = c->next;
        ncache--;
    } else {
        c = malloc(sizeof(*c) + cap);
    }
    if (!c)
        return NULL;
    c->next = NULL;
    c->start = c->end = 0;
    c->cap = cap;
    return c;
}

uint8_t *sl_bufq_reserve(sl_bufq *q, size_t min, size_t *avail)
{
    sl_bufq_chunk *t = q->tail;
    if (!t || t->cap - t->end < min) {
        sl_bufq_chunk *c = chunk_new(min > SL_BUFQ_CHUNK ? min : SL_BUFQ_CHUNK);
        if (!c)
            return NULL;
        if (t)
            t->next = c;
        else
            q->head = c;
        q->tail = t = c;
    }
    *avail = t->cap - t->end;
    return t->data + t->end;
}

void sl_bufq_commit(sl_bufq *q, size_t n)
{
    q->tail->end += n;
    q->len += n;
}

int sl_bufq_append(sl_bufq *q, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        size_t avail;
        uint8_t *dst = sl_bufq_reserve(q, 1, &avail);
        if (!dst)
            return SL_ERR_NOMEM;
        size_t n = len < avail ? len : avail;
        memcpy(dst, p, n);
        sl_bufq_commit(q, n);
        p += n;
        len -= n;
    }
    return SL_OK;
}

int sl_bufq_appendf(sl_bufq *q, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return SL_ERR_INVAL;
    size_t avail;
    uint8_t *dst = sl_bufq_reserve(q, (size_t)n + 1, &avail);
    if (!dst)
        return SL_ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf((char *)dst, avail, fmt, ap);
    va_end(ap);
    sl_bufq_commit(q, (size_t)n);
    return SL_OK;
}

int sl_bufq_peek(const sl_bufq *q, struct iovec *iov, int max)
{
    int n = 0;
    for (const sl_bufq_chunk *c = q->head; c && n < max; c = c->next) {
        if (c->end == c->start)
            continue;
        iov[n].iov_base = (void *)(c->data + c->start);
        iov[n].iov_len = c->end - c->start;
        n++;
    }
    return n;
}

size_t sl_bufq_copyout(const sl_bufq *q, void *dst, size_t len)
{
    uint8_t *d = dst;
    size_t done = 0;
    for (const sl_bufq_chunk *c = q->head; c && done < len; c = c->next) {
        size_t n = c->end - c->start;
        if (n > len - done)
            n = len - done;
        memcpy(d + done, c->data + c->start, n);
        done += n;
    }
    return done;
}

void sl_bufq_consume(sl_bufq *q, size_t n)
{
    q->len -= n;
    while (n > 0 && q->head) {
        sl_bufq_chunk *c = q->head;
        size_t have = c->end - c->start;
        if (n < have) {
            c->start += n;
            return;
        }
        n -= have;
        q->head = c->next;
        if (!q->head)
            q->tail = NULL;
        chunk_free(c);
    }
}
