/* Private state of sl_cpf, shared by cpf.c (SPDY, tunnel) and
 * cpf_legacy.c (WebSocket channels). */
#ifndef SL_CLIENT_CPF_INT_H
#define SL_CLIENT_CPF_INT_H

#include "client/cpf.h"
#include "spdy/spdy_session.h"
#include "ws/ws_conn.h"

#define SL_CPF_LEGACY_MAX_PORTS 128 /* channels 2i, 2i+1 must fit in a byte */

struct sl_cpf_conn {
    sl_cpf_conn *next;
    void *user;
    uint16_t port;
    /* SPDY */
    uint32_t data_id, error_id;
    bool data_gone, error_gone, data_reset, remote_eof;
    char err[SL_CPF_MAX_ERROR + 1];
    size_t err_len;
    /* legacy */
    int slot;         /* -1 while waiting for the port's announcement */
    sl_bufq held_out; /* bytes to send before the port was announced */
};

typedef struct legacy_slot {
    uint16_t port;
    bool have_data_prefix, have_error_prefix, used;
    uint8_t pre_data[2], pre_error[2]; /* prefix bytes, they may arrive split */
    uint8_t npre_data, npre_error;
    sl_cpf_conn *conn;
    sl_bufq held; /* data before a connection was bound */
    char err[SL_CPF_MAX_ERROR + 1];
    size_t err_len;
} legacy_slot;

struct sl_cpf {
    sl_cpf_params p;
    sl_cpf_callbacks cb;
    void *arg;
    sl_bufq *out;
    sl_cpf_conn *conns;
    bool ended, closing;
    /* SPDY and tunnel */
    sl_spdy_session *s;
    uint64_t next_request_id;
    bool goaway;
    /* WebSocket (tunnel and legacy) */
    sl_ws_conn *ws;
    sl_bufq tbuf; /* tunnel: SPDY bytes not yet in messages */
    uint16_t close_code;
    bool close_seen;
    /* legacy */
    legacy_slot slots[SL_CPF_LEGACY_MAX_PORTS];
    size_t nslots;
    size_t held;
    uint8_t *enc;
    size_t enc_cap;
};

/* cpf.c */
void sl_cpf_end_session(sl_cpf *c, int kind, const char *msg);
/* Unlinks k, reports on_conn_end and frees it. */
void sl_cpf_end_conn(sl_cpf *c, sl_cpf_conn *k, const char *err, bool aborted);
void sl_cpf_conn_free(sl_cpf_conn *k);
void sl_cpf_unlink(sl_cpf *c, sl_cpf_conn *k);
int sl_cpf_ws_send(sl_cpf *c, uint8_t ch, const uint8_t *data, size_t len);

/* cpf_legacy.c */
void sl_cpf_legacy_msg(sl_cpf *c, uint8_t *data, size_t len);
int sl_cpf_legacy_open(sl_cpf *c, sl_cpf_conn *k);
/* Delivers what was held for k's port (data, error text). */
void sl_cpf_legacy_ready(sl_cpf *c, sl_cpf_conn *k);
int sl_cpf_legacy_send(sl_cpf *c, sl_cpf_conn *k, const uint8_t *data, size_t len);
void sl_cpf_legacy_detach(sl_cpf *c, sl_cpf_conn *k);
/* The session ended cleanly (true) or not: every bound connection ends. */
void sl_cpf_legacy_end_all(sl_cpf *c, const char *err, bool aborted);
void sl_cpf_legacy_fini(sl_cpf *c);

#endif
