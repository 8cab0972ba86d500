/* Feeds the input as client bytes to a server connection, in splits chosen
 * by a PRNG seeded from the first input byte; echoes each message back,
 * flushes and drains the output as a server loop would, then frees. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/bufq.h"
#include "ws/ws_channel.h"
#include "ws/ws_conn.h"

#define FUZZ_MAX_MESSAGE 65536
#define FUZZ_MAX_SPLIT 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_ctx {
    sl_ws_conn *ws;
    int closes;
} fuzz_ctx;

static void on_msg(void *arg, int is_text, uint8_t *msg, size_t len)
{
    fuzz_ctx *f = arg;
    uint8_t ch, *d;
    size_t n;
    /* decode a copy: both modes must cope with any payload */
    uint8_t *copy = malloc(len ? len : 1);
    if (copy) {
        memcpy(copy, msg, len);
        sl_ws_channel_decode(copy, len, 0, &ch, &d, &n);
        memcpy(copy, msg, len);
        sl_ws_channel_decode(copy, len, 1, &ch, &d, &n);
        free(copy);
    }
    sl_ws_conn_send_msg(f->ws, is_text ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME, msg, len);
}

static void on_close(void *arg, uint16_t code)
{
    fuzz_ctx *f = arg;
    (void)code;
    if (++f->closes > 1)
        __builtin_trap(); /* reported at most once */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint32_t rng = data[0] * 2654435761u + 1;
    data++;
    size--;
    sl_bufq out;
    sl_bufq_init(&out);
    fuzz_ctx f = {NULL, 0};
    sl_ws_callbacks cb = {on_msg, on_close};
    f.ws = sl_ws_conn_new(&cb, &f, &out, FUZZ_MAX_MESSAGE);
    if (!f.ws)
        return 0;
    size_t off = 0;
    while (off < size) {
        rng = rng * 1103515245u + 12345u;
        size_t n = 1 + (rng >> 16) % FUZZ_MAX_SPLIT;
        if (n > size - off)
            n = size - off;
        int rv = sl_ws_conn_recv(f.ws, data + off, n);
        off += n;
        sl_ws_conn_flush(f.ws);
        sl_bufq_consume(&out, sl_bufq_len(&out));
        if (rv < 0 && (rng & 1))
            break; /* a caller may stop here or keep feeding */
    }
    sl_ws_conn_close(f.ws, 1000, "bye");
    sl_ws_conn_flush(f.ws);
    sl_ws_conn_free(f.ws);
    sl_bufq_fini(&out);
    return 0;
}
