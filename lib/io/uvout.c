/* The bufq -> uv_stream_t write loop (see uvout.h). */
#include "io/uvout.h"

int sl_uvout_flush(sl_uvout *w, uv_stream_t *s, const sl_bufq *q, uv_write_cb cb)
{
    if (w->writing)
        return 1;
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
