/* Port-forward over the legacy WebSocket channel protocol, client side
 * (protocol notes §8.1): port i's data on channel 2i, its error text on
 * 2i+1, each channel first carrying the port as 2 bytes little-endian. */
#include <stdlib.h>
#include <string.h>

#include "client/cpf_int.h"

/* Client bytes go out in messages of at most this (client-go's copy size). */
#define LEGACY_MSG_MAX (32u * 1024)

static legacy_slot *slot_of(sl_cpf *c, uint8_t ch)
{
    size_t i = ch / 2;
    if (i >= SL_CPF_LEGACY_MAX_PORTS)
        return NULL;
    if (i >= c->nslots)
        c->nslots = i + 1;
    return &c->slots[i];
}

static bool announced(const legacy_slot *s)
{
    return s->have_data_prefix || s->have_error_prefix;
}

static int send_data(sl_cpf *c, int slot, const uint8_t *data, size_t len)
{
    while (len > 0) {
        size_t n = len < LEGACY_MSG_MAX ? len : LEGACY_MSG_MAX;
        int rc = sl_cpf_ws_send(c, (uint8_t)(2 * slot), data, n);
        if (rc != SL_OK)
            return rc == SL_ERR_CLOSED ? SL_ERR_CLOSED : rc;
        data += n;
        len -= n;
    }
    return SL_OK;
}

/* Sends what the connection queued before its port was known. */
static void send_held_out(sl_cpf *c, sl_cpf_conn *k)
{
    uint8_t buf[4096];
    while (sl_bufq_len(&k->held_out) > 0) {
        size_t n = sl_bufq_copyout(&k->held_out, buf, sizeof(buf));
        if (send_data(c, k->slot, buf, n) != SL_OK)
            break;
        sl_bufq_consume(&k->held_out, n);
    }
}

static void bind_slot(sl_cpf *c, sl_cpf_conn *k, int idx)
{
    legacy_slot *s = &c->slots[idx];
    s->used = true;
    s->conn = k;
    k->slot = idx;
    send_held_out(c, k);
}

/* A port was announced: a connection waiting for it takes it. */
static void bind_waiting(sl_cpf *c, int idx)
{
    legacy_slot *s = &c->slots[idx];
    for (sl_cpf_conn *k = c->conns; k && !s->used; k = k->next) {
        if (k->slot < 0 && k->port == s->port) {
            bind_slot(c, k, idx);
            sl_cpf_legacy_ready(c, k);
            return;
        }
    }
}

/* Consumes the 2-byte port prefix of a channel; returns true once the
 * channel has it. */
static bool take_prefix(sl_cpf *c, legacy_slot *s, bool err, const uint8_t **p, size_t *len)
{
    bool *have = err ? &s->have_error_prefix : &s->have_data_prefix;
    uint8_t *pre = err ? s->pre_error : s->pre_data;
    uint8_t *n = err ? &s->npre_error : &s->npre_data;
    while (!*have && *len > 0) {
        pre[(*n)++] = **p;
        (*p)++;
        (*len)--;
        if (*n == 2) {
            bool first = !announced(s);
            *have = true;
            if (first) {
                s->port = (uint16_t)(pre[0] | pre[1] << 8);
                bind_waiting(c, (int)(s - c->slots));
            }
        }
    }
    return *have;
}

static void error_text(sl_cpf *c, legacy_slot *s, const uint8_t *p, size_t len)
{
    size_t n = len < SL_CPF_MAX_ERROR - s->err_len ? len : SL_CPF_MAX_ERROR - s->err_len;
    memcpy(s->err + s->err_len, p, n);
    s->err_len += n;
    s->err[s->err_len] = '\0';
    if (s->conn) {
        sl_cpf_conn *k = s->conn;
        s->conn = NULL;
        sl_cpf_end_conn(c, k, s->err, false); /* the server gives this port up */
    }
}

void sl_cpf_legacy_msg(sl_cpf *c, uint8_t *data, size_t len)
{
    if (len == 0)
        return;
    uint8_t ch = data[0];
    const uint8_t *p = data + 1;
    len--;
    legacy_slot *s = slot_of(c, ch);
    if (!s || !take_prefix(c, s, ch & 1, &p, &len) || len == 0)
        return;
    if (ch & 1) {
        error_text(c, s, p, len);
    } else if (s->conn) {
        if (c->cb.on_data)
            c->cb.on_data(c->arg, s->conn->user, p, len);
    } else if (!s->used && !s->err_len) {
        if (sl_bufq_append(&s->held, p, len) == SL_OK)
            c->held += len;
    }
    /* else: the port's connection is gone; its bytes have nowhere to go */
}

int sl_cpf_legacy_open(sl_cpf *c, sl_cpf_conn *k)
{
    for (size_t i = 0; i < c->nslots; i++) {
        legacy_slot *s = &c->slots[i];
        if (!announced(s) || s->port != k->port)
            continue;
        if (s->used)
            return SL_ERR_FULL; /* one connection per port per session */
        bind_slot(c, k, (int)i);
        return SL_OK;
    }
    for (sl_cpf_conn *o = c->conns; o; o = o->next)
        if (o->slot < 0 && o->port == k->port)
            return SL_ERR_FULL;
    return SL_OK; /* waits for the announcement */
}

void sl_cpf_legacy_ready(sl_cpf *c, sl_cpf_conn *k)
{
    if (k->slot < 0)
        return;
    legacy_slot *s = &c->slots[k->slot];
    uint8_t buf[4096];
    while (s->conn == k && sl_bufq_len(&s->held) > 0) {
        size_t n = sl_bufq_copyout(&s->held, buf, sizeof(buf));
        sl_bufq_consume(&s->held, n);
        c->held -= n;
        if (c->cb.on_data)
            c->cb.on_data(c->arg, k->user, buf, n);
    }
    if (s->conn == k && s->err_len) {
        s->conn = NULL;
        sl_cpf_end_conn(c, k, s->err, false);
    }
}

int sl_cpf_legacy_send(sl_cpf *c, sl_cpf_conn *k, const uint8_t *data, size_t len)
{
    if (k->slot < 0)
        return sl_bufq_append(&k->held_out, data, len);
    if (c->slots[k->slot].conn != k)
        return SL_ERR_CLOSED;
    return send_data(c, k->slot, data, len);
}

void sl_cpf_legacy_detach(sl_cpf *c, sl_cpf_conn *k)
{
    if (k->slot >= 0 && c->slots[k->slot].conn == k)
        c->slots[k->slot].conn = NULL;
}

void sl_cpf_legacy_end_all(sl_cpf *c, const char *err, bool aborted)
{
    while (c->conns) {
        sl_cpf_conn *k = c->conns;
        const char *why = err;
        if (k->slot < 0 && !why)
            why = "the server did not forward this port";
        sl_cpf_legacy_detach(c, k);
        sl_cpf_end_conn(c, k, why, aborted);
    }
}

void sl_cpf_legacy_fini(sl_cpf *c)
{
    for (size_t i = 0; i < SL_CPF_LEGACY_MAX_PORTS; i++)
        sl_bufq_fini(&c->slots[i].held);
    c->held = 0;
}
