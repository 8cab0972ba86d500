/* sluice-kube: a small Kubernetes API front (apiserver + kubelet for one
 * node) over any CRI runtime. It answers discovery, pods get/list and logs
 * itself, and for exec/attach/portforward calls CRI and proxies the upgraded
 * connection to the runtime's streaming URL byte for byte, as the kubelet
 * does. One libuv loop; CRI calls (blocking) run on the loop's thread pool. */
#ifndef SK_KUBE_H
#define SK_KUBE_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "cri_client.h"
#include "http/http_head.h"
#include "util/bufq.h"
#include "io/uvout.h"

#define SK_DEFAULT_ADDRESS "127.0.0.1"
#define SK_DEFAULT_PORT 6443
#define SK_DEFAULT_ENDPOINT "unix:///run/sluice/sluice.sock"
#define SK_DEFAULT_CERT_DIR "/var/lib/sluice/kube" /* serving.crt, serving.key */
#define SK_TOKEN_ENV "SLUICE_KUBE_TOKEN"
#define SK_TOKEN_MAX 4096u           /* bytes of a token file */
#define SK_MAX_CONNS 512u            /* accepted connections at once */
#define SK_OUT_HIGH_WATER (1u << 20) /* queued output that pauses the other side */
#define SK_READ_BUF (64u * 1024)
#define SK_HEAD_TIMEOUT_MS 30000u  /* a request head must arrive within this */
#define SK_IDLE_TIMEOUT_MS 120000u /* keep-alive connection without a request */
#define SK_FINISH_TIMEOUT_MS 30000u
#define SK_LINGER_MS 5000u
#define SK_PENDING_MAX (256u * 1024) /* client bytes held while a request is worked on */
#define SK_CRI_TIMEOUT_MS 10000u
#define SK_CRI_POOL_MAX 8u
#define SK_MAX_QUERY_PARAMS 256u
#define SK_MAX_PORTS 64u
#define SK_LOG_POLL_MS 200u          /* follow: how often the file is re-read */
#define SK_LOG_STATE_CHECK_MS 1000u  /* follow: how often the container state is asked */
#define SK_LOG_MAX_RECORD (1u << 20) /* a longer CRI log line is cut */
#define SK_RETRY_AFTER_S 60

typedef struct sk_config {
    const char *address;
    int port;
    const char *endpoint; /* CRI endpoint */
    const char *token;    /* NULL: no authentication */
    bool tls;
    const char *cert_path; /* the serving certificate (PEM) */
    const char *key_path;  /* its key (PEM) */
    bool tls_given;        /* the operator's files, not the front's own pair */
    const char *node_name;
    /* TLS towards the runtime's https streaming URLs */
    const char *rt_ca_file, *rt_cert_file, *rt_key_file;
} sk_config;

typedef struct sk_server sk_server;
typedef struct sk_conn sk_conn;
typedef struct sk_tls sk_tls;
typedef struct sk_up sk_up;
typedef struct sk_logs sk_logs;

struct sk_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_signal_t sigint, sigterm;
    sk_config cfg;
    void *ssl_ctx;    /* SSL_CTX *, NULL when plain */
    void *rt_ssl_ctx; /* SSL_CTX * for the runtime's https streaming URLs */
    char runtime_name[64];
    int bound_port;
    sk_conn *conns;
    unsigned nconns;
    bool stopping;
    pthread_mutex_t pool_lock;
    sl_cri_client *pool[SK_CRI_POOL_MAX];
    unsigned npool;
};

/* ---- connections (conn.c) ---- */

typedef enum sk_conn_state {
    KC_HEAD,   /* reading a request head */
    KC_BUSY,   /* a request is being answered (work, proxy dial, log stream) */
    KC_SPLICE, /* upgraded: bytes go to the runtime as they come */
    KC_FINISH, /* writing the last bytes, then close */
} sk_conn_state;

struct sk_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    sl_uvout wout;
    uv_shutdown_t sreq;
    sk_server *srv;
    sk_conn *prev, *next;
    sk_conn_state state;
    sk_tls *tls;
    sl_http_head_parser head;
    bool head_init;
    sl_bufq pending; /* client bytes after the current head */
    sl_bufq out;     /* bytes for the socket (ciphertext with TLS) */
    bool closing, reading, read_paused, shutting, keep_alive, saw_eof;
    int refs; /* open handles + queued thread-pool jobs */
    char peer[64];
    char *rbuf;
    sk_up *up;     /* the runtime side while proxying */
    sk_logs *logs; /* a log stream in progress */
};

void sk_conn_accept(sk_server *srv);
/* Plain bytes towards the client (encrypted when TLS). */
int sk_conn_send(sk_conn *c, const void *data, size_t len);
void sk_conn_flush(sk_conn *c);
bool sk_conn_congested(const sk_conn *c);
void sk_conn_pause(sk_conn *c, bool pause);
/* The current response is complete: next request (keep-alive) or close. */
void sk_conn_done(sk_conn *c);
/* Write what is queued, then close. */
void sk_conn_finish(sk_conn *c);
void sk_conn_close(sk_conn *c);
void sk_conn_close_all(sk_server *srv);
/* Holds the connection's memory while a thread-pool job refers to it. */
void sk_conn_ref(sk_conn *c);
void sk_conn_unref(sk_conn *c);
/* True once the connection is gone (a finished job drops its answer). */
bool sk_conn_gone(const sk_conn *c);

/* ---- the runtime side of an upgrade (proxy.c) ---- */

/* Sends req (same method and headers) to the runtime's streaming url and,
 * on its 101, copies bytes both ways until either side ends. A runtime
 * answer >= 400 is passed back; anything else becomes a 500 Status. */
void sk_proxy_start(sk_conn *c, const sl_http_request *req, const char *url);
void sk_proxy_client_data(sk_conn *c, const uint8_t *data, size_t len);
void sk_proxy_client_drained(sk_conn *c);
void sk_proxy_client_eof(sk_conn *c);
void sk_proxy_conn_closed(sk_conn *c);

/* ---- exec / attach / portforward (stream.c) ---- */

typedef enum sk_stream_kind { SK_EXEC, SK_ATTACH, SK_PORTFORWARD } sk_stream_kind;

void sk_stream_handle(sk_conn *c, sk_stream_kind kind, const char *ns, const char *name,
                      const char *query);

/* ---- log streams (logs.c) ---- */

void sk_logs_handle(sk_conn *c, const char *ns, const char *name, const char *query);

void sk_logs_drained(sk_conn *c);
void sk_logs_conn_closed(sk_conn *c);

/* ---- responses (api.c) ---- */

/* A metav1.Status failure body (reason from the HTTP status). */
json_t *sk_status_json(int code, const char *message, const char *name, const char *kind);
/* Writes a complete JSON response and ends the request. Steals body. */
void sk_respond_json(sk_conn *c, int code, json_t *body, const char *extra_headers);
/* Status failure response. */
void sk_respond_status(sk_conn *c, int code, const char *message, const char *name,
                       const char *kind);
/* Writes a response head and body bytes (no JSON). */
void sk_respond_raw(sk_conn *c, int code, const char *content_type, const void *body, size_t len,
                    const char *extra_headers);
/* Routes one parsed request (conn state KC_BUSY). */
void sk_api_handle(sk_conn *c, const sl_http_request *req);

/* ---- thread-pool jobs and CRI clients (cri.c) ---- */

typedef struct sk_job sk_job;
struct sk_job {
    uv_work_t req;
    sk_conn *c;
    void (*run)(sk_job *j, sl_cri_client *cli); /* thread pool; cli may be NULL */
    void (*done)(sk_job *j);                    /* loop thread; c may be gone */
    void (*free)(sk_job *j);
    sl_error err; /* the job's CRI error: no client could be had, or a call failed */
};

/* Queues j (refs c). Returns 0 or -1 (j untouched). */
int sk_job_queue(sk_server *srv, sk_job *j);
/* The CRI connection of the pool for a job (connects when needed). */
sl_cri_client *sk_cri_get(sk_server *srv, sl_error *err);
void sk_cri_put(sk_server *srv, sl_cri_client *cli, bool broken);
void sk_cri_pool_free(sk_server *srv);
/* HTTP status for a CRI error, as the kubelet maps it (§2.5). */
int sk_cri_http_status(int code);
/* "rpc error: code = NotFound desc = ..." into out. */
void sk_cri_err_text(const sl_error *err, char *out, size_t len);

/* ---- utilities (util.c) ---- */

typedef struct sk_param {
    char *key, *value; /* percent-decoded */
} sk_param;

typedef struct sk_query {
    sk_param *p;
    size_t n;
} sk_query;

/* Parses a query string (NULL ok). Returns 0, or -1 when over the limit. */
int sk_query_parse(const char *q, sk_query *out);
void sk_query_free(sk_query *q);
/* First value of key or NULL. */
const char *sk_query_get(const sk_query *q, const char *key);
/* Go's strconv.ParseBool as the apiserver uses it; absent = def; bad = -1. */
int sk_query_bool(const sk_query *q, const char *key, bool def, bool *out);
/* RFC 3339 UTC, seconds ("2024-05-01T10:00:00Z") from unix nanoseconds. */
void sk_time_rfc3339(int64_t ns, char out[32]);
/* kubectl's human duration ("5m", "3h10m") of ns ago. */
void sk_age(int64_t ns, char out[32]);
int64_t sk_now_ns(void);

#endif
