/* A WebSocket connection (sl_ws_conn) plus what its callbacks saw, and a
 * frame writer: shared by the server-role and client-role tests. */
#ifndef TEST_WS_REC_H
#define TEST_WS_REC_H

#include <stddef.h>
#include <stdint.h>

#include "ws/ws_conn.h"

#define MAX_MSGS 8
#define REC_MAX_MSG 1024 /* the largest message a rec keeps */

typedef struct rec {
    sl_ws_conn *ws;
    sl_bufq out;
    int nmsg;
    int is_text[MAX_MSGS];
    size_t len[MAX_MSGS];
    uint8_t data[MAX_MSGS][REC_MAX_MSG];
    int nclose, npong;
    uint16_t code;
    int rv;          /* first non-OK result of sl_ws_conn_recv */
    int flush_in_cb; /* callbacks flush, as a server loop may */
} rec;

/* The callbacks a rec is opened with (for tests wrapping them). */
void rec_on_msg(void *arg, int is_text, uint8_t *data, size_t len);
void rec_on_close(void *arg, uint16_t code);

/* A server-role (client 0) or client-role connection taking messages of up
 * to max bytes. */
void rec_open(rec *r, int client, size_t max);
void rec_close(rec *r);
/* Feeds p to r's connection, keeping the first error in r->rv. */
void feed(rec *r, const uint8_t *p, size_t n);

/* Writes one frame to p, masked with key when key is not NULL; returns its
 * length (at most len + 14). */
size_t ws_frame(uint8_t *p, int fin, int op, const void *payload, size_t len, const uint8_t *key);

#endif
