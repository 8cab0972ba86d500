/* A FIFO byte queue made of chunks, used for every outbound byte stream.
 *
 * Writers append (copying) or reserve tail space and commit what they wrote;
 * the I/O layer peeks iovecs, writes them, and consumes what left. The queue
 * itself has no bound: callers check sl_bufq_len() against their
 * high-water mark and stop producing (back-pressure). */
#ifndef SL_BUFQ_H
#define SL_BUFQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Default chunk payload size: two full SPDY DATA frames (32 KiB + an
 * 8-byte header each) fit, and a 64 KiB read is one or two chunks. */
#define SL_BUFQ_CHUNK (64u * 1024 + 64u)
/* Emptied default-size chunks kept per thread for reuse (at most this many;
 * freed at thread exit). A busy stream would otherwise malloc and free a
 * chunk per frame, and the heap would return and re-fault the pages. */
#define SL_BUFQ_CACHE_CHUNKS 16u

typedef struct sl_bufq_chunk {
    struct sl_bufq_chunk *next;
    size_t start, end, cap; /* valid bytes are data[start, end) */
    uint8_t data[];
} sl_bufq_chunk;

typedef struct sl_bufq {
    sl_bufq_chunk *head, *tail;
    size_t len;
} sl_bufq;

void sl_bufq_init(sl_bufq *q);
void sl_bufq_fini(sl_bufq *q);
static inline size_t sl_bufq_len(const sl_bufq *q)
{
    return q->len;
}

/* Copies len bytes to the tail. Returns SL_OK or SL_ERR_NOMEM. */
int sl_bufq_append(sl_bufq *q, const void *data, size_t len);
/* printf-style append. Returns SL_OK or SL_ERR_NOMEM. */
int sl_bufq_appendf(sl_bufq *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Returns a pointer to at least `min` contiguous writable bytes at the tail
 * (*avail gets the real amount) or NULL on ENOMEM. Nothing is queued until
 * sl_bufq_commit(q, n) with n <= *avail. */
uint8_t *sl_bufq_reserve(sl_bufq *q, size_t min, size_t *avail);
void sl_bufq_commit(sl_bufq *q, size_t n);

/* Fills up to max iovecs with the queued bytes, in order; returns how many. */
int sl_bufq_peek(const sl_bufq *q, struct iovec *iov, int max);
/* Copies up to len bytes from the head into dst without consuming them. */
size_t sl_bufq_copyout(const sl_bufq *q, void *dst, size_t len);
/* Drops n bytes (n <= len) from the head. */
void sl_bufq_consume(sl_bufq *q, size_t n);

#endif
