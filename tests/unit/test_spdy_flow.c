/* Flow control of sl_spdy_session: the peer's windows, our credit, the
 * announced window (sl_spdy_session_announce_window) end to end between a
 * client and a server session in memory, and fair flushing. */
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

/* ---- client and server sessions in memory ---------------------------------------- */

static uint32_t open_type(app *c, app *s, const char *type)
{
    const sl_spdy_nv h = {"streamtype", 10, type, strlen(type)};
    uint32_t id;
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_OK);
    pump(c, s, 65536);
    return id;
}

static void in_memory_exchange(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL), *s = app_new(SL_SPDY_SERVER, NULL);
    char buf[64];
    assert_int_equal(open_type(c, s, "error"), 1);
    assert_int_equal(open_type(c, s, "stdin"), 3);
    assert_int_equal(open_type(c, s, "stdout"), 5);
    assert_string_equal(events(s), "open 1 streamtype=error;open 3 streamtype=stdin;"
                                   "open 5 streamtype=stdout;");
    assert_string_equal(events(c), "reply 1;reply 3;reply 5;");

    assert_int_equal(sl_spdy_stream_close(c->s, 1), SL_OK); /* like port-forward's error stream */
    assert_int_equal(sl_spdy_stream_send(c->s, 3, (const uint8_t *)"input", 5, true), SL_OK);
    assert_int_equal(sl_spdy_stream_send(s->s, 5, (const uint8_t *)"output", 6, true), SL_OK);
    pump(c, s, 65536);
    assert_string_equal(events(s), "fin 1;fin 3;");
    assert_string_equal(events(c), "fin 5;");
    rx_take(s, 3, buf, sizeof(buf));
    assert_string_equal(buf, "input");
    rx_take(c, 5, buf, sizeof(buf));
    assert_string_equal(buf, "output");

    assert_int_equal(sl_spdy_stream_send(s->s, 1, (const uint8_t *)"{}", 2, true), SL_OK);
    assert_int_equal(sl_spdy_stream_close(s->s, 3), SL_OK);
    assert_int_equal(sl_spdy_stream_close(c->s, 5), SL_OK);
    pump(c, s, 65536);
    assert_string_equal(events(s), "close 1;close 3;fin 5;close 5;");
    assert_string_equal(events(c), "close 5;fin 1;close 1;fin 3;close 3;");
    rx_take(c, 1, buf, sizeof(buf));
    assert_string_equal(buf, "{}");
    assert_int_equal(sl_spdy_session_num_streams(c->s), 0);
    assert_int_equal(sl_spdy_session_num_streams(s->s), 0);

    /* the server decides later: refuses stream 7 after the callback */
    s->auto_reply = false;
    assert_int_equal(open_type(c, s, "data"), 7);
    assert_string_equal(events(s), "open 7 streamtype=data;");
    assert_int_equal(sl_spdy_stream_reset(s->s, 7, SL_SPDY_CANCEL), SL_OK);
    pump(c, s, 65536);
    assert_string_equal(events(s), "close 7;");
    assert_string_equal(events(c), "reset 7 5;close 7;");

    /* pings both ways */
    assert_int_equal(sl_spdy_ping(c->s, NULL), SL_OK);
    uint32_t pid;
    assert_int_equal(sl_spdy_ping(s->s, &pid), SL_OK);
    assert_int_equal(pid, 2);
    pump(c, s, 65536);
    assert_string_equal(events(c), "pong 1;");
    assert_string_equal(events(s), "pong 2;");

    /* GOAWAY: stream 9 was seen by the server, 11 crosses the GOAWAY */
    s->auto_reply = true;
    assert_int_equal(open_type(c, s, "data"), 9);
    events(c);
    events(s);
    const sl_spdy_nv h = {"streamtype", 10, "data", 4};
    uint32_t id;
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_OK);
    assert_int_equal(sl_spdy_goaway(s->s, SL_SPDY_GOAWAY_OK), SL_OK);
    pump(c, s, 65536);
    assert_string_equal(events(c), "goaway 9 0;reset 11 3;close 11;");
    assert_string_equal(events(s), ""); /* 11 refused with RST(REFUSED_STREAM) */
    assert_int_equal(sl_spdy_session_num_streams(c->s), 1);
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_ERR_CLOSED);
    app_free(c);
    app_free(s);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static void bulk_both_ways(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL), *s = app_new(SL_SPDY_SERVER, NULL);
    c->auto_consume = s->auto_consume = true;
    uint32_t in = open_type(c, s, "stdin"), outid = open_type(c, s, "stdout");
    const size_t n = 1u << 20;
    uint8_t *up = malloc(n), *down = malloc(n), *got = malloc(n);
    assert_true(up && down && got);
    fill(up, n, 1);
    fill(down, n, 2);
    assert_int_equal(sl_spdy_stream_send(c->s, in, up, n, true), SL_OK);
    assert_int_equal(sl_spdy_stream_send(s->s, outid, down, n, true), SL_OK);
    pump(c, s, 16384);
    assert_int_equal(sl_bufq_len(&s->rx[in]), n);
    sl_bufq_copyout(&s->rx[in], got, n);
    assert_memory_equal(got, up, n);
    assert_int_equal(sl_bufq_len(&c->rx[outid]), n);
    sl_bufq_copyout(&c->rx[outid], got, n);
    assert_memory_equal(got, down, n);
    /* neither side uses flow control: no WINDOW_UPDATE was ever needed */
    assert_false(sl_spdy_session_peer_flow_control(c->s));
    assert_false(sl_spdy_session_peer_flow_control(s->s));
    free(up);
    free(down);
    free(got);
    app_free(c);
    app_free(s);
}

/* ---- the peer's windows, our credit ------------------------------------------------ */

static void feed_settings_iws(app *a, uint32_t value, int want)
{
    const uint32_t e[1][3] = {{0, SL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE, value}};
    assert_int_equal(sl_spdy_write_settings(&a->q, 0, e, 1), SL_OK);
    assert_int_equal(feedq(a, &a->q), want);
}

static void feed_wu(app *a, uint32_t id, uint32_t delta, int want)
{
    uint8_t f[16] = {0x80, 3, 0, 9, 0, 0, 0, 8};
    f[8] = (uint8_t)(id >> 24), f[9] = (uint8_t)(id >> 16), f[10] = (uint8_t)(id >> 8);
    f[11] = (uint8_t)id;
    f[12] = (uint8_t)(delta >> 24), f[13] = (uint8_t)(delta >> 16);
    f[14] = (uint8_t)(delta >> 8), f[15] = (uint8_t)delta;
    assert_int_equal(feed(a, f, sizeof(f)), want);
}

static void send_zeros(app *a, uint32_t id, size_t n)
{
    uint8_t *p = calloc(1, n);
    assert_non_null(p);
    assert_int_equal(sl_spdy_stream_send(a->s, id, p, n, false), SL_OK);
    free(p);
}

static void fc_peer_window(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    feed_settings_iws(a, 1000, SL_OK);
    assert_true(sl_spdy_session_peer_flow_control(a->s));
    assert_string_equal(wire(a), "SETTINGS 7=65536|"); /* answered once, with our window */
    send_zeros(a, 1, 5000);
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "DATA 1 f0 1000|");
    assert_int_equal(sl_spdy_stream_pending(a->s, 1), 4000);
    assert_false(sl_spdy_session_want_write(a->s));
    feed_wu(a, 1, 1500, SL_OK);
    assert_true(sl_spdy_session_want_write(a->s));
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "DATA 1 f0 1500|");

    /* session window (3.1): enforced once the peer updates stream 0 */
    feed_settings_iws(a, 1000000, SL_OK);
    feed_wu(a, 0, 1, SL_OK); /* session window: 65536 - 2500 + 1 */
    send_zeros(a, 1, 100000);
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "DATA 1 f0 32768|DATA 1 f0 30269|");
    assert_int_equal(sl_spdy_stream_pending(a->s, 1), 102500 - 63037);
    feed_wu(a, 0, 50000, SL_OK);
    assert_int_equal(sl_spdy_stream_close(a->s, 1), SL_OK);
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "DATA 1 f0 32768|DATA 1 f0 6695|DATA 1 f1 0|");

    /* a smaller INITIAL_WINDOW_SIZE can make a window negative */
    syn_type(&a->q, &a->t, 3, "data");
    assert_int_equal(feedq(a, &a->q), SL_OK);
    wire(a);
    feed_settings_iws(a, 0, SL_OK);
    feed_wu(a, 0, 100, SL_OK);
    send_zeros(a, 3, 10);
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "");
    feed_wu(a, 3, 10, SL_OK);
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "DATA 3 f0 10|");
    app_free(a);
}

static void no_fc_peer_never_blocks(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    send_zeros(a, 1, 1u << 20);
    assert_int_equal(sl_spdy_session_flush(a->s, SIZE_MAX), SL_OK);
    assert_int_equal(sl_spdy_stream_pending(a->s, 1), 0);
    assert_int_equal(sl_bufq_len(&a->out), (1u << 20) + 32 * 8);
    wire(a);
    /* far beyond 64 KiB unconsumed: no FLOW_CONTROL_ERROR, no credit sent */
    for (int i = 0; i < 7; i++)
        feed_data(a, 1, 0, 30000, SL_OK);
    assert_int_equal(sl_bufq_len(&a->rx[1]), 210000);
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 210000), SL_OK);
    assert_string_equal(wire(a), "");
    assert_string_equal(events(a), "");
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 1), SL_ERR_INVAL);
    app_free(a);
}

static void fc_inbound_credit(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    feed_settings_iws(a, SL_SPDY_INITIAL_WINDOW, SL_OK); /* shows flow control */
    assert_string_equal(wire(a), "SETTINGS 7=65536|");
    feed_data(a, 1, 0, 20000, SL_OK);
    assert_string_equal(wire(a), ""); /* below the threshold */
    feed_data(a, 1, 0, 20000, SL_OK);
    assert_string_equal(wire(a), "WU 0 40000|"); /* session credit on arrival */
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 20000), SL_OK);
    assert_string_equal(wire(a), ""); /* below the threshold */
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 20000), SL_OK);
    assert_string_equal(wire(a), "WU 1 40000|"); /* stream credit on consumption */
    /* a peer overrunning our window */
    feed_data(a, 1, 0, 30000, SL_OK);
    feed_data(a, 1, 0, 40000, SL_OK);
    assert_string_equal(events(a), "reset 1 7;close 1;");
    /* the 30000 that arrived and the dropped 40000 return to the session */
    assert_string_equal(wire(a), "RST 1 7|WU 0 70000|");
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 1), SL_ERR_NOTFOUND);
    app_free(a);
}

/* The stream table starts with a few buckets and grows as streams are
 * opened (8, 32, 128, 256): every stream is found through each growth,
 * and removals from the grown table leave the rest findable. */
static void stream_table_grows(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL), *s = app_new(SL_SPDY_SERVER, NULL);
    const uint32_t n = 600;
    for (uint32_t i = 0; i < n; i++) {
        const sl_spdy_nv h = {"streamtype", 10, "data", 4};
        uint32_t id;
        assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_OK);
        assert_int_equal(id, 2 * i + 1);
        pump(c, s, 1 << 20);
        events(c);
        events(s);
        for (uint32_t j = 0; j <= i; j++) /* an empty send finds the stream or says NOTFOUND */
            assert_int_equal(sl_spdy_stream_send(s->s, 2 * j + 1, NULL, 0, false), SL_OK);
        assert_int_equal(sl_spdy_stream_send(s->s, 2 * i + 3, NULL, 0, false), SL_ERR_NOTFOUND);
    }
    for (uint32_t i = 0; i < n; i += 2)
        assert_int_equal(sl_spdy_stream_reset(s->s, 2 * i + 1, SL_SPDY_CANCEL), SL_OK);
    for (uint32_t i = 0; i < n; i++) {
        int want = i % 2 ? SL_OK : SL_ERR_NOTFOUND;
        assert_int_equal(sl_spdy_stream_send(s->s, 2 * i + 1, (const uint8_t *)"y", 1, false),
                         want);
    }
    app_free(c);
    app_free(s);
}

/* ---- fairness ------------------------------------------------------------------- */

static void fairness(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL), *s = app_new(SL_SPDY_SERVER, NULL);
    const size_t per = 256 * 1024, hw = 40000;
    uint32_t ids[16];
    for (int i = 0; i < 16; i++)
        ids[i] = open_type(c, s, "stdout");
    for (int i = 0; i < 16; i++)
        send_zeros(s, ids[i], per);
    events(c);
    events(s);
    size_t total = 0;
    for (int round = 1; total < 16 * per; round++) {
        assert_true(sl_spdy_session_want_write(s->s));
        assert_int_equal(sl_spdy_session_flush(s->s, hw), SL_OK);
        assert_true(sl_bufq_len(&s->out) < hw + 8 + SL_SPDY_MAX_DATA_FRAME);
        assert_int_equal(feedq(c, &s->out), SL_OK);
        size_t lo = SIZE_MAX, hi = 0;
        total = 0;
        for (int i = 0; i < 16; i++) {
            size_t got = sl_bufq_len(&c->rx[ids[i]]);
            lo = got < lo ? got : lo;
            hi = got > hi ? got : hi;
            total += got;
        }
        assert_true(hi - lo <= SL_SPDY_MAX_DATA_FRAME); /* nobody runs ahead */
        if (round == 8)
            assert_true(lo > 0); /* two frames a round: all 16 moved by now */
    }
    assert_false(sl_spdy_session_want_write(s->s));

    /* a small stream behind a big one goes out in the first flush */
    send_zeros(s, ids[0], 4u << 20);
    assert_int_equal(sl_spdy_stream_send(s->s, ids[1], (const uint8_t *)"x", 1, false), SL_OK);
    assert_int_equal(sl_spdy_session_flush(s->s, hw), SL_OK);
    assert_string_equal(wire(s), "DATA 1 f0 32768|DATA 3 f0 1|DATA 1 f0 32768|");
    app_free(c);
    app_free(s);
}

/* Direct sends: frames go into out at once while it is below the limit
 * and nothing is queued ahead; the rest queues, and flush sends it in
 * order; enforced windows hold direct sends too. */
static void direct_send(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    sl_spdy_session_set_direct_limit(a->s, 40000);
    send_zeros(a, 1, 100000); /* two frames direct: out was below 40000 before each */
    assert_int_equal(sl_bufq_len(&a->out), 2 * (8 + 32768));
    assert_int_equal(sl_spdy_stream_pending(a->s, 1), 100000 - 65536);
    send_zeros(a, 1, 10); /* queued behind the rest, never ahead of it */
    assert_int_equal(sl_spdy_stream_pending(a->s, 1), 100010 - 65536);
    assert_string_equal(wire(a), "DATA 1 f0 32768|DATA 1 f0 32768|");
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "DATA 1 f0 32768|DATA 1 f0 1706|");
    assert_int_equal(sl_spdy_stream_pending(a->s, 1), 0);
    send_zeros(a, 1, 5); /* empty queue again: direct */
    assert_string_equal(wire(a), "DATA 1 f0 5|");

    /* a flow-control peer's window limits the direct path as well */
    feed_settings_iws(a, 1000, SL_OK); /* 1000 - (100015 sent) < 0 */
    wire(a);
    feed_wu(a, 1, 100015 - 1000 + 300, SL_OK); /* 300 of credit */
    send_zeros(a, 1, 500);
    assert_string_equal(wire(a), "DATA 1 f0 300|");
    assert_int_equal(sl_spdy_stream_pending(a->s, 1), 200);
    assert_int_equal(sl_spdy_stream_close(a->s, 1), SL_OK);
    feed_wu(a, 1, 200, SL_OK);
    assert_int_equal(sl_spdy_session_flush(a->s, 1 << 20), SL_OK);
    assert_string_equal(wire(a), "DATA 1 f0 200|DATA 1 f1 0|");
    app_free(a);
}

static void window_overflow(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    feed_wu(a, 1, 0x7fffffff, SL_OK);
    assert_string_equal(events(a), "reset 1 7;close 1;");
    assert_string_equal(wire(a), "RST 1 7|");
    feed_wu(a, 99, 5, SL_OK); /* unknown stream: ignored */
    feed_wu(a, 1, 0, SL_OK);  /* delta 0: ignored */
    assert_string_equal(wire(a), "");
    app_free(a);
}

/* ---- announcing our window ------------------------------------------------------------ */

#define ANNOUNCED 49152u /* not a power of two; our stream threshold becomes 24576 */

static const uint8_t settings_announced[] = {0x80, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00,
                                             0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
                                             0x00, 0x07, 0x00, 0x00, 0xc0, 0x00};

static void announce_api(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL);
    assert_int_equal(sl_spdy_session_announce_window(c->s, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_session_announce_window(c->s, 0x80000000u), SL_ERR_INVAL);
    assert_int_equal(sl_bufq_len(&c->out), 0);
    assert_int_equal(sl_spdy_session_announce_window(c->s, ANNOUNCED), SL_OK);
    uint8_t got[sizeof(settings_announced)];
    assert_int_equal(sl_bufq_len(&c->out), sizeof(got));
    sl_bufq_copyout(&c->out, got, sizeof(got));
    assert_memory_equal(got, settings_announced, sizeof(got));
    assert_string_equal(wire(c), "SETTINGS 7=49152|");
    assert_int_equal(sl_spdy_session_announce_window(c->s, ANNOUNCED), SL_ERR_STATE);
    assert_int_equal(sl_spdy_session_announce_window(c->s, 1000), SL_ERR_STATE);
    assert_string_equal(wire(c), "");
    app_free(c);

    app *s = app_new(SL_SPDY_SERVER, NULL);
    const uint8_t v2_ping[] = {0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1};
    assert_int_equal(feed(s, v2_ping, sizeof(v2_ping)), SL_ERR_UNSUPPORTED);
    wire(s);
    assert_int_equal(sl_spdy_session_announce_window(s->s, ANNOUNCED), SL_ERR_UNSUPPORTED);
    assert_string_equal(wire(s), "");
    app_free(s);
}

/* spdystream ignores SETTINGS and WINDOW_UPDATE and sends neither: towards
 * it, announcing only adds those frames. */
static void announce_towards_go_peer(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL);
    c->auto_consume = true;
    assert_int_equal(sl_spdy_session_announce_window(c->s, ANNOUNCED), SL_OK);
    const sl_spdy_nv h = {"streamtype", 10, "stdout", 6};
    uint32_t id;
    assert_int_equal(sl_spdy_stream_open(c->s, &h, 1, false, &id), SL_OK);
    assert_string_equal(wire(c), "SETTINGS 7=49152|SYN_STREAM 1 f0 streamtype=stdout|");
    assert_int_equal(feed(c, syn_reply_1, sizeof(syn_reply_1)), SL_OK);
    assert_string_equal(events(c), "reply 1;");
    /* it replied without answering our SETTINGS, and it never honours our
     * window: no FLOW_CONTROL_ERROR, and no credit it would never read
     * (bytes reaching a socket it closed would come back as a RST) */
    for (int i = 0; i < 4; i++)
        feed_data(c, id, 0, 30000, SL_OK);
    assert_int_equal(sl_bufq_len(&c->rx[id]), 120000);
    assert_string_equal(events(c), "");
    assert_string_equal(wire(c), "");
    /* and our sending is never held to windows it does not use */
    assert_false(sl_spdy_session_peer_flow_control(c->s));
    send_zeros(c, id, 1u << 20);
    assert_int_equal(sl_spdy_session_flush(c->s, SIZE_MAX), SL_OK);
    assert_int_equal(sl_spdy_stream_pending(c->s, id), 0);
    app_free(c);
}

/* Our window, once the peer uses flow control: enforced, with credit in
 * steps of half of it. */
static void announce_small_window(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    assert_int_equal(sl_spdy_session_announce_window(a->s, 1000), SL_OK);
    assert_string_equal(wire(a), "SETTINGS 7=1000|");
    feed_wu(a, 1, 5, SL_OK); /* the peer shows flow control */
    feed_data(a, 1, 0, 600, SL_OK);
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 499), SL_OK);
    assert_string_equal(wire(a), "");
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 1), SL_OK);
    assert_string_equal(wire(a), "WU 1 500|");
    feed_data(a, 1, 0, 900, SL_OK); /* 1000 unconsumed: the window, full */
    assert_string_equal(events(a), "");
    feed_data(a, 1, 0, 1, SL_OK);
    assert_string_equal(events(a), "reset 1 7;close 1;");
    assert_string_equal(wire(a), "RST 1 7|");
    app_free(a);
}

/* Credit held back while nobody used flow control goes out whole. */
static void announce_returns_held_credit(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    feed_data(a, 1, 0, 30000, SL_OK);
    feed_data(a, 1, 0, 30000, SL_OK);
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 50000), SL_OK);
    assert_string_equal(wire(a), "");
    assert_int_equal(sl_spdy_session_announce_window(a->s, 100000), SL_OK);
    /* the session window widened to the stream window (100000 - 65536),
     * then the held credit */
    assert_string_equal(wire(a), "SETTINGS 7=100000|WU 0 34464|WU 1 50000|WU 0 60000|");
    app_free(a);
}

/* A large announced window: the session window grows with it, and credit
 * goes back in half-window steps, for the session on arrival and for the
 * stream on consumption. */
static void announce_large_window_half_steps(void **state)
{
    (void)state;
    app *a = server_with_stream(NULL);
    assert_int_equal(sl_spdy_session_announce_window(a->s, 262144), SL_OK);
    assert_string_equal(wire(a), "SETTINGS 7=262144|WU 0 196608|");
    feed_settings_iws(a, SL_SPDY_INITIAL_WINDOW, SL_OK); /* the peer uses flow control */
    assert_string_equal(wire(a), "");
    for (int i = 0; i < 3; i++)
        feed_data(a, 1, 0, 32768, SL_OK);
    assert_string_equal(wire(a), ""); /* below half the window */
    feed_data(a, 1, 0, 32768, SL_OK);
    assert_string_equal(wire(a), "WU 0 131072|");
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 131071), SL_OK);
    assert_string_equal(wire(a), "");
    assert_int_equal(sl_spdy_stream_consumed(a->s, 1, 1), SL_OK);
    assert_string_equal(wire(a), "WU 1 131072|");
    /* the whole window may be in flight unconsumed; one byte more is not */
    for (int i = 0; i < 8; i++)
        feed_data(a, 1, 0, 32768, SL_OK);
    assert_string_equal(events(a), "");
    feed_data(a, 1, 0, 1, SL_OK);
    assert_string_equal(events(a), "reset 1 7;close 1;");
    app_free(a);
}

static void send_pattern(app *a, uint32_t id, size_t n, uint32_t seed)
{
    uint8_t *p = malloc(n);
    assert_non_null(p);
    fill(p, n, seed);
    assert_int_equal(sl_spdy_stream_send(a->s, id, p, n, true), SL_OK);
    free(p);
}

static void check_pattern(app *a, uint32_t id, size_t n, uint32_t seed)
{
    uint8_t *want = malloc(n), *got = malloc(n);
    assert_true(want && got);
    fill(want, n, seed);
    assert_int_equal(sl_bufq_len(&a->rx[id]), n);
    sl_bufq_copyout(&a->rx[id], got, n);
    assert_memory_equal(got, want, n);
    free(want);
    free(got);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Above the 64 KiB session window: if the session window followed
 * consumption, the stalled stream would take all of it. */
#define E2E_WINDOW (96u * 1024)

/* Our client announces; our server holds each stream to the client's
 * window. A stream whose consumer stops stops at its window; the 15 others
 * finish (the session window never blocks them); resuming finishes it. */
static void announce_end_to_end(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL), *s = app_new(SL_SPDY_SERVER, NULL);
    c->auto_consume = s->auto_consume = true;
    assert_int_equal(sl_spdy_session_announce_window(c->s, E2E_WINDOW), SL_OK);
    const size_t per = 256 * 1024;
    uint32_t ids[16];
    for (int i = 0; i < 16; i++)
        ids[i] = open_type(c, s, "stdout");
    assert_true(sl_spdy_session_peer_flow_control(s->s));
    uint32_t slow = ids[0];
    c->stall[slow] = true;
    for (int i = 0; i < 16; i++)
        send_pattern(s, ids[i], per, ids[i]);
    events(c);
    events(s);
    pump(c, s, 40000);
    for (int i = 1; i < 16; i++)
        check_pattern(c, ids[i], per, ids[i]);
    assert_int_equal(sl_bufq_len(&c->rx[slow]), E2E_WINDOW);
    assert_int_equal(sl_spdy_stream_pending(s->s, slow), per - E2E_WINDOW);
    assert_false(sl_spdy_session_want_write(s->s)); /* waits, no busy loop */
    const char *ev = events(c);
    assert_int_equal(count(ev, "fin "), 15);
    assert_int_equal(count(ev, "reset"), 0);
    assert_string_equal(events(s), "");

    c->stall[slow] = false;
    assert_int_equal(sl_spdy_stream_consumed(c->s, slow, E2E_WINDOW), SL_OK);
    pump(c, s, 40000);
    check_pattern(c, slow, per, slow);
    assert_string_equal(events(c), "fin 1;");
    assert_string_equal(events(s), "");
    app_free(c);
    app_free(s);
}

/* The other way: the server answered the announcement with its SETTINGS,
 * so the client keeps to the server's 64 KiB windows from its first byte,
 * even when it could dump everything at once. */
static void announce_client_to_server(void **state)
{
    (void)state;
    app *c = app_new(SL_SPDY_CLIENT, NULL), *s = app_new(SL_SPDY_SERVER, NULL);
    c->auto_consume = s->auto_consume = true;
    assert_int_equal(sl_spdy_session_announce_window(c->s, ANNOUNCED), SL_OK);
    uint32_t in = open_type(c, s, "stdin");
    assert_true(sl_spdy_session_peer_flow_control(c->s)); /* from the SETTINGS alone */
    uint32_t other = open_type(c, s, "data");
    s->stall[in] = true;
    const size_t per = 256 * 1024;
    send_pattern(c, in, per, 7);
    send_pattern(c, other, per, 8);
    events(c);
    events(s);
    pump(c, s, 1u << 20);
    check_pattern(s, other, per, 8);
    assert_int_equal(sl_bufq_len(&s->rx[in]), SL_SPDY_INITIAL_WINDOW);
    assert_int_equal(sl_spdy_stream_pending(c->s, in), per - SL_SPDY_INITIAL_WINDOW);
    assert_string_equal(events(s), "fin 3;");
    assert_string_equal(events(c), "");

    s->stall[in] = false;
    assert_int_equal(sl_spdy_stream_consumed(s->s, in, SL_SPDY_INITIAL_WINDOW), SL_OK);
    pump(c, s, 1u << 20);
    check_pattern(s, in, per, 7);
    assert_string_equal(events(s), "fin 1;");
    assert_string_equal(events(c), "");
    app_free(c);
    app_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_memory_exchange),
        cmocka_unit_test(bulk_both_ways),
        cmocka_unit_test(fc_peer_window),
        cmocka_unit_test(no_fc_peer_never_blocks),
        cmocka_unit_test(fc_inbound_credit),
        cmocka_unit_test(fairness),
        cmocka_unit_test(direct_send),
        cmocka_unit_test(window_overflow),
        cmocka_unit_test(announce_api),
        cmocka_unit_test(announce_towards_go_peer),
        cmocka_unit_test(announce_small_window),
        cmocka_unit_test(announce_returns_held_credit),
        cmocka_unit_test(announce_large_window_half_steps),
        cmocka_unit_test(stream_table_grows),
        cmocka_unit_test(announce_end_to_end),
        cmocka_unit_test(announce_client_to_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
