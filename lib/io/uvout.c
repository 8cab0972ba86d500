/* The bufq -> uv_stream_t write loop (see uvout.h). */
#include "io/uvout.h"

/* Bytes queued past the write in flight, written at once when that write
 * already left in full (only its callback is due, a round of the loop
 * later) and they are few: a session's last frames (a status, a FIN, a
 * GOAWAY) otherwise wait behind whatever else that round does. Returns
 * how many left; they count as part of the write in flight. */
static size_t write_more_now(const sl_uvout *w, uv_stream_t *s, const sl_bufq *q)
{
    size_t more = sl_bufq_len(q) - w->writing;
    if (more == 0 || more > SL_UVOUT_NOW_MAX || uv_stream_get_write_queue_size(s) != 0)
        return 0;
    struct iovec iov[SL_UVOUT_IOV_MAX];
    uv_buf_t bufs[SL_UVOUT_IOV_MAX];
    int n = sl_bufq_peek(q, iov, SL_UVOUT_IOV_MAX), nb = 0;
    size_t skip = w->writing;
    for (int i = 0; i < n; i++) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        bufs[nb++] = uv_buf_init((char *)iov[i].iov_base + skip, (unsigned)(iov[i].iov_len - skip));
        skip = 0;
    }
    int rc = nb > 0 ? uv_try_write(s, bufs, (unsigned)nb) : 0;
    return rc > 0 ? (size_t)rc : 0; /* an error shows in the write in flight or the next */
}

int sl_uvout_flush(sl_uvout *w, uv_stream_t *s, const sl_bufq *q, uv_write_cb cb)
{
    if (w->writing) {
        w->writing += write_more_now(w, s, q);
        return 1;
    }
    if (sl_bufq_len(q) == 0)
        return 0;
    uv_buf_t bufs[SL_UVOUT_IOV_MAX];
    struct iovec iov[SL_UVOUT_IOV_MAX];
    int n = sl_bufq_peek(q, iov, SL_UVOUT_IOV_MAX);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        bufs[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
        total += iov[i].iov_len;
    }
    int rc = uv_write(&w->req, s, bufs, (unsigned)n, cb);
    if (rc < 0)
        return rc;
    w->writing = total;
    return 1;
}

size_t sl_uvout_done(sl_uvout *w, sl_bufq *q, int status)
{
    size_t n = w->writing;
    w->writing = 0;
    if (status >= 0)
        sl_bufq_consume(q, n);
    return n;
}
