/* A test application around one sl_spdy_session: it logs the callbacks as
 * text, decodes its own output as its peer would, and builds peer input.
 * Shared by the SPDY session and flow-control tests. */
#ifndef TEST_SPDY_APP_H
#define TEST_SPDY_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "util/bufq.h"
#include "spdy/spdy_session.h"

#define MAXID 64

/* The peer's compression context (client -> server direction). */
typedef struct tcomp {
    z_stream z;
} tcomp;

typedef struct app {
    sl_spdy_session *s;
    sl_bufq out;
    char ev[16384]; /* callback log */
    size_t evlen;
    bool auto_reply;    /* SYN_REPLY (empty headers) from on_stream_open */
    bool auto_consume;  /* consume everything on_data gives ... */
    bool stall[MAXID];  /* ... except on these streams */
    bool reset_in_data; /* reset the stream from on_data (re-entrancy) */
    sl_bufq rx[MAXID];  /* received payload per stream id */
    /* decoding this app's own output, as its peer would */
    sl_spdy_reader rd;
    sl_spdy_inflater inf;
    uint8_t dflags;
    uint32_t did;
    size_t dlen;
    /* test scaffolding: the peer's compressor, a scratch frame queue */
    tcomp t;
    bool t_ready;
    sl_bufq q;
} app;

app *app_new(sl_spdy_role role, const sl_spdy_limits *lim);
void app_free(app *a);
/* A server with stream 1 open and replied (its SYN_REPLY already read). */
app *server_with_stream(const sl_spdy_limits *lim);

/* Takes the callback log (and clears it), e.g. "open 1 streamtype=x;fin 1;". */
const char *events(app *a);
/* Takes a's output (the caller frees it). */
uint8_t *take_out(app *a, size_t *len);
/* Decodes and consumes everything in a->out; returns e.g.
 * "SYN_REPLY 1 f0|DATA 3 f0 3|PING 1|". */
const char *wire(app *a);
/* The output must be exactly these bytes; it is then decoded (and
 * consumed) like any other so the decoder's zlib context stays in step. */
void expect_out(app *a, const uint8_t *want, size_t want_len);

void tc_init(tcomp *t);
/* Compresses raw with a sync flush into out; returns the length. */
size_t tc_block(tcomp *t, const uint8_t *raw, size_t n, uint8_t *out, size_t cap);
/* Raw NV block from name, value, ..., NULL (no checks: may hold duplicates). */
size_t nv_raw(uint8_t *buf, ...);
/* A stored deflate block and a sync flush (an empty stored block): a valid
 * continuation of any zlib stream that was sync-flushed, so it can follow
 * spdystream's golden blocks. Writes n + 10 bytes. */
size_t stored_block(const uint8_t *raw, size_t n, uint8_t *out);
/* A SYN_STREAM whose block comes from t, appended to q. */
void syn(sl_bufq *q, tcomp *t, uint32_t id, uint8_t flags, const uint8_t *raw, size_t n);
void syn_type(sl_bufq *q, tcomp *t, uint32_t id, const char *type);

/* Feeds the bytes of q (consumed) to a's session. */
int feedq(app *a, sl_bufq *q);
/* Feeds an exact-size copy of p (so ASan sees over-reads). */
int feed(app *a, const uint8_t *p, size_t len);
/* A DATA frame of len zero bytes on id; its recv must return want. */
void feed_data(app *a, uint32_t id, uint8_t flags, size_t len, int want);
/* Moves bytes both ways until both sides are quiet. */
void pump(app *c, app *s, size_t high_water);
/* Takes what stream id received as a string (at most cap - 1 bytes). */
size_t rx_take(app *a, uint32_t id, char *buf, size_t cap);

#endif
