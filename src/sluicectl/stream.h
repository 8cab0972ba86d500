/* The exec/attach session runner shared by `exec` and `attach`: CRI
 * Exec/Attach for a URL, the libsluice streaming client on a libuv loop,
 * raw terminal and resize, WebSocket→SPDY fallback with a fresh URL, and
 * attach's detach keys. */
#ifndef SLUICECTL_STREAM_H
#define SLUICECTL_STREAM_H

#include <sluice/client.h>

#include "ctl.h"

#define CTL_DETACH_MAX 16 /* bytes of a detach sequence */
#define CTL_DEFAULT_DETACH_KEYS "ctrl-p,ctrl-q"

typedef struct ctl_stream_req {
    bool attach;        /* Attach instead of Exec */
    const char *ctr_id; /* resolved */
    char *const *cmd;   /* exec: argv */
    size_t ncmd;
    bool tty, stdin_on;
    sl_transport transport; /* SPDY or WEBSOCKET */
    /* attach: the detach sequence (n = 0: none) */
    uint8_t detach[CTL_DETACH_MAX];
    size_t ndetach;
} ctl_stream_req;

/* Parses "ctrl-p,ctrl-q" (docker's format; "" disables). -1 if malformed. */
int ctl_parse_detach_keys(const char *s, uint8_t *out, size_t *n);
/* Parses -r spdy|websocket (pf: also legacy when allow_legacy). */
int ctl_parse_transport(ctl *c, const char *val, bool allow_legacy, sl_transport *out);

/* Runs the session to its end. Returns the remote exit code, 0 after a
 * detach, or -1 with e saying why the session failed (the terminal is
 * restored by then, for the caller to print it). */
int ctl_stream_run(ctl *c, const ctl_stream_req *r, sl_error *e);

/* Explains a streaming-client error in one line with what to do. */
void ctl_stream_explain(const sl_client_error *e, char *out, size_t outlen);

#endif
