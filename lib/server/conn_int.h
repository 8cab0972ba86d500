/* The inside of sl_conn, shared by conn.c (the socket) and handoff.c (a
 * connection handed to another server). */
#ifndef SL_CONN_INT_H
#define SL_CONN_INT_H

#include "http/http_head.h"
#include "io/uvout.h"
#include "server/conn.h"
#include "server/server_impl.h"

/* A finishing connection whose peer reads nothing for this long is cut. */
#define SL_CONN_FINISH_TIMEOUT_MS 30000u
/* After our last byte, wait this long for the peer's EOF before closing, so
 * that unread input never turns into a RST that destroys our last bytes. */
#define SL_CONN_LINGER_MS 5000u
/* How often a connection whose reads are paused checks that its peer is
 * still there. */
#define SL_CONN_PAUSED_PROBE_MS 1000u
/* Bytes of a session's container or pod id kept for the observer. */
#define SL_SESSION_TARGET_MAX 128

typedef enum conn_state {
    CONN_HEAD,      /* reading the request head */
    CONN_HANDOFF,   /* handed over; waiting for sl_handoff_done */
    CONN_UPGRADED,  /* a protocol session owns the bytes */
    CONN_FINISHING, /* writing the last bytes, then close */
} conn_state;

struct sl_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* head timeout */
    sl_uvout wout;
    uv_shutdown_t sreq;
    sl_server *srv;
    sl_server_config cfg; /* this connection's limits */
    sl_conn *prev, *next;
    conn_state state;
    sl_http_head_parser head;
    sl_bufq out;
    bool reading, paused, closing, shutting;
    bool keep_raw; /* the server hands connections off: keep raw */
    const sl_conn_proto *proto;
    void *ps;
    int open_handles;
    uint8_t *raw; /* bytes read before the upgrade, kept for a hand-off */
    size_t raw_len, raw_cap;
    sl_stream_req *adopted; /* the request an adopted connection came with */
    /* hand-off in flight (handoff.c) */
    sl_handoff *handoff;
    sl_stream_req *hreq;
    size_t hleft; /* bytes at the end of raw that followed the head */
    /* the session, for the observer (sl_conn_describe) */
    sl_stream_kind kind;
    const char *transport, *protocol;
    char target[SL_SESSION_TARGET_MAX + 1];
    uint64_t bytes_out, bytes_in, upgraded_ms;
    const char *end_reason; /* set by the first cause seen */
};

/* Sets TCP keepalive (and the user timeout) on an accepted socket. */
void sl_conn_set_keepalive(uv_tcp_t *tcp, const sl_server_config *cfg);
/* Closes the socket and frees c once its handles are closed. */
void sl_conn_close(sl_conn *c);
/* Reads again after a hand-off came back (SL_HANDOFF_LOCAL). */
void sl_conn_resume_reading(sl_conn *c);
/* c closes while a hand-off is in flight: the handle outlives it. */
void sl_conn_handoff_gone(sl_conn *c);

#endif
