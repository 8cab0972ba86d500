/* The runtime interface of libsluice.
 *
 * The runtime's only job is to start something; the library pumps the bytes
 * with back-pressure and reports the result to the client. All callbacks run
 * on the libuv loop thread of the server, and every sl_proc_* and
 * sl_pfconn_* call must be made from that thread too.
 *
 * Lifetime of one exec/attach session, seen from the runtime:
 *   1. ops->exec_start / ops->attach_start(rt, proc, req)
 *   2. the runtime calls sl_proc_started(proc, endpoints) once the process
 *      runs (now or later), or sl_proc_failed(proc, message)
 *   3. ops->resize(rt, proc, size) any number of times (tty only)
 *   4. the runtime calls sl_proc_exited(proc, code, NULL) when the process
 *      ends; the library sends the status after every output byte
 *   5. if the client vanishes first, ops->cancel(rt, proc) asks the runtime
 *      to end the process (an exec) or the session (an attach: the container
 *      goes on); it must still call sl_proc_exited later
 *   6. ops->release(rt, proc) is the last call: the handle is gone after it
 *
 * The end of the client's stdin (v5 CLOSE, SPDY FIN), once every byte the
 * client sent was written to the process:
 *   - exec: the library closes stdin_fd; with pty_fd it writes ^D (VEOF)
 *     into the terminal instead, which the process owns alone.
 *   - attach: the library closes stdin_fd (if the endpoints have one), never
 *     writes into pty_fd, and calls ops->attach_stdin_eof. The container's
 *     stdin and terminal outlive this client, so what the end means is the
 *     runtime's call. The kubelet's runtimes (containerd, Docker): with the
 *     container's stdin_once set and a non-tty attach, the container's stdin
 *     is closed and the session lasts until the container's output ends;
 *     otherwise the container's stdin stays open and the session ends: the
 *     runtime closes the output endpoints after the bytes meant for this
 *     client and calls sl_proc_exited(proc, 0, NULL). The library sends the
 *     status after every byte it read from the endpoints.
 * A client that vanishes without ending its stdin gets ops->cancel instead;
 * for an attach, that too is the end of this client's stdin.
 */
#ifndef SLUICE_RUNTIME_H
#define SLUICE_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sluice/common.h"

/* ---- the requests ----
 * A CRI ExecRequest, AttachRequest or PortForwardRequest. Each starts with
 * struct_size (the size rule of sluice/common.h), because the CRI grows its
 * requests and these must grow with them; a field is only ever added at
 * the end, and one added after the first version (0.3.0) that a smaller
 * struct_size lacks is taken as 0 / NULL / false unless its comment names
 * another default.
 *
 * Handed to the library (sl_server_get_exec/_attach/_portforward, inside an
 * sl_stream_request to sl_server_adopt and sl_stream_request_copy): the
 * caller sets `.struct_size = SL_STRUCT_SIZE(sl_exec_request)` (and so on)
 * and zeroes what it does not set (a designated initializer does both).
 * The library reads only the fields inside struct_size; it refuses a
 * struct_size below the first version's (0, a struct_size forgotten,
 * included) with SL_ERR_INVAL, and a larger one whose bytes past the
 * fields it knows are not all zero with SL_ERR_UNSUPPORTED. The struct and
 * what it points to are only read, during the call.
 *
 * Handed to the runtime (exec_start, attach_start, the hand-off function
 * of sluice/server.h): struct_size is the library's sizeof. A runtime
 * built against a newer header than the library it runs with reads a
 * field added after 0.3.0 only when SL_HAS_FIELD(req, sl_exec_request,
 * field) is true. The struct and its strings are the library's and valid
 * during the call only: copy what you keep. */

typedef struct sl_exec_request {
    size_t struct_size; /* SL_STRUCT_SIZE(sl_exec_request) */
    const char *container_id;
    const char *const *cmd; /* argv, ncmd entries */
    size_t ncmd;
    bool tty;
    bool in;  /* stdin */
    bool out; /* stdout */
    bool err; /* stderr */
} sl_exec_request;

typedef struct sl_attach_request {
    size_t struct_size; /* SL_STRUCT_SIZE(sl_attach_request) */
    const char *container_id;
    bool tty;
    bool in;
    bool out;
    bool err;
} sl_attach_request;

/* ports is used only by the WebSocket protocol (SPDY names the port in
 * each stream). */
typedef struct sl_portforward_request {
    size_t struct_size; /* SL_STRUCT_SIZE(sl_portforward_request) */
    const char *pod_sandbox_id;
    const uint16_t *ports;
    size_t nports;
} sl_portforward_request;

typedef struct sl_term_size {
    uint16_t width;
    uint16_t height;
} sl_term_size;

/* The process side of an exec/attach session. The library takes ownership
 * of every fd >= 0 and closes it. With a tty, pty_fd is the PTY master and
 * carries stdin and the merged output; the other fds are -1. */
typedef struct sl_proc_endpoints {
    int stdin_fd;
    int stdout_fd;
    int stderr_fd;
    int pty_fd;
} sl_proc_endpoints;

typedef struct sl_proc sl_proc;
typedef struct sl_pfconn sl_pfconn;

/* The runtime's callbacks. struct_size first (sluice/common.h):
 * `.struct_size = SL_STRUCT_SIZE(sl_runtime_ops)`; a callback past the
 * caller's struct_size is taken as NULL. exec_start, attach_start and
 * portforward_connect are required (a runtime without attach answers
 * sl_proc_failed); the others may be NULL. sl_server_new() copies the
 * table: it need not outlive the call. */
typedef struct sl_runtime_ops {
    size_t struct_size; /* sizeof(sl_runtime_ops) of the caller */
    /* Start req (its struct_size set by the library: see "the requests"
     * above); `initial` is the terminal size known so far, or NULL. */
    void (*exec_start)(void *rt, sl_proc *proc, const sl_exec_request *req,
                       const sl_term_size *initial);
    void (*attach_start)(void *rt, sl_proc *proc, const sl_attach_request *req,
                         const sl_term_size *initial);
    /* Optional. When NULL and the endpoints have a pty_fd, the library sets
     * the size on the PTY itself (TIOCSWINSZ). */
    void (*resize)(void *rt, sl_proc *proc, sl_term_size size);
    /* The client is gone or the session timed out: end the exec'd process,
     * or the attach session (never the container). */
    void (*cancel)(void *rt, sl_proc *proc);
    /* Last call for proc; the runtime must drop every reference to it. */
    void (*release)(void *rt, sl_proc *proc);
    /* Connect to `port` in sandbox `sandbox_id`; answer with
     * sl_pfconn_connected() or sl_pfconn_failed(), now or later. */
    void (*portforward_connect)(void *rt, sl_pfconn *conn, const char *sandbox_id, uint16_t port);
    /* Optional. The forwarded connection is over before the runtime
     * answered: stop connecting. The runtime still answers exactly once
     * (sl_pfconn_failed, now or later), which releases the handle. */
    void (*portforward_cancel)(void *rt, sl_pfconn *conn);
    /* Optional. An attach client's stdin ended (see above); called at most
     * once per session, after sl_proc_started, with stdin_fd already closed.
     * The runtime may end the session from here (sl_proc_exited). */
    void (*attach_stdin_eof)(void *rt, sl_proc *proc);
} sl_runtime_ops;

/* Frozen (never grows: new callbacks go into sl_runtime_ops). Read once by
 * sl_server_new(); neither it nor ops need outlive that call. */
typedef struct sl_runtime {
    const sl_runtime_ops *ops;
    void *data; /* passed as `rt` to every op; owned by the caller */
} sl_runtime;

/* ---- answers of the runtime ----
 * Every function below returns nothing and cannot fail: a call that comes
 * too late (the session already ended) is absorbed, its fds closed. All run
 * on the server's loop thread, from inside an op or later. A proc handle is
 * valid from exec_start/attach_start until ops->release returns; a pfconn
 * handle from portforward_connect until the runtime's one answer
 * (sl_pfconn_connected or sl_pfconn_failed) returns. Using one after that
 * is a use after free. */

/* The process runs: call once, instead of sl_proc_failed, after
 * exec_start/attach_start (from inside it or later). ep is read during the
 * call; every fd >= 0 in it belongs to the library from now on, on every
 * path (a late call closes them at once). The fds must be distinct, and
 * the library switches them to non-blocking mode. With pty_fd set the
 * other three are -1. */
SL_EXPORT void sl_proc_started(sl_proc *proc, const sl_proc_endpoints *ep);

/* The process could not be started: call once, instead of
 * sl_proc_started. message (copied, NULL = "unknown error") becomes the
 * InternalError status the client gets. ops->release follows, now or once
 * the client's connection is gone. */
SL_EXPORT void sl_proc_failed(sl_proc *proc, const char *message);

/* The process (or, for an attach, this client's session) ended: call once,
 * after sl_proc_started, also after ops->cancel. code: the exit code
 * (0..255), 128 + signal for a killed process. message (copied; NULL =
 * the default) follows "command terminated with non-zero exit code: " in
 * a non-zero status. The status reaches the client after every byte
 * read from the output endpoints; ops->release follows. Before
 * sl_proc_started it is ignored (use sl_proc_failed). */
SL_EXPORT void sl_proc_exited(sl_proc *proc, int code, const char *message);

/* The runtime's own pointer for proc (NULL at first); the library never
 * reads or frees it. Valid calls: as for the handle. */
SL_EXPORT void sl_proc_set_data(sl_proc *proc, void *data);
SL_EXPORT void *sl_proc_data(const sl_proc *proc);

/* The connection to the pod's port is open: the runtime's one answer to
 * portforward_connect (now or later). fd, a connected stream socket,
 * belongs to the library from now on on every path (after a
 * portforward_cancel it is closed at once). conn is freed on return. */
SL_EXPORT void sl_pfconn_connected(sl_pfconn *conn, int fd);

/* The connection failed: the runtime's one answer instead of
 * sl_pfconn_connected. message (copied; NULL = "connection failed") goes
 * to the client's error stream for that port. conn is freed on return. */
SL_EXPORT void sl_pfconn_failed(sl_pfconn *conn, const char *message);

/* The runtime's own pointer for conn (NULL at first); never read or freed
 * by the library. */
SL_EXPORT void sl_pfconn_set_data(sl_pfconn *conn, void *data);
SL_EXPORT void *sl_pfconn_data(const sl_pfconn *conn);

#endif
