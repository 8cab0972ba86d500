/* The `session` message of the sluiced <-> sluice-mon protocol
 * (docs/mon-protocol.md): a streaming connection handed to the pod's
 * monitor with the request its token stood for and the session limits of
 * sluiced's configuration. Shared by both sides. */
#ifndef SL_MON_SESSION_H
#define SL_MON_SESSION_H

#include <jansson.h>
#include <stdint.h>

#include "sluice/server.h"

/* Bytes read from a connection before its hand-off that the monitor
 * accepts (sluiced reads at most max_head_size plus one 64 KiB read). */
#define SL_MON_MAX_HANDOFF_BYTES (1024u * 1024)
/* Elements of an exec's cmd, ports of a port-forward. */
#define SL_MON_SESSION_MAX_ARGS 4096
#define SL_MON_SESSION_MAX_PORTS 128
/* Default of a port-forward connect inside the pod (ms); the hand-off may
 * carry sluiced's portforward-connect-timeout-ms instead. */
#define SL_MON_PF_CONNECT_TIMEOUT_MS 10000u

/* The limits a hand-off carries. */
typedef struct sl_mon_session_limits {
    sl_server_config stream;        /* the session fields of sl_server_adopt, max_sessions */
    uint32_t pf_connect_timeout_ms; /* a port-forward connect gives up after this */
    uint32_t attach_backlog;        /* bytes an attach may fall behind; 0: the monitor's */
    uint32_t exec_max_concurrent;   /* an exec's "max_concurrent" (mon_proto.h) */
    uint32_t exec_queue_max;        /* an exec's "queue_max" */
    uint32_t exec_stdin_pipe_size;  /* an exec's "stdin_pipe_size" */
    bool exec_native;               /* an exec's "exec_mode": native (else runc) */
} sl_mon_session_limits;

/* {"kind": "exec"|"attach"|"portforward", ...the request's fields}. NULL
 * on ENOMEM or an unknown kind. */
json_t *sl_mon_session_request_json(const sl_stream_request *r);

/* Fills *out from j; its strings point into j (valid while j lives), its
 * cmd and ports arrays are malloc'd (sl_mon_session_request_fini).
 * Returns 0, or -1 with *why (static text). */
int sl_mon_session_request_parse(const json_t *j, sl_stream_request *out, const char **why);
void sl_mon_session_request_fini(sl_stream_request *r);

json_t *sl_mon_session_limits_json(const sl_mon_session_limits *l);
/* Starts from the libsluice defaults; fields present in j replace them.
 * Returns 0, or -1 with *why. */
int sl_mon_session_limits_parse(const json_t *j, sl_mon_session_limits *l, const char **why);

#endif
