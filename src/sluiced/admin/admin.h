/* sluiced's admin listener: plain HTTP/1.1 on a TCP address (loopback by
 * default, off unless admin-listen is set), for probes and Prometheus:
 *
 *   GET /healthz   200 "ok": the loop answers
 *   GET /readyz    200 "ok" once ready (ops->ready), else 503 and why
 *   GET /metrics   200, the Prometheus text format (ops->metrics)
 *
 * HEAD works too; another method is 405, another path 404. One request per
 * connection (Connection: close). Bounded: SL_ADMIN_MAX_CONNS connections
 * at once (more are closed at accept), a request head of at most
 * SL_ADMIN_MAX_HEAD bytes (else 431); a connection is closed
 * SL_ADMIN_TIMEOUT_MS after accept, answered or not. Runs on the loop
 * thread. */
#ifndef SL_ADMIN_H
#define SL_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "sys_error.h"

#define SL_ADMIN_MAX_CONNS 16
#define SL_ADMIN_MAX_HEAD 8192
#define SL_ADMIN_TIMEOUT_MS 5000
/* Bytes of a readiness reason. */
#define SL_ADMIN_WHY_MAX 256

typedef struct sl_admin_ops {
    /* The /metrics body: a malloc'd text in *text (the caller frees it).
     * Returns 0, or -1 (answered 500). */
    int (*metrics)(void *arg, char **text, size_t *len);
    /* True when ready; else false with a reason in why (cap bytes). */
    bool (*ready)(void *arg, char *why, size_t cap);
    void *arg;
} sl_admin_ops;

typedef struct sl_admin sl_admin;

/* Listens on address (an IPv4 or IPv6 literal) and port (0: any).
 * ops is copied. Returns 0 with *out, or -1 (*e). */
int sl_admin_start(uv_loop_t *loop, const char *address, uint16_t port, const sl_admin_ops *ops,
                   sl_admin **out, sl_error *e);
/* The port it listens on. */
uint16_t sl_admin_port(const sl_admin *a);
/* Stops listening, closes every connection and frees a once all handles
 * are closed; then cb(arg) (may be NULL). NULL a: cb runs at once. */
void sl_admin_close(sl_admin *a, void (*cb)(void *arg), void *arg);

#endif
