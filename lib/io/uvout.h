/* Writes an sl_bufq to a libuv stream: at most one uv_write in flight,
 * zero-copy (the iovecs point into the queue's chunks), and the bytes are
 * consumed only when that write completes. A few bytes queued while the
 * write in flight has already left in full go out at once (uv_try_write)
 * and complete with it, so a short message never waits a round of the
 * loop for the previous one's callback. The owner keeps its own policy
 * (congestion, shutdown, errors); this is only the write loop. */
#ifndef SL_UVOUT_H
#define SL_UVOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "util/bufq.h"

#define SL_UVOUT_IOV_MAX 64 /* chunks handed to one uv_write */
/* At most this many bytes are written at once behind a write in flight:
 * control frames and short output, not bulk data (one write per round). */
#define SL_UVOUT_NOW_MAX 1024

typedef struct sl_uvout {
    uv_write_t req; /* req.data belongs to the owner (set it once) */
    size_t writing; /* bytes handed to the write in flight; 0 when idle */
} sl_uvout;

static inline bool sl_uvout_busy(const sl_uvout *w)
{
    return w->writing != 0;
}

/* Starts writing q's queued bytes to s unless a write is already in flight
 * (then writes a few more at once, see above). Returns 1 while a write is
 * in flight, 0 when idle because q is empty, or
 * a negative libuv error from uv_write. */
int sl_uvout_flush(sl_uvout *w, uv_stream_t *s, const sl_bufq *q, uv_write_cb cb);

/* For the write callback: ends the write in flight and, when status >= 0,
 * drops the bytes it carried from q. Returns that byte count. */
size_t sl_uvout_done(sl_uvout *w, sl_bufq *q, int status);

#endif
