/* A WebSocket connection and its callbacks' record (ws_rec.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sluice/error.h"
#include "ws_rec.h"

void rec_on_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    rec *r = arg;
    assert_true(r->nmsg < MAX_MSGS);
    assert_non_null(data);
    assert_true(len <= sizeof(r->data[0]));
    r->is_text[r->nmsg] = is_text;
    r->len[r->nmsg] = len;
    memcpy(r->data[r->nmsg], data, len);
    r->nmsg++;
}

void rec_on_close(void *arg, uint16_t code)
{
    rec *r = arg;
    r->nclose++;
    r->code = code;
    if (r->flush_in_cb)
        assert_int_equal(sl_ws_conn_flush(r->ws), SL_OK);
}

static void on_pong(void *arg)
{
    ((rec *)arg)->npong++;
}

static const sl_ws_callbacks CB = {.on_msg = rec_on_msg, .on_close = rec_on_close};

void rec_open(rec *r, int client, size_t max)
{
    memset(r, 0, sizeof(*r));
    sl_bufq_init(&r->out);
    r->ws =
        client ? sl_ws_conn_new_client(&CB, r, &r->out, max) : sl_ws_conn_new(&CB, r, &r->out, max);
    assert_non_null(r->ws);
    sl_ws_conn_set_on_pong(r->ws, on_pong);
}

void rec_close(rec *r)
{
    sl_ws_conn_free(r->ws);
    sl_bufq_fini(&r->out);
}

void feed(rec *r, const uint8_t *p, size_t n)
{
    int rv = sl_ws_conn_recv(r->ws, p, n);
    if (rv != SL_OK && r->rv == SL_OK)
        r->rv = rv;
}

size_t ws_frame(uint8_t *p, int fin, int op, const void *payload, size_t len, const uint8_t *key)
{
    size_t h = 0;
    p[h++] = (uint8_t)((fin ? 0x80 : 0) | op);
    uint8_t m = key ? 0x80 : 0;
    if (len < 126) {
        p[h++] = (uint8_t)(m | len);
    } else if (len < 65536) {
        p[h++] = m | 126;
        p[h++] = (uint8_t)(len >> 8);
        p[h++] = (uint8_t)len;
    } else {
        p[h++] = m | 127;
        for (int i = 7; i >= 0; i--)
            p[h++] = (uint8_t)((uint64_t)len >> (8 * i));
    }
    if (key) {
        memcpy(p + h, key, 4);
        h += 4;
    }
    for (size_t i = 0; i < len; i++)
        p[h + i] = (uint8_t)(((const uint8_t *)payload)[i] ^ (key ? key[i % 4] : 0));
    return h + len;
}
