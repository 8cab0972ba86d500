#include "ws/ws_conn.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "sluice/error.h"
#include "ws/ws_mask.h"

#define WS_CLOSE_REASON_MAX 123 /* RFC 6455 §5.5: control payload <= 125 */
#define WS_HDR_MAX 14           /* 2 + 8 (length) + 4 (mask key) */
#define MASK_POOL 256           /* random bytes drawn at once for mask keys */
/* A binary message buffer up to this size is kept for the next message;
 * a larger one is freed once delivered, so an idle session holds little. */
#define WS_KEEP_BUF (128u << 10)

/* Inbound frame headers are scanned one step ahead of wslay. wslay does
 * refuse unmasked client frames, but it neither tells which close code it
 * queued nor sends one for header-level errors (it queues an empty close),
 * so every header rule is checked here first and the bytes of an offending
 * frame never reach wslay. Resumable at any byte.
 * Binary messages (their first frame and its continuations) never reach
 * wslay either: their payload is unmasked here 8 bytes a step straight into
 * the message buffer (wslay unmasks byte by byte, then copies each frame
 * into a chunk and the chunks into one message). Text messages, whose UTF-8
 * wslay checks (1007), and control frames still go through wslay, header
 * and all, once their header is complete. */
typedef struct frame_scan {
    int client; /* we are the client: peer frames must be unmasked */
    uint8_t hdr[WS_HDR_MAX];
    size_t have;      /* header bytes collected */
    size_t len_end;   /* header bytes up to the end of the length field */
    size_t need;      /* header bytes in all (mask key included) */
    uint64_t plen;    /* payload length once the length field is complete */
    uint64_t remain;  /* payload bytes left in the current frame */
    int in_msg;       /* a fragmented data message is open */
    uint64_t msg_len; /* its payload so far */
    int msg_fast;     /* the current data message is binary: handled here */
    int fast;         /* the current frame's payload is handled here */
} frame_scan;

struct sl_ws_conn {
    wslay_event_context_ptr ctx;
    sl_ws_callbacks cb;
    void *arg;
    sl_bufq *out;
    uint64_t max_message;
    const uint8_t *in; /* bytes being fed to wslay */
    size_t in_len;
    frame_scan scan;
    int err;            /* sticky sl_err once the connection failed */
    int out_err;        /* set by send_cb when out could not grow */
    int close_reported; /* on_close already called */
    void (*on_pong)(void *arg);
    uint8_t mask_pool[MASK_POOL]; /* client: kernel random bytes for mask keys */
    size_t mask_used;             /* bytes of mask_pool handed out */
    uint8_t *msg;                 /* the binary message being received */
    size_t msg_have, msg_cap;
};

static void report_close(sl_ws_conn *ws, uint16_t code)
{
    if (ws->close_reported)
        return;
    ws->close_reported = 1;
    if (ws->cb.on_close)
        ws->cb.on_close(ws->arg, code);
}

/* ---- frame header scan ---- */

static uint16_t check_first_two(frame_scan *s)
{
    uint8_t fin = s->hdr[0] >> 7, rsv = (s->hdr[0] >> 4) & 7, op = s->hdr[0] & 0xf;
    uint8_t mask = s->hdr[1] >> 7, len7 = s->hdr[1] & 0x7f;
    if (rsv || mask == s->client) /* no extensions; only clients mask */
        return WSLAY_CODE_PROTOCOL_ERROR;
    if (op & 8) {
        if (op > WSLAY_PONG || !fin || len7 > 125)
            return WSLAY_CODE_PROTOCOL_ERROR;
        if (op == WSLAY_CONNECTION_CLOSE && len7 == 1)
            return WSLAY_CODE_PROTOCOL_ERROR; /* a code is 2 bytes */
    } else {
        if (op > WSLAY_BINARY_FRAME)
            return WSLAY_CODE_PROTOCOL_ERROR;
        if ((op == WSLAY_CONTINUATION_FRAME) != (s->in_msg != 0))
            return WSLAY_CODE_PROTOCOL_ERROR;
    }
    s->len_end = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
    s->need = s->len_end + (s->client ? 0 : 4);
    return 0;
}

static uint64_t be_read(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Checked as soon as the length field is complete: wslay acts on it then. */
static uint16_t check_length(frame_scan *s, uint64_t max)
{
    uint8_t op = s->hdr[0] & 0xf, len7 = s->hdr[1] & 0x7f;
    uint64_t plen = len7;
    if (len7 == 126) {
        plen = be_read(s->hdr + 2, 2);
        if (plen < 126)
            return WSLAY_CODE_PROTOCOL_ERROR; /* not the shortest form */
    } else if (len7 == 127) {
        plen = be_read(s->hdr + 2, 8);
        if (plen < 65536 || plen >> 63)
            return WSLAY_CODE_PROTOCOL_ERROR;
    }
    /* Same accounting as wslay's max_recv_msg_length check. */
    uint64_t base = op == WSLAY_CONTINUATION_FRAME ? s->msg_len : 0;
    if (plen > max - base)
        return WSLAY_CODE_MESSAGE_TOO_BIG;
    s->plen = plen;
    return 0;
}

static void start_payload(frame_scan *s)
{
    uint8_t fin = s->hdr[0] >> 7, op = s->hdr[0] & 0xf;
    if (!(op & 8)) {
        if (op != WSLAY_CONTINUATION_FRAME)
            s->msg_fast = op == WSLAY_BINARY_FRAME;
        s->msg_len = (op == WSLAY_CONTINUATION_FRAME ? s->msg_len : 0) + s->plen;
        s->in_msg = !fin;
    }
    s->fast = !(op & 8) && s->msg_fast;
    s->remain = s->plen;
    s->have = 0;
}

/* Takes one header byte. Returns 0, or the close code of a violation (the
 * frame's bytes then go nowhere). */
static uint16_t scan_hdr_byte(frame_scan *s, uint64_t max, uint8_t byte)
{
    s->hdr[s->have++] = byte;
    uint16_t c = s->have == 2 ? check_first_two(s) : 0;
    if (!c && s->have == s->len_end)
        c = check_length(s, max);
    return c;
}

/* ---- wslay callbacks ---- */

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    sl_ws_conn *ws = user;
    if (ws->in_len == 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t n = len < ws->in_len ? len : ws->in_len;
    memcpy(buf, ws->in, n);
    ws->in += n;
    ws->in_len -= n;
    return (ssize_t)n;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    (void)flags;
    sl_ws_conn *ws = user;
    if (sl_bufq_append(ws->out, data, len) != SL_OK) {
        ws->out_err = SL_ERR_NOMEM;
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return (ssize_t)len;
}

/* Mask keys for the client role, straight from the kernel's CSPRNG as
 * RFC 6455 §5.3 asks, drawn MASK_POOL bytes at a time so that a frame
 * costs no system call. Servers never mask, but wslay wants the callback. */
static int draw_mask(sl_ws_conn *ws, uint8_t *buf, size_t len)
{
    while (len > 0) {
        if (ws->mask_used == MASK_POOL) {
            if (getrandom(ws->mask_pool, MASK_POOL, 0) != MASK_POOL)
                return -1; /* wslay fails the send: no predictable key */
            ws->mask_used = 0;
        }
        size_t n = MASK_POOL - ws->mask_used < len ? MASK_POOL - ws->mask_used : len;
        memcpy(buf, ws->mask_pool + ws->mask_used, n);
        ws->mask_used += n;
        buf += n;
        len -= n;
    }
    return 0;
}

static int genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
    (void)ctx;
    sl_ws_conn *ws = user;
    if (!ws->scan.client) {
        memset(buf, 0, len);
        return 0;
    }
    return draw_mask(ws, buf, len);
}

/* wslay queues its close answer ahead of queued data messages (control
 * frames go first), so flush the data before a peer's close is processed. */
static void on_frame_start_cb(wslay_event_context_ptr ctx,
                              const struct wslay_event_on_frame_recv_start_arg *a, void *user)
{
    (void)user;
    if (a->opcode == WSLAY_CONNECTION_CLOSE)
        wslay_event_send(ctx);
}

static void on_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
                      void *user)
{
    (void)ctx;
    sl_ws_conn *ws = user;
    static uint8_t empty[1];
    if (a->opcode == WSLAY_TEXT_FRAME || a->opcode == WSLAY_BINARY_FRAME) {
        /* wslay hands over its own heap copy of the message, freed after
         * this call, so the receiver may decode it in place. */
        uint8_t *msg = a->msg_length ? (uint8_t *)(uintptr_t)a->msg : empty;
        if (ws->cb.on_msg)
            ws->cb.on_msg(ws->arg, a->opcode == WSLAY_TEXT_FRAME, msg, a->msg_length);
    } else if (a->opcode == WSLAY_CONNECTION_CLOSE) {
        report_close(ws, a->status_code ? a->status_code : WSLAY_CODE_NO_STATUS_RCVD);
    } else if (a->opcode == WSLAY_PONG && ws->on_pong) {
        ws->on_pong(ws->arg);
    }
}

/* ---- public API ---- */

static sl_ws_conn *conn_new(bool client, const sl_ws_callbacks *cb, void *arg, sl_bufq *out,
                            size_t max_message)
{
    sl_ws_conn *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    ws->scan.client = client;
    ws->mask_used = MASK_POOL; /* drawn at the first frame */
    struct wslay_event_callbacks wcb = {
        .recv_callback = recv_cb,
        .send_callback = send_cb,
        .genmask_callback = genmask_cb,
        .on_frame_recv_start_callback = on_frame_start_cb,
        .on_msg_recv_callback = on_msg_cb,
    };
    int r = client ? wslay_event_context_client_init(&ws->ctx, &wcb, ws)
                   : wslay_event_context_server_init(&ws->ctx, &wcb, ws);
    if (r != 0) {
        free(ws);
        return NULL;
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx, max_message);
    if (cb)
        ws->cb = *cb;
    ws->arg = arg;
    ws->out = out;
    ws->max_message = max_message;
    return ws;
}

sl_ws_conn *sl_ws_conn_new(const sl_ws_callbacks *cb, void *arg, sl_bufq *out, size_t max_message)
{
    return conn_new(false, cb, arg, out, max_message);
}

sl_ws_conn *sl_ws_conn_new_client(const sl_ws_callbacks *cb, void *arg, sl_bufq *out,
                                  size_t max_message)
{
    return conn_new(true, cb, arg, out, max_message);
}

void sl_ws_conn_set_on_pong(sl_ws_conn *ws, void (*fn)(void *arg))
{
    ws->on_pong = fn;
}

void sl_ws_conn_free(sl_ws_conn *ws)
{
    if (!ws)
        return;
    wslay_event_context_free(ws->ctx);
    free(ws->msg);
    free(ws);
}

int sl_ws_conn_flush(sl_ws_conn *ws)
{
    ws->out_err = 0;
    int r = wslay_event_send(ws->ctx);
    if (ws->out_err)
        return ws->out_err;
    if (r == WSLAY_ERR_NOMEM)
        return SL_ERR_NOMEM;
    return r == 0 ? SL_OK : SL_ERR_STATE;
}

static int map_queue_err(int r)
{
    switch (r) {
    case 0:
        return SL_OK;
    case WSLAY_ERR_NOMEM:
        return SL_ERR_NOMEM;
    case WSLAY_ERR_NO_MORE_MSG:
        return SL_ERR_CLOSED;
    default:
        return SL_ERR_INVAL;
    }
}

/* Flushes first so that messages queued earlier precede the close. */
static int queue_close(sl_ws_conn *ws, uint16_t code, const uint8_t *reason, size_t len)
{
    int rv = sl_ws_conn_flush(ws);
    if (rv != SL_OK)
        return rv;
    return map_queue_err(wslay_event_queue_close(ws->ctx, code, reason, len));
}

/* A protocol failure: answer with close(code), stop reading. */
static int fail(sl_ws_conn *ws, uint16_t code)
{
    queue_close(ws, code, NULL, 0);
    wslay_event_shutdown_read(ws->ctx);
    report_close(ws, code);
    ws->err = code == WSLAY_CODE_MESSAGE_TOO_BIG ? SL_ERR_TOO_LARGE : SL_ERR_PROTO;
    return ws->err;
}

/* wslay stopped reading without a close from the peer: it failed the
 * connection itself (invalid UTF-8 in text: 1007; bad close code: 1002).
 * The code it chose is only visible once its close is sent. */
static int wslay_failed(sl_ws_conn *ws)
{
    uint16_t code = WSLAY_CODE_PROTOCOL_ERROR;
    if (sl_ws_conn_flush(ws) == SL_OK && wslay_event_get_close_sent(ws->ctx) &&
        wslay_event_get_status_code_sent(ws->ctx) != WSLAY_CODE_NO_STATUS_RCVD)
        code = wslay_event_get_status_code_sent(ws->ctx);
    report_close(ws, code);
    ws->err = code == WSLAY_CODE_MESSAGE_TOO_BIG ? SL_ERR_TOO_LARGE : SL_ERR_PROTO;
    return ws->err;
}

static int feed(sl_ws_conn *ws, const uint8_t *data, size_t len)
{
    ws->in = data;
    ws->in_len = len;
    int r = 0;
    while (ws->in_len > 0 && wslay_event_get_read_enabled(ws->ctx)) {
        size_t before = ws->in_len;
        r = wslay_event_recv(ws->ctx);
        if (r != 0 || ws->in_len == before)
            break;
    }
    ws->in = NULL;
    ws->in_len = 0;
    if (r == WSLAY_ERR_NOMEM) {
        ws->err = SL_ERR_NOMEM;
        return ws->err;
    }
    return r == 0 ? SL_OK : wslay_failed(ws);
}

/* Gives wslay bytes of a frame it handles. Sets *stop when reading ends
 * here: an error, or wslay stopped (the peer's close, or its own failure). */
static int to_wslay(sl_ws_conn *ws, const uint8_t *p, size_t n, bool *stop)
{
    int rv = feed(ws, p, n);
    if (rv != SL_OK) {
        *stop = true;
        return rv;
    }
    if (!wslay_event_get_read_enabled(ws->ctx)) {
        *stop = true;
        return wslay_event_get_close_received(ws->ctx) ? SL_OK : wslay_failed(ws);
    }
    return SL_OK;
}

/* The end of a binary frame's payload: a final one completes the message. */
static void fast_frame_end(sl_ws_conn *ws)
{
    static uint8_t empty[1];
    if (!(ws->scan.hdr[0] >> 7))
        return;
    size_t n = ws->msg_have;
    ws->msg_have = 0;
    if (ws->cb.on_msg)
        ws->cb.on_msg(ws->arg, 0, n ? ws->msg : empty, n);
    if (ws->msg_cap > WS_KEEP_BUF) {
        free(ws->msg);
        ws->msg = NULL;
        ws->msg_cap = 0;
    }
}

/* Room for a binary frame of plen more bytes. The scan has checked the
 * message against max_message, so this allocates no more than wslay would
 * (it, too, allocates a frame's announced length at its header). */
static int fast_reserve(sl_ws_conn *ws, uint64_t plen)
{
    size_t need = ws->msg_have + (size_t)plen;
    if (need <= ws->msg_cap)
        return SL_OK;
    size_t cap = ws->msg_cap * 2;
    if (cap < need || cap > ws->max_message)
        cap = need;
    uint8_t *m = realloc(ws->msg, cap);
    if (!m)
        return SL_ERR_NOMEM;
    ws->msg = m;
    ws->msg_cap = cap;
    return SL_OK;
}

/* A complete header: wslay gets it, or a binary frame starts here. */
static int frame_start(sl_ws_conn *ws, bool *stop)
{
    frame_scan *s = &ws->scan;
    size_t hlen = s->need;
    start_payload(s);
    if (!s->fast)
        return to_wslay(ws, s->hdr, hlen, stop);
    if ((s->hdr[0] & 0xf) == WSLAY_BINARY_FRAME)
        ws->msg_have = 0;
    if (fast_reserve(ws, s->plen) != SL_OK) {
        *stop = true;
        ws->err = SL_ERR_NOMEM;
        return ws->err;
    }
    if (s->remain == 0)
        fast_frame_end(ws);
    return SL_OK;
}

/* n payload bytes of a binary frame, unmasked into the message. */
static void fast_payload(sl_ws_conn *ws, const uint8_t *p, size_t n)
{
    frame_scan *s = &ws->scan;
    uint8_t *dst = ws->msg + ws->msg_have;
    if (s->client)
        memcpy(dst, p, n); /* server frames are not masked */
    else
        sl_ws_unmask(dst, p, n, s->hdr + s->len_end, s->plen - s->remain);
    ws->msg_have += n;
    s->remain -= n;
    if (s->remain == 0)
        fast_frame_end(ws);
}

int sl_ws_conn_recv(sl_ws_conn *ws, const uint8_t *data, size_t len)
{
    if (ws->err)
        return ws->err;
    if (!wslay_event_get_read_enabled(ws->ctx))
        return SL_OK; /* after the peer's close: drop whatever follows */
    frame_scan *s = &ws->scan;
    size_t i = 0;
    bool stop = false;
    while (i < len) {
        int rv = SL_OK;
        if (s->remain > 0) {
            size_t n = s->remain < len - i ? (size_t)s->remain : len - i;
            if (s->fast) {
                fast_payload(ws, data + i, n);
            } else {
                s->remain -= n;
                rv = to_wslay(ws, data + i, n, &stop);
            }
            i += n;
        } else {
            uint16_t code = scan_hdr_byte(s, ws->max_message, data[i++]);
            if (code)
                return fail(ws, code);
            if (s->have == s->need)
                rv = frame_start(ws, &stop);
        }
        if (stop || rv != SL_OK)
            return rv;
    }
    return SL_OK;
}

/* The frame header of one unfragmented message of n payload bytes; the
 * mask bit is set when mask is true (the key follows the header). Returns
 * its length. */
static size_t frame_header(uint8_t h[10], int opcode, uint64_t n, bool mask)
{
    size_t hl = 2;
    h[0] = 0x80 | (uint8_t)opcode; /* FIN */
    if (n < 126) {
        h[1] = (uint8_t)n;
    } else if (n <= 0xFFFF) {
        h[1] = 126;
        h[2] = (uint8_t)(n >> 8);
        h[3] = (uint8_t)n;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)(n >> (56 - 8 * i));
        hl = 10;
    }
    if (mask)
        h[1] |= 0x80;
    return hl;
}

/* Client role: header, a fresh key from the CSPRNG pool, then prefix and
 * data masked into one reserved run of out. */
static int send_masked(sl_ws_conn *ws, int opcode, uint8_t prefix, const uint8_t *data, size_t len)
{
    uint8_t h[14];
    size_t hl = frame_header(h, opcode, (uint64_t)len + 1, true);
    if (draw_mask(ws, h + hl, 4) != 0)
        return SL_ERR_WOULDBLOCK; /* wslay's path fails it the same way */
    const uint8_t *key = h + hl;
    hl += 4;
    size_t avail;
    uint8_t *p = sl_bufq_reserve(ws->out, hl + 1 + len, &avail);
    if (!p)
        return SL_ERR_NOMEM;
    memcpy(p, h, hl);
    p[hl] = prefix ^ key[0];
    if (len)
        sl_ws_unmask(p + hl + 1, data, len, key, 1);
    sl_bufq_commit(ws->out, hl + 1 + len);
    return SL_OK;
}

int sl_ws_conn_send_msg(sl_ws_conn *ws, int opcode, const uint8_t *data, size_t len)
{
    if (opcode != WSLAY_BINARY_FRAME && opcode != WSLAY_TEXT_FRAME)
        return SL_ERR_INVAL;
    struct wslay_event_msg m = {(uint8_t)opcode, data, len};
    return map_queue_err(wslay_event_queue_msg(ws->ctx, &m));
}

/* A data message is framed straight into out (RFC 6455 §5.2, minimal
 * length encoding) with one copy, instead of wslay's copy into its queue
 * and send_cb's copy into out; a client's payload is masked on the way, 8
 * bytes a step (wslay masks byte by byte). Only when wslay holds nothing,
 * so frames keep their order. */
int sl_ws_conn_send_prefixed(sl_ws_conn *ws, int opcode, uint8_t prefix, const uint8_t *data,
                             size_t len)
{
    if (ws->err || ws->out_err || (opcode != WSLAY_BINARY_FRAME) ||
        wslay_event_get_queued_msg_count(ws->ctx) > 0 || !wslay_event_get_write_enabled(ws->ctx) ||
        wslay_event_get_close_sent(ws->ctx))
        return SL_ERR_WOULDBLOCK;
    if (ws->scan.client)
        return send_masked(ws, opcode, prefix, data, len);
    uint8_t h[10];
    size_t hl = frame_header(h, opcode, (uint64_t)len + 1, false);
    size_t avail;
    uint8_t *p = sl_bufq_reserve(ws->out, hl + 1, &avail);
    if (!p)
        return SL_ERR_NOMEM;
    memcpy(p, h, hl);
    p[hl] = prefix;
    sl_bufq_commit(ws->out, hl + 1);
    return len ? sl_bufq_append(ws->out, data, len) : SL_OK;
}

int sl_ws_conn_ping(sl_ws_conn *ws)
{
    struct wslay_event_msg m = {WSLAY_PING, NULL, 0};
    return map_queue_err(wslay_event_queue_msg(ws->ctx, &m));
}

int sl_ws_conn_close(sl_ws_conn *ws, uint16_t code, const char *reason)
{
    size_t len = reason ? strlen(reason) : 0;
    if (len > WS_CLOSE_REASON_MAX) {
        len = WS_CLOSE_REASON_MAX;
        while (len > 0 && ((uint8_t)reason[len] & 0xc0) == 0x80)
            len--; /* do not cut a UTF-8 sequence */
    }
    return queue_close(ws, code, (const uint8_t *)reason, len);
}

int sl_ws_conn_close_sent(const sl_ws_conn *ws)
{
    return wslay_event_get_close_sent(ws->ctx);
}

size_t sl_ws_conn_queued(const sl_ws_conn *ws)
{
    return wslay_event_get_queued_msg_length(ws->ctx);
}

int sl_ws_conn_close_received(const sl_ws_conn *ws)
{
    return wslay_event_get_close_received(ws->ctx);
}
