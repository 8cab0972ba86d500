#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/bufq.h"
#include "sluice/error.h"
#include "spdy/spdy_frame.h"
#include "spdy_golden.h"

/* Beside spdystream's golden frames (spdy_golden.h): NOOP (type 5, unknown
 * to us) with a 3-byte payload, and WINDOW_UPDATE. */
static const uint8_t noop[] = {0x80, 0x03, 0x00, 0x05, 0x00, 0x00, 0x00, 0x03, 1, 2, 3};
static const uint8_t wu[] = {0x80, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x08,
                             0x80, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00};

static size_t flatten(sl_bufq *q, uint8_t *dst, size_t cap)
{
    size_t n = sl_bufq_copyout(q, dst, cap);
    sl_bufq_consume(q, sl_bufq_len(q));
    return n;
}

static void golden_writers(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    uint8_t buf[256];

    assert_int_equal(sl_spdy_write_data(&q, 3, 0, (const uint8_t *)"hi\n", 3), SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(data_hi));
    assert_memory_equal(buf, data_hi, sizeof(data_hi));

    assert_int_equal(sl_spdy_write_data(&q, 3, SL_SPDY_FLAG_FIN, NULL, 0), SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(data_fin));
    assert_memory_equal(buf, data_fin, sizeof(data_fin));

    assert_int_equal(sl_spdy_write_rst_stream(&q, 5, SL_SPDY_CANCEL), SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(rst_5));
    assert_memory_equal(buf, rst_5, sizeof(rst_5));

    assert_int_equal(sl_spdy_write_ping(&q, 1), SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(ping_1));
    assert_memory_equal(buf, ping_1, sizeof(ping_1));

    assert_int_equal(sl_spdy_write_goaway(&q, 7, SL_SPDY_GOAWAY_OK), SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(goaway_7));
    assert_memory_equal(buf, goaway_7, sizeof(goaway_7));

    /* header + fixed fields around a given compressed block */
    assert_int_equal(
        sl_spdy_write_syn_stream(&q, 1, 0, 0, 0, syn_stream_1 + 18, sizeof(syn_stream_1) - 18),
        SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(syn_stream_1));
    assert_memory_equal(buf, syn_stream_1, sizeof(syn_stream_1));

    assert_int_equal(sl_spdy_write_syn_reply(&q, 3, 0, syn_reply_3 + 12, sizeof(syn_reply_3) - 12),
                     SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(syn_reply_3));
    assert_memory_equal(buf, syn_reply_3, sizeof(syn_reply_3));

    /* WINDOW_UPDATE: the reserved bit is sent as 0 */
    assert_int_equal(sl_spdy_write_window_update(&q, 3, 0x10000), SL_OK);
    assert_int_equal(flatten(&q, buf, sizeof(buf)), sizeof(wu));
    assert_int_equal(buf[8], 0);
    assert_memory_equal(buf + 9, wu + 9, sizeof(wu) - 9);
    sl_bufq_fini(&q);
}

static void writer_errors(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    assert_int_equal(sl_spdy_write_data(&q, 0, 0, NULL, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_data(&q, 0x80000000u, 0, NULL, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_rst_stream(&q, 1, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_rst_stream(&q, 0, 5), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_ping(&q, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_window_update(&q, 1, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_window_update(&q, 1, 0x80000000u), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_syn_stream(&q, 1, 0, 8, 0, NULL, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_syn_reply(&q, 0, 0, NULL, 0), SL_ERR_INVAL);
    assert_int_equal(sl_spdy_write_goaway(&q, 0x80000000u, 0), SL_ERR_INVAL);
    assert_int_equal(sl_bufq_len(&q), 0);
    sl_bufq_fini(&q);
}

static void data_from_queue(void **state)
{
    (void)state;
    sl_bufq src, out;
    sl_bufq_init(&src);
    sl_bufq_init(&out);
    uint8_t big[40000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 7);
    assert_int_equal(sl_bufq_append(&src, big, sizeof(big)), SL_OK);
    assert_int_equal(sl_spdy_write_data_from(&out, 9, 0, &src, 32768), SL_OK);
    assert_int_equal(sl_bufq_len(&src), sizeof(big) - 32768);
    assert_int_equal(sl_bufq_len(&out), 8 + 32768);
    assert_int_equal(sl_spdy_write_data_from(&out, 9, 0, &src, 32768), SL_ERR_INVAL);
    uint8_t *flat = malloc(8 + 32768);
    assert_non_null(flat);
    sl_bufq_copyout(&out, flat, 8 + 32768);
    const uint8_t hdr[8] = {0, 0, 0, 9, 0, 0, 0x80, 0};
    assert_memory_equal(flat, hdr, 8);
    assert_memory_equal(flat + 8, big, 32768);
    free(flat);
    sl_bufq_fini(&src);
    sl_bufq_fini(&out);
}

/* ---- reader: an event log that must not depend on how input is split ---- */

typedef struct tlog {
    char text[8192];
    size_t len;
    uint8_t data[64];
    size_t dlen;
} tlog;

static void logf_(tlog *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(tlog *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->text + l->len, sizeof(l->text) - l->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(l->text) - l->len);
    l->len += (size_t)n;
}

static void log_hex(tlog *l, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        logf_(l, "%02x", p[i]);
}

static void log_event(tlog *l, const sl_spdy_event *ev)
{
    switch (ev->type) {
    case SL_SPDY_EV_CONTROL:
        logf_(l, "C%u/%u/%zu:", ev->hdr.type, ev->hdr.flags, ev->len);
        log_hex(l, ev->data, ev->len);
        logf_(l, "\n");
        break;
    case SL_SPDY_EV_UNKNOWN:
        logf_(l, "U%u/%u\n", ev->hdr.type, ev->hdr.length);
        break;
    case SL_SPDY_EV_DATA_BEGIN:
        l->dlen = 0;
        logf_(l, "D%u/%u/%u:", ev->hdr.stream_id, ev->hdr.flags, ev->hdr.length);
        break;
    case SL_SPDY_EV_DATA:
        assert_true(ev->len > 0 && l->dlen + ev->len <= sizeof(l->data));
        memcpy(l->data + l->dlen, ev->data, ev->len);
        l->dlen += ev->len;
        break;
    case SL_SPDY_EV_DATA_END:
        log_hex(l, l->data, l->dlen);
        logf_(l, "\n");
        break;
    }
}

/* Feeds p in pieces (cuts[] are increasing offsets) and logs the events.
 * The pieces are copied into exact-size heap blocks so that ASan catches
 * any read past a piece. Returns the reader's final status. */
static int feed(sl_spdy_reader *r, const uint8_t *p, size_t len, const size_t *cuts, size_t ncuts,
                tlog *l)
{
    size_t start = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        size_t plen = end - start;
        uint8_t *piece = malloc(plen ? plen : 1);
        assert_non_null(piece);
        memcpy(piece, p + start, plen);
        size_t off = 0;
        for (;;) {
            sl_spdy_event ev;
            size_t used;
            int rc = sl_spdy_reader_next(r, piece + off, plen - off, &used, &ev);
            off += used;
            if (rc < 0) {
                free(piece);
                return rc;
            }
            if (rc == 0)
                break;
            log_event(l, &ev);
        }
        assert_int_equal(off, plen);
        free(piece);
        start = end;
    }
    return SL_OK;
}

static uint8_t stream_buf[512];
static size_t build_stream(void)
{
    const struct {
        const uint8_t *p;
        size_t n;
    } parts[] = {
        {syn_stream_1, sizeof(syn_stream_1)},
        {syn_stream_3, sizeof(syn_stream_3)},
        {syn_reply_1, sizeof(syn_reply_1)},
        {noop, sizeof(noop)},
        {syn_reply_3, sizeof(syn_reply_3)},
        {data_hi, sizeof(data_hi)},
        {data_fin, sizeof(data_fin)},
        {rst_5, sizeof(rst_5)},
        {ping_1, sizeof(ping_1)},
        {wu, sizeof(wu)},
        {goaway_7, sizeof(goaway_7)},
    };
    size_t len = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        memcpy(stream_buf + len, parts[i].p, parts[i].n);
        len += parts[i].n;
    }
    return len;
}

static const char expected_log[] =
    "C1/0/41:0000000100000000000078f9e3c6a7c26260606004a7b392a2d4c45c6851c29a0a0a6800000000ffff\n"
    "C1/0/25:000000030000000000 00c22ac5565c92925f5a0200 0000ffff\n"
    "C2/0/20:0000000178f9e3c6a7c26260606000000000ffff\n"
    "U5/3\n"
    "C2/0/12:0000000302610000 0000ffff\n"
    "D3/0/3:68690a\n"
    "D3/1/0:\n"
    "C3/0/8:0000000500000005\n"
    "C6/0/4:00000001\n"
    "C9/0/8:8000000300010000\n"
    "C7/0/8:0000000700000000\n";

static void strip_spaces(char *dst, const char *src)
{
    while (*src) {
        if (*src != ' ')
            *dst++ = *src;
        src++;
    }
    *dst = 0;
}

static void reader_every_split(void **state)
{
    (void)state;
    size_t len = build_stream();
    char want[sizeof(expected_log)];
    strip_spaces(want, expected_log);

    sl_spdy_reader r;
    tlog *whole = calloc(1, sizeof(tlog));
    tlog *l = calloc(1, sizeof(tlog));
    assert_non_null(whole);
    assert_non_null(l);
    sl_spdy_reader_init(&r, SL_SPDY_MAX_LENGTH, 65536);
    assert_int_equal(feed(&r, stream_buf, len, NULL, 0, whole), SL_OK);
    sl_spdy_reader_fini(&r);
    assert_string_equal(whole->text, want);

    /* every 2-way split */
    for (size_t cut = 0; cut <= len; cut++) {
        memset(l, 0, sizeof(*l));
        sl_spdy_reader_init(&r, SL_SPDY_MAX_LENGTH, 65536);
        assert_int_equal(feed(&r, stream_buf, len, &cut, 1, l), SL_OK);
        sl_spdy_reader_fini(&r);
        assert_string_equal(l->text, want);
    }
    /* byte by byte */
    size_t *cuts = malloc(len * sizeof(size_t));
    assert_non_null(cuts);
    for (size_t i = 0; i < len; i++)
        cuts[i] = i + 1;
    memset(l, 0, sizeof(*l));
    sl_spdy_reader_init(&r, SL_SPDY_MAX_LENGTH, 65536);
    assert_int_equal(feed(&r, stream_buf, len, cuts, len - 1, l), SL_OK);
    sl_spdy_reader_fini(&r);
    assert_string_equal(l->text, want);
    free(cuts);
    free(whole);
    free(l);
}

static void reader_errors(void **state)
{
    (void)state;
    sl_spdy_reader r;
    tlog *l = calloc(1, sizeof(tlog));
    assert_non_null(l);

    /* version 2 control frame */
    const uint8_t v2[] = {0x80, 0x02, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 1};
    sl_spdy_reader_init(&r, 100, 100);
    assert_int_equal(feed(&r, v2, sizeof(v2), NULL, 0, l), SL_ERR_UNSUPPORTED);
    /* sticky */
    assert_int_equal(feed(&r, ping_1, sizeof(ping_1), NULL, 0, l), SL_ERR_UNSUPPORTED);
    sl_spdy_reader_fini(&r);

    /* control payload above the limit: refused at the header */
    sl_spdy_reader_init(&r, 100, 8);
    assert_int_equal(feed(&r, syn_reply_1, 8, NULL, 0, l), SL_ERR_TOO_LARGE);
    sl_spdy_reader_fini(&r);

    /* DATA above the limit */
    sl_spdy_reader_init(&r, 2, 100);
    assert_int_equal(feed(&r, data_hi, 8, NULL, 0, l), SL_ERR_TOO_LARGE);
    sl_spdy_reader_fini(&r);
    assert_int_equal(l->len, 0);
    free(l);
}

static void reader_skips_big_unknown(void **state)
{
    (void)state;
    /* CREDENTIAL (type 10) of 1 MiB - 1, far above the control limit,
     * then a PING: the unknown frame is skipped without buffering. */
    size_t ulen = 0xFFFFF;
    size_t total = 8 + ulen + sizeof(ping_1);
    uint8_t *p = calloc(1, total);
    assert_non_null(p);
    const uint8_t hdr[8] = {0x80, 0x03, 0x00, 0x0a, 0x00, 0x0f, 0xff, 0xff};
    memcpy(p, hdr, 8);
    memcpy(p + 8 + ulen, ping_1, sizeof(ping_1));
    sl_spdy_reader r;
    tlog *l = calloc(1, sizeof(tlog));
    assert_non_null(l);
    sl_spdy_reader_init(&r, 16, 64);
    size_t cuts[] = {3, 4000, 8 + ulen - 1, 8 + ulen + 5};
    assert_int_equal(feed(&r, p, total, cuts, 4, l), SL_OK);
    assert_string_equal(l->text, "U10/1048575\nC6/0/4:00000001\n");
    assert_null(r.buf); /* nothing was buffered for the unknown frame */
    sl_spdy_reader_fini(&r);
    free(l);
    free(p);
}

static int parse_bytes(const uint8_t *frame, size_t len, sl_spdy_ctrl *c)
{
    sl_spdy_frame_hdr h;
    sl_spdy_hdr_decode(frame, &h);
    assert_int_equal(h.length, len - 8);
    return sl_spdy_ctrl_parse(&h, frame + 8, len - 8, c);
}

static void ctrl_parse_good(void **state)
{
    (void)state;
    sl_spdy_ctrl c;
    assert_int_equal(parse_bytes(syn_stream_1, sizeof(syn_stream_1), &c), SL_OK);
    assert_int_equal(c.stream_id, 1);
    assert_int_equal(c.assoc_id, 0);
    assert_int_equal(c.nv_len, 31);
    assert_int_equal(parse_bytes(syn_reply_3, sizeof(syn_reply_3), &c), SL_OK);
    assert_int_equal(c.stream_id, 3);
    assert_int_equal(c.nv_len, 8);
    assert_int_equal(parse_bytes(rst_5, sizeof(rst_5), &c), SL_OK);
    assert_int_equal(c.stream_id, 5);
    assert_int_equal(c.status, SL_SPDY_CANCEL);
    assert_int_equal(parse_bytes(ping_1, sizeof(ping_1), &c), SL_OK);
    assert_int_equal(c.value, 1);
    assert_int_equal(parse_bytes(goaway_7, sizeof(goaway_7), &c), SL_OK);
    assert_int_equal(c.stream_id, 7);
    assert_int_equal(c.status, 0);
    assert_int_equal(parse_bytes(wu, sizeof(wu), &c), SL_OK);
    assert_int_equal(c.stream_id, 3); /* reserved bit ignored */
    assert_int_equal(c.value, 0x10000);

    sl_bufq q;
    sl_bufq_init(&q);
    const uint32_t ent[2][3] = {{1, SL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE, 1000},
                                {0, SL_SPDY_SETTINGS_MAX_CONCURRENT_STREAMS, 7}};
    assert_int_equal(sl_spdy_write_settings(&q, 0, ent, 2), SL_OK);
    uint8_t buf[64];
    size_t n = flatten(&q, buf, sizeof(buf));
    assert_int_equal(n, 8 + 4 + 16);
    assert_int_equal(parse_bytes(buf, n, &c), SL_OK);
    assert_int_equal(c.count, 2);
    uint8_t f;
    uint32_t id, v;
    sl_spdy_settings_entry(&c, 0, &f, &id, &v);
    assert_int_equal(f, 1);
    assert_int_equal(id, 7);
    assert_int_equal(v, 1000);
    sl_spdy_settings_entry(&c, 1, &f, &id, &v);
    assert_int_equal(id, 4);
    assert_int_equal(v, 7);
    sl_bufq_fini(&q);
}

static void ctrl_parse_bad(void **state)
{
    (void)state;
    static const struct {
        uint16_t type;
        uint8_t flags;
        uint8_t len;
        uint8_t p[16];
    } bad[] = {
        {SL_SPDY_RST_STREAM, 0, 4, {0, 0, 0, 1}},
        {SL_SPDY_RST_STREAM, 0, 8, {0, 0, 0, 0, 0, 0, 0, 5}}, /* id 0 */
        {SL_SPDY_RST_STREAM, 0, 8, {0, 0, 0, 1, 0, 0, 0, 0}}, /* status 0 */
        {SL_SPDY_PING, 0, 4, {0, 0, 0, 0}},                   /* id 0 */
        {SL_SPDY_PING, 1, 4, {0, 0, 0, 1}},                   /* flags */
        {SL_SPDY_PING, 0, 8, {0, 0, 0, 1, 0, 0, 0, 1}},
        {SL_SPDY_GOAWAY, 0, 4, {0, 0, 0, 1}}, /* SPDY/2 size */
        {SL_SPDY_GOAWAY, 1, 8, {0}},
        {SL_SPDY_WINDOW_UPDATE, 0, 12, {0}},
        {SL_SPDY_WINDOW_UPDATE, 0, 4, {0}},
        {SL_SPDY_WINDOW_UPDATE, 2, 8, {0, 0, 0, 1, 0, 0, 0, 1}},
        {SL_SPDY_SETTINGS, 0, 3, {0}},
        {SL_SPDY_SETTINGS, 0, 12, {0, 0, 0, 2}},      /* count too big */
        {SL_SPDY_SETTINGS, 0, 12, {0, 0, 0, 0}},      /* count too small */
        {SL_SPDY_SETTINGS, 0, 12, {0x20, 0, 0, 1}},   /* overflowing count */
        {SL_SPDY_SYN_STREAM, 0, 9, {0, 0, 0, 1}},     /* too short */
        {SL_SPDY_SYN_STREAM, 0, 10, {0x80, 0, 0, 0}}, /* id 0 (reserved bit set) */
        {SL_SPDY_SYN_REPLY, 0, 3, {0, 0, 1}},
        {SL_SPDY_SYN_REPLY, 0, 4, {0, 0, 0, 0}},
        {SL_SPDY_HEADERS, 0, 4, {0, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_spdy_frame_hdr h = {.control = true,
                               .version = 3,
                               .type = bad[i].type,
                               .flags = bad[i].flags,
                               .length = bad[i].len};
        sl_spdy_ctrl c;
        uint8_t *p = malloc(bad[i].len); /* exact size: ASan sees over-reads */
        assert_non_null(p);
        memcpy(p, bad[i].p, bad[i].len);
        int rc = sl_spdy_ctrl_parse(&h, p, bad[i].len, &c);
        free(p);
        if (rc != SL_ERR_PROTO)
            fail_msg("case %zu: got %d", i, rc);
    }
    sl_spdy_frame_hdr h = {.control = true, .version = 3, .type = 5};
    sl_spdy_ctrl c;
    assert_int_equal(sl_spdy_ctrl_parse(&h, NULL, 0, &c), SL_ERR_UNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_writers),  cmocka_unit_test(writer_errors),
        cmocka_unit_test(data_from_queue), cmocka_unit_test(reader_every_split),
        cmocka_unit_test(reader_errors),   cmocka_unit_test(reader_skips_big_unknown),
        cmocka_unit_test(ctrl_parse_good), cmocka_unit_test(ctrl_parse_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
