/* Feeds the input as client bytes to a server SPDY session, in splits
 * chosen by a PRNG seeded from the first input byte (which also picks small
 * limits, and with bit 0x40 a client session that first opens three
 * streams), with an application that replies, refuses, echoes data, closes
 * on FIN, and a loop that flushes and drains the output after every piece. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/bufq.h"
#include "sluice/error.h"
#include "spdy/spdy_session.h"

#define FUZZ_MAX_SPLIT 64
#define FUZZ_HIGH_WATER 65536
#define FUZZ_MAX_PENDING (256 * 1024) /* per-stream echo bound */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_ctx {
    sl_spdy_session *s;
    size_t opened, closed;
} fuzz_ctx;

static void on_open(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin, bool uni)
{
    fuzz_ctx *f = arg;
    (void)fin;
    (void)uni;
    f->opened++;
    for (size_t i = 0; i < n; i++) /* names and values must be NUL-terminated */
        if (nv[i].name[nv[i].name_len] != 0 || nv[i].value[nv[i].value_len] != 0 ||
            nv[i].name_len == 0)
            __builtin_trap();
    if (sl_spdy_nv_find(nv, n, "reject") || id % 7 == 0)
        sl_spdy_stream_reset(f->s, id, SL_SPDY_CANCEL);
    else
        sl_spdy_stream_reply(f->s, id, n ? nv : NULL, n > 2 ? 2 : n, false);
}

static void on_data(void *arg, uint32_t id, const uint8_t *d, size_t len)
{
    fuzz_ctx *f = arg;
    if (sl_spdy_stream_consumed(f->s, id, len) != SL_OK)
        __builtin_trap(); /* the stream exists while its data is delivered */
    if (sl_spdy_stream_pending(f->s, id) < FUZZ_MAX_PENDING)
        sl_spdy_stream_send(f->s, id, d, len, false);
}

static void on_fin(void *arg, uint32_t id)
{
    fuzz_ctx *f = arg;
    sl_spdy_stream_close(f->s, id);
}

static void on_close(void *arg, uint32_t id)
{
    fuzz_ctx *f = arg;
    (void)id;
    f->closed++;
}

static const sl_spdy_callbacks callbacks = {
    .on_stream_open = on_open,
    .on_data = on_data,
    .on_fin = on_fin,
    .on_stream_close = on_close,
};

static int feed_piece(sl_spdy_session *s, const uint8_t *p, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees over-reads */
    if (!copy)
        return SL_ERR_NOMEM;
    memcpy(copy, p, n);
    int rc = sl_spdy_session_recv(s, copy, n);
    free(copy);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint32_t rng = data[0] * 2654435761u + 1;
    sl_spdy_limits lim = {0};
    if (data[0] & 0x80) /* reach the limit paths with short inputs */
        lim = (sl_spdy_limits){.max_data_payload = 4096,
                               .max_control_payload = 1024,
                               .max_header_block = 2048,
                               .max_header_pairs = 4,
                               .max_streams = 3};
    bool client = data[0] & 0x40;
    data++;
    size--;
    sl_bufq out;
    sl_bufq_init(&out);
    fuzz_ctx f = {0};
    f.s = sl_spdy_session_new(client ? SL_SPDY_CLIENT : SL_SPDY_SERVER, &callbacks, &f, &out, &lim);
    if (!f.s)
        return 0;
    for (int i = 0; client && i < 3; i++) {
        static const sl_spdy_nv h[] = {{"streamtype", 10, "data", 4}, {"port", 4, "80", 2}};
        uint32_t id;
        if (sl_spdy_stream_open(f.s, h, 2, i == 2, &id) == SL_OK) {
            f.opened++;
            sl_spdy_stream_send(f.s, id, (const uint8_t *)"ping\n", 5, i == 1);
        }
    }
    size_t max_streams = lim.max_streams ? lim.max_streams : SL_SPDY_DEFAULT_MAX_STREAMS;
    size_t off = 0;
    while (off < size) {
        rng = rng * 1103515245u + 12345u;
        size_t n = 1 + (rng >> 16) % FUZZ_MAX_SPLIT;
        if (n > size - off)
            n = size - off;
        int rc = feed_piece(f.s, data + off, n);
        off += n;
        if (sl_spdy_session_num_streams(f.s) > max_streams + 3)
            __builtin_trap();
        sl_spdy_session_flush(f.s, FUZZ_HIGH_WATER);
        sl_bufq_consume(&out, sl_bufq_len(&out)); /* the socket took it all */
        if (rc < 0) {
            if (!sl_err_is_fatal(rc) && rc != SL_ERR_NOMEM)
                __builtin_trap();
            if (sl_spdy_session_want_read(f.s))
                __builtin_trap();
            break;
        }
    }
    sl_spdy_goaway(f.s, SL_SPDY_GOAWAY_OK);
    sl_spdy_session_flush(f.s, FUZZ_HIGH_WATER);
    if (f.closed > f.opened) /* each stream closes once, after it opened */
        __builtin_trap();
    sl_spdy_session_free(f.s);
    sl_bufq_fini(&out);
    return 0;
}
