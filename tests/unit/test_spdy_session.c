/* sl_spdy_session on the wire: byte-exact against spdystream's golden
 * frames, the same answer for every split of a client's input, and the
 * callback and API contract. Bad input: test_spdy_bad.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "util/bufq.h"
#include "sluice/error.h"
#include "spdy/spdy_session.h"
#include "spdy_app.h"
#include "spdy_golden.h"

/* ---- golden wire --------------------------------------------------------------- */

/* A SYN_STREAM whose block continues spdystream's client stream. */
static void syn_stored(app *a, uint32_t id, const char *type)
{
    uint8_t raw[64], blk[80];
    size_t n = nv_raw(raw, "streamtype", type, NULL);
    size_t bl = stored_block(raw, n, blk);
    assert_int_equal(sl_spdy_write_syn_stream(&a->q, id, 0, 0, 0, blk, bl), SL_OK);
    assert_int_equal(feedq(a, &a->q), SL_OK);
}

static void golden_server_wire(void **state)
{
    (void)state;
    app *a = app_new(SL_SPDY_SERVER, NULL);
    assert_int_equal(feed(a, syn_stream_1, sizeof(syn_stream_1)), SL_OK);
    assert_string_equal(events(a), "open 1 streamtype=error;");
    uint8_t reply_1[sizeof(syn_reply_1)];
    our_zlib_header(reply_1, syn_reply_1, sizeof(syn_reply_1), 12);
    expect_out(a, reply_1, sizeof(reply_1)); /* byte-exact first block */
    assert_int_equal(feed(a, syn_stream_3, sizeof(syn_stream_3)), SL_OK);
    assert_string_equal(events(a), "open 3 streamtype=stdout;");
    assert_string_equal(wire(a), "SYN_REPLY 3 f0|"); /* later blocks: meaning only */

    assert_int_equal(feed(a, ping_1, sizeof(ping_1)), SL_OK);
    expect_out(a, ping_1, sizeof(ping_1)); /* odd PING echoed identically */

    assert_int_equal(sl_spdy_stream_send(a->s, 3, (const uint8_t *)"hi\n", 3, false), SL_OK);
    assert_int_equal(sl_spdy_stream_pending(a->s, 3), 3);
    assert_int_equal(sl_spdy_session_flush(a->s, 65536), SL_OK);
    expect_out(a, data_hi, sizeof(data_hi));
    assert_int_equal(sl_spdy_stream_close(a->s, 3), SL_OK);
    assert_int_equal(sl_spdy_session_flush(a->s, 65536), SL_OK);
    expect_out(a, data_fin, sizeof(data_fin));
    assert_int_equal(feed(a, data_fin, sizeof(data_fin)), SL_OK); /* client FIN on 3 */
    assert_string_equal(events(a), "fin 3;close 3;");

    syn_stored(a, 5, "stderr");
    assert_string_equal(events(a), "open 5 streamtype=stderr;");
    assert_string_equal(wire(a), "SYN_REPLY 5 f0|");
    assert_int_equal(sl_spdy_stream_reset(a->s, 5, SL_SPDY_CANCEL), SL_OK);
    assert_string_equal(events(a), "close 5;");
    expect_out(a, rst_5, sizeof(rst_5));

    syn_stored(a, 7, "resize");
    assert_string_equal(wire(a), "SYN_REPLY 7 f0|");
    assert_int_equal(sl_spdy_session_last_good_id(a->s), 7);
    assert_int_equal(sl_spdy_goaway(a->s, SL_SPDY_GOAWAY_OK), SL_OK);
    expect_out(a, goaway_7, sizeof(goaway_7));
    assert_int_equal(sl_spdy_goaway(a->s, SL_SPDY_GOAWAY_OK), SL_ERR_STATE);
    app_free(a);
}

static void golden_client_wire(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL);
    const sl_spdy_nv h = {"streamType", 10, "error", 5};
    uint32_t id;
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_OK);
    assert_int_equal(id, 1);
    size_t len = sl_bufq_len(&c->out);
    uint8_t *p = malloc(len);
    assert_non_null(p);
    sl_bufq_copyout(&c->out, p, len);
    assert_string_equal(wire(c), "SYN_STREAM 1 f0 streamtype=error|"); /* lowercase */
    /* Frame header and fixed fields as spdystream's; the compressed bytes
     * after the zlib header differ (Go's deflater picks other matches). */
    assert_memory_equal(p, syn_stream_1, 5);
    assert_int_equal(p[5] << 16 | p[6] << 8 | p[7], len - 8);
    uint8_t stream_1[sizeof(syn_stream_1)];
    our_zlib_header(stream_1, syn_stream_1, sizeof(syn_stream_1), 18);
    assert_memory_equal(p + 8, stream_1 + 8, 10 + 6);
    app *s = app_new(SL_SPDY_SERVER, NULL);
    assert_int_equal(feed(s, p, len), SL_OK);
    assert_string_equal(events(s), "open 1 streamtype=error;");
    free(p);
    app_free(s);

    const sl_spdy_nv h3 = {"streamtype", 10, "stdout", 6};
    assert_int_equal(sl_spdy_stream_open(c->s, &h3, 1, false, &id), SL_OK);
    assert_int_equal(id, 3);
    wire(c);
    /* data queued before the SYN_REPLY waits for it */
    assert_int_equal(sl_spdy_stream_send(c->s, 3, (const uint8_t *)"hi\n", 3, true), SL_OK);
    assert_int_equal(sl_spdy_session_flush(c->s, 65536), SL_OK);
    assert_false(sl_spdy_session_want_write(c->s));
    assert_int_equal(sl_bufq_len(&c->out), 0);
    assert_int_equal(feed(c, syn_reply_1, sizeof(syn_reply_1)), SL_OK);
    assert_int_equal(feed(c, syn_reply_3, sizeof(syn_reply_3)), SL_OK);
    assert_string_equal(events(c), "reply 1;reply 3;");
    assert_true(sl_spdy_session_want_write(c->s));
    assert_int_equal(sl_spdy_session_flush(c->s, 65536), SL_OK);
    uint8_t both[sizeof(data_hi) + sizeof(data_fin)];
    memcpy(both, data_hi, sizeof(data_hi));
    memcpy(both + sizeof(data_hi), data_fin, sizeof(data_fin));
    expect_out(c, both, sizeof(both));

    uint32_t pid;
    assert_int_equal(sl_spdy_ping(c->s, &pid), SL_OK);
    assert_int_equal(pid, 1);
    expect_out(c, ping_1, sizeof(ping_1));
    assert_int_equal(feed(c, ping_1, sizeof(ping_1)), SL_OK);
    assert_string_equal(events(c), "pong 1;");
    assert_int_equal(sl_bufq_len(&c->out), 0); /* our own parity: not echoed */

    assert_int_equal(feed(c, goaway_7, sizeof(goaway_7)), SL_OK);
    assert_string_equal(events(c), "goaway 7 0;");
    assert_int_equal(sl_spdy_session_num_streams(c->s), 2);
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_ERR_CLOSED);
    app_free(c);
}

/* ---- every split --------------------------------------------------------------- */

static size_t client_stream(uint8_t *buf)
{
    sl_bufq q;
    sl_bufq_init(&q);
    sl_bufq_append(&q, syn_stream_1, sizeof(syn_stream_1));
    sl_bufq_append(&q, syn_stream_3, sizeof(syn_stream_3));
    sl_bufq_append(&q, ping_1, sizeof(ping_1));
    sl_spdy_write_data(&q, 1, 0, (const uint8_t *)"hello", 5);
    sl_bufq_append(&q, data_hi, sizeof(data_hi));
    sl_bufq_append(&q, data_fin, sizeof(data_fin));
    const uint8_t noop[] = {0x80, 0x03, 0x00, 0x05, 0x00, 0x00, 0x00, 0x02, 9, 9};
    sl_bufq_append(&q, noop, sizeof(noop));
    uint8_t raw[64], blk[80];
    size_t bl = stored_block(raw, nv_raw(raw, "streamtype", "stderr", NULL), blk);
    sl_spdy_write_syn_stream(&q, 5, 0, 0, 0, blk, bl);
    sl_spdy_write_rst_stream(&q, 5, SL_SPDY_CANCEL);
    sl_spdy_write_data(&q, 9, 0, (const uint8_t *)"?", 1);
    sl_spdy_write_goaway(&q, 0, 0);
    size_t len = sl_bufq_copyout(&q, buf, 1024);
    assert_int_equal(len, sl_bufq_len(&q));
    sl_bufq_fini(&q);
    return len;
}

static void run_split(const uint8_t *p, size_t len, size_t step, size_t cut, char *ev, char *out)
{
    app *a = app_new(SL_SPDY_SERVER, NULL);
    a->auto_consume = true;
    if (step) {
        for (size_t off = 0; off < len; off += step)
            assert_int_equal(feed(a, p + off, off + step > len ? len - off : step), SL_OK);
    } else {
        assert_int_equal(feed(a, p, cut), SL_OK);
        assert_int_equal(feed(a, p + cut, len - cut), SL_OK);
    }
    strcpy(ev, events(a));
    strcpy(out, wire(a));
    char buf[16];
    rx_take(a, 1, buf, sizeof(buf));
    assert_string_equal(buf, "hello");
    rx_take(a, 3, buf, sizeof(buf));
    assert_string_equal(buf, "hi\n");
    app_free(a);
}

static void every_split(void **state)
{
    (void)state;
    static uint8_t p[1024];
    static char ev0[4096], out0[4096], ev[4096], out[4096];
    size_t len = client_stream(p);
    run_split(p, len, 0, len, ev0, out0);
    assert_string_equal(ev0, "open 1 streamtype=error;open 3 streamtype=stdout;fin 3;"
                             "open 5 streamtype=stderr;reset 5 5;close 5;goaway 0 0;");
    assert_string_equal(out0, "SYN_REPLY 1 f0|SYN_REPLY 3 f0|PING 1|SYN_REPLY 5 f0|RST 9 2|");
    for (size_t cut = 0; cut <= len; cut++) {
        run_split(p, len, 0, cut, ev, out);
        assert_string_equal(ev, ev0);
        assert_string_equal(out, out0);
    }
    for (size_t step = 1; step <= 3; step++) {
        run_split(p, len, step, 0, ev, out);
        assert_string_equal(ev, ev0);
        assert_string_equal(out, out0);
    }
}

static void open_callbacks_and_flags(void **state)
{
    (void)state;
    sl_spdy_callbacks none = {0};
    sl_bufq out;
    sl_bufq_init(&out);
    sl_spdy_session *s = sl_spdy_session_new(SL_SPDY_SERVER, &none, NULL, &out, NULL);
    assert_non_null(s);
    assert_int_equal(sl_spdy_session_recv(s, syn_stream_1, sizeof(syn_stream_1)), SL_OK);
    const uint8_t refused[] = {0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 3};
    assert_int_equal(sl_bufq_len(&out), sizeof(refused));
    uint8_t got[sizeof(refused)];
    sl_bufq_copyout(&out, got, sizeof(got));
    assert_memory_equal(got, refused, sizeof(refused));
    sl_spdy_session_free(s);
    sl_bufq_fini(&out);

    app *a = server_with_stream(NULL);
    uint8_t raw[64];
    syn(&a->q, &a->t, 3, SL_SPDY_FLAG_FIN | SL_SPDY_FLAG_UNIDIRECTIONAL, raw, nv_raw(raw, NULL));
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_string_equal(events(a), "open 3 fin uni;close 3;");
    assert_string_equal(wire(a), "SYN_REPLY 3 f0|");
    assert_int_equal(sl_spdy_session_num_streams(a->s), 1);
    app_free(a);
}

static void api_errors(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    const uint8_t x = 'x';
    assert_int_equal(sl_spdy_stream_send(a->s, 3, &x, 1, false), SL_ERR_NOTFOUND);
    assert_int_equal(sl_spdy_stream_reply(a->s, 1, NULL, 0, false), SL_ERR_STATE);
    assert_int_equal(sl_spdy_stream_reply(a->s, 3, NULL, 0, false), SL_ERR_NOTFOUND);
    assert_int_equal(sl_spdy_stream_reset(a->s, 1, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_stream_reset(a->s, 3, SL_SPDY_CANCEL), SL_ERR_NOTFOUND);
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 1), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_stream_pending(a->s, 3), 0);
    const sl_spdy_nv dup[] = {{"a", 1, "1", 1}, {"A", 1, "2", 1}};
    a->auto_reply = false;
    syn_type(&a->q, &a->t, 3, "data");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    assert_int_equal(sl_spdy_stream_send(a->s, 3, &x, 1, false), SL_ERR_STATE); /* no reply */
    assert_int_equal(sl_spdy_stream_reply(a->s, 3, dup, 2, false), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_stream_reply(a->s, 3, NULL, 0, true), SL_OK);
    assert_int_equal(sl_spdy_stream_send(a->s, 3, &x, 1, false), SL_ERR_STATE); /* FIN sent */
    assert_int_equal(sl_spdy_stream_close(a->s, 1), SL_OK);
    assert_int_equal(sl_spdy_stream_close(a->s, 1), SL_ERR_STATE);
    assert_string_equal(wire(a), "SYN_REPLY 3 f1|");
    /* a server may open streams too: even ids */
    uint32_t id;
    const sl_spdy_nv h = {"k", 1, "v", 1};
    assert_int_equal(sl_spdy_stream_open(a->s, &h, 1, true, &id), SL_OK);
    assert_int_equal(id, 2);
    assert_string_equal(wire(a), "SYN_STREAM 2 f1 k=v|");
    app_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_server_wire), cmocka_unit_test(golden_client_wire),
        cmocka_unit_test(every_split),        cmocka_unit_test(open_callbacks_and_flags),
        cmocka_unit_test(api_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
