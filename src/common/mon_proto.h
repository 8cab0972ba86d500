/* Codec of the sluiced <-> sluice-mon control protocol (docs/mon-protocol.md).
 *
 * One SOCK_SEQPACKET packet is one message: a JSON object with a string
 * "type", at most SL_MON_MAX_MESSAGE bytes, plus up to SL_MON_MAX_FDS file
 * descriptors as SCM_RIGHTS. When fds travel, the object's "fds" array names
 * them in order and its length equals the number of fds.
 *
 * The connection object queues outbound packets (a packet is sent whole or
 * not at all, so "resumable" means: what the socket refused stays queued
 * until the next sl_mon_conn_flush) and receives one packet per call. Both
 * work on blocking and non-blocking sockets. Functions return SL_OK or a
 * negative sl_err (include/sluice/error.h); peer violations are the
 * -100.. band and end only the connection that sent them. */
#ifndef SL_MON_PROTO_H
#define SL_MON_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_MON_PROTO_VERSION 1
#define SL_MON_MAX_MESSAGE 65536                 /* bytes of one message */
#define SL_MON_MAX_FDS 4                         /* fds per message */
#define SL_MON_ATTACH_BACKLOG (4u * 1024 * 1024) /* bytes an attach session may lag */
#define SL_MON_LOG_LINE_MAX 16384                /* longer lines become P records + F */
#define SL_MON_MAX_ID 128                        /* bytes of a container/exec/session id */
#define SL_MON_MAX_QUEUED 1024 /* outbound packets queued before the peer counts as stuck */
/* The range of attach's "backlog" (sluiced's attach-backlog). */
#define SL_MON_ATTACH_BACKLOG_MIN (64u * 1024)
#define SL_MON_ATTACH_BACKLOG_MAX (1024u * 1024 * 1024)
/* Exec admission per pod (the exec's "max_concurrent" and "queue_max",
 * sluiced's exec-max-concurrent-per-pod and exec-queue-max): at most this
 * many execs of a pod are being started (runc exec runs) at once; the
 * others wait in FIFO order, at most queue_max of them. */
#define SL_MON_EXEC_MAX_CONCURRENT 4
#define SL_MON_EXEC_MAX_CONCURRENT_LIMIT 1024
#define SL_MON_EXEC_QUEUE_MAX 1024
#define SL_MON_EXEC_QUEUE_MAX_LIMIT 4096
/* An exec's "stdin_pipe_size" (sluiced's exec-stdin-pipe-size): bytes of
 * the pipe to its stdin. The default holds eight socket reads, so a whole
 * read goes to the process while it drains the pipe at its own pace, where
 * the kernel's 64 KiB pipe took part of each and the rest was queued and
 * written at the next wake-up (WebSocket stdin into wc -c, bench/run:
 * 0.75-0.77x SPDY's rate with 64 KiB, 0.88-0.94x with 512 KiB). Its pages
 * are taken only while bytes wait in it. The maximum is the kernel's
 * default pipe-max-size. */
#define SL_MON_EXEC_STDIN_PIPE_SIZE (512u * 1024)
#define SL_MON_EXEC_STDIN_PIPE_SIZE_MIN 4096u
#define SL_MON_EXEC_STDIN_PIPE_SIZE_MAX (1024u * 1024)
/* The "code" of an error reply that hit a limit (RESOURCE_EXHAUSTED). */
#define SL_MON_ERR_EXHAUSTED "resource_exhausted"
/* The monitor's sockets live in <run-dir>/pods/<pod id, 64 hex>/: its
 * control socket, and briefly one console socket per tty container or
 * exec, whose name is never longer. sluiced refuses a run dir for which
 * the control socket's path would not fit sun_path. */
#define SL_MON_SOCK_NAME "mon.sock"
/* The monitor's own log: <state-dir>/pods/<pod id>/mon.log, with the pod's
 * record (removed with the pod), so it survives a reboot and a full tmpfs. */
#define SL_MON_LOG_NAME "mon.log"
#define SL_MON_POD_ID_LEN 64
#define SL_MON_CONSOLE_SOCK_FMT "cs%04x" /* of a counter modulo 0x10000 */

/* Encodes msg (an object with a string "type"; when it has "fds", an array
 * of nfds strings, else nfds must be 0) compactly into a malloc'd buffer.
 * Returns SL_OK (*out, *len set; caller frees), SL_ERR_INVAL for a message
 * that breaks those rules, SL_ERR_TOO_LARGE beyond SL_MON_MAX_MESSAGE,
 * SL_ERR_NOMEM. */
int sl_mon_encode(const json_t *msg, size_t nfds, char **out, size_t *len);

/* Decodes one message received with nfds fds. Returns SL_OK with *msg (a
 * new reference), SL_ERR_TOO_LARGE when len exceeds SL_MON_MAX_MESSAGE,
 * SL_ERR_PROTO when buf is not one JSON object (duplicate keys rejected)
 * with a string "type", or when "fds" does not name exactly nfds fds. */
int sl_mon_decode(const void *buf, size_t len, size_t nfds, json_t **msg);

typedef struct sl_mon_packet sl_mon_packet;

typedef struct sl_mon_conn {
    int fd;              /* the SEQPACKET socket; not owned */
    sl_mon_packet *head; /* outbound queue */
    sl_mon_packet *tail;
    size_t queued; /* packets in the queue */
    char *rbuf;    /* receive buffer, allocated on first use */
} sl_mon_conn;

void sl_mon_conn_init(sl_mon_conn *c, int fd);
/* Frees the queue and closes the fds still queued; does not close c->fd. */
void sl_mon_conn_fini(sl_mon_conn *c);

/* Queues msg with nfds fds and tries to send the queue. The conn takes
 * ownership of the fds in every case (they are closed once sent, or on
 * error, or by fini). Returns SL_OK (sent or queued), SL_ERR_INVAL or
 * SL_ERR_TOO_LARGE (see sl_mon_encode; nothing queued), SL_ERR_FULL when
 * SL_MON_MAX_QUEUED packets are already waiting, SL_ERR_CLOSED when the
 * peer is gone, SL_ERR_SYS (errno) on other socket errors. */
int sl_mon_conn_send(sl_mon_conn *c, const json_t *msg, const int *fds, size_t nfds);

/* Sends queued packets until the queue is empty or the socket is full.
 * Returns SL_OK (queue empty), SL_ERR_WOULDBLOCK (some remain; wait for
 * writability), SL_ERR_CLOSED, SL_ERR_SYS. */
int sl_mon_conn_flush(sl_mon_conn *c);

static inline bool sl_mon_conn_want_write(const sl_mon_conn *c)
{
    return c->head != NULL;
}

/* Receives one packet. Returns SL_OK with *msg (new reference) and the fds
 * (caller owns them; close-on-exec set) in fds[0..*nfds); SL_ERR_WOULDBLOCK
 * when no packet is waiting; SL_ERR_CLOSED at end of stream;
 * SL_ERR_TOO_LARGE for an oversized packet or one with more than
 * SL_MON_MAX_FDS fds, SL_ERR_PROTO for a malformed one (in both cases its
 * fds are already closed and the next packet can still be received);
 * SL_ERR_NOMEM; SL_ERR_SYS (errno). */
int sl_mon_conn_recv(sl_mon_conn *c, json_t **msg, int *fds, size_t *nfds);

/* Field helpers over a decoded message. */
/* The string at key, or NULL when missing or not a string. */
const char *sl_mon_str(const json_t *msg, const char *key);
/* *out = integer at key within [min, max], or def when the key is absent.
 * Returns SL_OK or SL_ERR_PROTO (wrong type, out of range). */
int sl_mon_int(const json_t *msg, const char *key, int64_t min, int64_t max, int64_t def,
               int64_t *out);
/* *out = boolean at key, or def when absent. SL_OK or SL_ERR_PROTO. */
int sl_mon_bool(const json_t *msg, const char *key, bool def, bool *out);
/* True for a usable id: 1..SL_MON_MAX_ID bytes of [A-Za-z0-9_.-], not
 * starting with '.' (ids become file names). */
bool sl_mon_valid_id(const char *id);
/* Position of the fd called name in msg's "fds" array, or -1. */
int sl_mon_fd_index(const json_t *msg, const char *name);

/* A new reply object {"type":"reply","id":<copy of req's id>,"ok":ok}
 * plus "error" when err is not NULL. NULL on ENOMEM. */
json_t *sl_mon_reply(const json_t *req, bool ok, const char *err);

#endif
