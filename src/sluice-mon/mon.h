/* sluice-mon internals: the monitor object and the pieces the per-
 * responsibility files share. One monitor per pod, one thread, one loop. */
#ifndef SL_MON_H
#define SL_MON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fsutil.h"
#include "mon_fanout.h"
#include "mon_journal.h"
#include "mon_log.h"
#include "mon_loop.h"
#include "mon_proto.h"

#define SL_MON_READ_CHUNK 65536 /* bytes per read of container output */
/* Reads of one fd before others get a turn. One: the attach sessions this
 * monitor serves run on its loop, and a wakeup's reads (and their log
 * lines) are time in which no session writes to its client. */
#define SL_MON_READS_PER_WAKE 1
/* An attach session's output pipe: slack for a session served on the
 * monitor's own loop, which drains it once per wakeup (with the default
 * 64 KiB pipe it fell behind a container writing at full speed). */
#define SL_MON_ATTACH_PIPE_SIZE (8 * SL_MON_READ_CHUNK)
#define SL_MON_STDIN_HIGH_WATER 262144 /* queued stdin bytes that pause attach input */
#define SL_MON_LOG_DROP_REPORT_MS 1000 /* while dropping log records: a log_dropped update */
#define SL_MON_DRAIN_MS 2000           /* wait for output EOF after a process exited */
#define SL_MON_SHUTDOWN_MS 15000       /* shutdown gives up waiting after this */
#define SL_MON_MAX_CONNS 16            /* control connections at once */
#define SL_MON_MAX_CONTAINERS 128      /* hello lists them all in one message */
#define SL_MON_MAX_EXECS 4096          /* concurrent execs per pod (two fds each here) */
#define SL_MON_MAX_SESSIONS 64         /* attach sessions per container */
#define SL_MON_MAX_STOP_TIMEOUT 86400  /* seconds */
#define SL_MON_ERR_TEXT 1024           /* bytes of a runc error kept for a reply */
#define SL_MON_UNCLAIMED 64            /* exits of not-yet-known container pids kept */
#define SL_MON_BUNDLE_CONFIG_MAX (4u * 1024 * 1024) /* bytes of a bundle's config.json */
#define SL_MON_KILL_RETRY_MS 100                    /* kill_exec before the pid file exists */
/* An attach session whose client's stdin ended (and that leaves the
 * container's stdin open) ends once the container took that client's last
 * byte and its output was quiet this long, or this long at most: */
#define SL_MON_ATTACH_LINGER_MS 300
#define SL_MON_ATTACH_LINGER_MAX_MS 2000
#define SL_MON_START_ERROR_CODE 128 /* exit code of a container that could not start */

typedef struct mon mon;
typedef struct mon_ctr mon_ctr;
typedef struct mon_exec mon_exec;
typedef struct mon_job mon_job;
typedef struct mon_console mon_console;

/* log levels */
enum { MON_ERR, MON_WARN, MON_INFO, MON_DEBUG };
void mon_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern int mon_log_level;

/* The reply to a request the monitor made to itself (mon_sess.c): ok with
 * fields (borrowed) and fds (owned by the callee), or not ok with err. */
typedef void (*mon_local_fn)(mon *m, void *arg, bool ok, const json_t *fields, int *fds,
                             const char *const *names, size_t nfds, const char *err);

/* A request whose reply may come later. */
typedef struct mon_req {
    struct mon_req *next; /* in a waiter list */
    uint64_t conn;        /* connection id; 0 = made by the monitor itself */
    json_t *id;           /* the request's id (reference) */
    mon_local_fn local;   /* conn 0: where the reply goes */
    void *local_arg;
} mon_req;

typedef struct mon_conn {
    struct mon_conn *next;
    mon *m;
    uint64_t id;
    int fd;
    bool hello;
    sl_mwatch *w;
    sl_mon_conn c;
} mon_conn;

typedef enum { CTR_CREATING, CTR_CREATED, CTR_RUNNING, CTR_EXITED } ctr_state;

/* A container's stdio: output sources, stdin funnel, log, attach fan-out. */
typedef struct mon_io {
    int out_fd[2]; /* read ends (tty: [0] is the PTY master), -1 when closed */
    sl_mwatch *out_w[2];
    bool journaled[2]; /* a pipe, taken through the journal (mon_stdio.c) */
    mon_journal journal;
    int in_fd; /* our write end of its stdin (tty: a dup of the master), -1 */
    sl_mwatch *in_w;
    sl_bufq in_q;                /* stdin bytes not yet taken by the container */
    bool in_close_after;         /* stdin_once: close in_fd once in_q drained */
    bool in_paused;              /* attach sessions' stdin reading is paused */
    bool discard;                /* runc create still runs: output is runc's own */
    char noise[SL_MON_ERR_TEXT]; /* tail of that output, for an error reply */
    size_t noise_len;
    sl_mon_log log;
    uint64_t drop_mark[2]; /* log bytes, records dropped when the last failure began */
    uint64_t drop_sent;    /* log bytes dropped as of the last log_dropped event */
    uint64_t drop_sent_ms; /* monotonic ms of that event */
    sl_mon_fanout fo;
    uint64_t last_out_ms;    /* monotonic ms of the last output read */
    sl_mtimer *linger_timer; /* detaching attach sessions (mon_attach.c) */
} mon_io;

struct mon_ctr {
    mon_ctr *next;
    mon *m;
    char id[SL_MON_MAX_ID + 1];
    char *bundle, *dir, *pid_file, *status_path;
    bool tty, stdin, stdin_once;
    ctr_state state;
    pid_t pid;
    bool reaped, finalized, stopping, removing, deleting, killed, stdin_once_done;
    bool create_exited; /* runc create finished with create_status */
    bool shared_pidns;  /* no pid namespace of its own: kill the rest at exit */
    int create_status;
    char *create_err;
    char *start_err;    /* runc could not create it: StartContainer fails with this */
    const char *reason; /* of the exit, for the kubelet ("" or "StartError") */
    char *message;      /* of the exit, or NULL */
    int exit_code;
    int64_t created_at, started_at, finished_at, start_issued_at;
    mon_io io;
    mon_console *console;
    mon_job *job; /* runc create/start/delete in flight */
    /* a sweep deferred while other execs start (mon_exec_sweep.c): its
     * start-time bound (0: none) and the killed exec, for the log */
    unsigned long long sweep_since;
    char sweep_exec[SL_MON_MAX_ID + 1];
    char *oom_file; /* its memory cgroup's OOM-kill counter (cgroup_host.h), or NULL */
    bool oom_killed;
    mon_job *update_job; /* runc update in flight (mon_update.c) */
    mon_req *update_req;
    bool update_oom; /* then write update_oom_value to its oom_score_adj */
    int update_oom_value;
    mon_req *create_req, *start_req;
    mon_req *stop_waiters, *remove_waiters;
    sl_mtimer *kill_timer, *drain_timer;
    /* adopted from a monitor that died (mon_adopt.c): its init is the
     * pod reaper's child, watched through a pidfd, its status read from
     * the reaper's record */
    bool adopted;
    int pidfd; /* -1 */
    sl_mwatch *pidfd_w;
    unsigned long long start_ticks;
    sl_mtimer *record_timer;
    int record_tries;
};

struct mon_exec {
    mon_exec *next;
    mon *m;
    char id[SL_MON_MAX_ID + 1];
    char ctr_id[SL_MON_MAX_ID + 1];
    char *dir, *pid_file; /* runc exec's scratch dir and pid file in it, NULL before */
    int pid_fd, log_fd;   /* native: memfds the starter writes its pid or error to, -1 */
    bool tty;
    pid_t pid;     /* the exec'd process, from the pid file; 0 = not known */
    uint64_t conn; /* the connection that asked for it (0: a session here) */
    mon_job *job;
    bool exited; /* the exit code is known */
    int exit_code;
    mon_console *console;
    int master;         /* tty: our copy of the PTY master, -1 */
    int want_w, want_h; /* resize queued before the master existed */
    int watch_fd[2];    /* dups of the output read ends, watched for HUP */
    sl_mwatch *watch_w[2];
    int client[3];  /* no tty: sluiced's ends of the pipes until the reply, -1 */
    bool runc_ok;   /* runc exec exited 0: the process runs (or ran) */
    mon_req *reply; /* waits for runc exec's exit (and, tty, for the master) */
    sl_mtimer *drain_timer, *kill_timer;
    bool want[3];                  /* stdin, stdout, stderr pipes (no tty) */
    bool queued;                   /* admitted, waits for a start slot (FIFO by seq) */
    uint64_t seq;                  /* order of admission */
    unsigned max_concurrent;       /* its request's limit of starts at once */
    int stdin_pipe_size;           /* bytes of the pipe to its stdin (F_SETPIPE_SZ) */
    bool runc_killed;              /* runc exec was killed before it finished */
    unsigned long long runc_start; /* its runc's or starter's start time (clock ticks after
                                      boot), 0: sweeps what it left (mon_exec_sweep.c) */
    json_t *cmd;                   /* its args (reference) */
    bool native;                   /* exec_mode native: tried without runc (mon_nexec.h) */
};

typedef struct mon_unclaimed {
    pid_t pid;
    int status;
} mon_unclaimed;

struct mon {
    sl_mloop *loop;
    char *pod_id, *run_dir, *state_dir, *runtime, *runc_root;
    char *sock_path, *pid_path;
    int listen_fd, sig_fd, devnull;
    sl_mwatch *listen_w, *sig_w;
    mon_conn *conns;
    uint64_t next_conn;
    unsigned nconns;
    mon_ctr *ctrs;
    mon_exec *execs;
    mon_job *jobs;
    unsigned next_sock;
    mon_unclaimed unclaimed[SL_MON_UNCLAIMED];
    unsigned nunclaimed;
    bool shutting_down;
    mon_req *shutdown_req;
    sl_mtimer *shutdown_timer;
    sl_mtimer *conn_reap_timer;
    int exit_status;
    struct mon_sess_state *sess; /* streaming sessions served here (mon_sess.c) */
    pid_t pause_pid;             /* --pid-ns: the holder of the pod's pid namespace, 0 */
    int pause_life;              /* its lifeline (our write end), -1 */
    char *pidns_file;            /* where its namespace is pinned, NULL */
    int pause_pipe[2];           /* its lifeline made before the reaper forked us, -1 */
    bool adopt;                  /* --adopt: a monitor that replaces one that died */
};

/* mon_server.c: control socket, requests, replies, events */
int mon_server_start(mon *m, sl_error *e);
void mon_server_stop(mon *m);
/* Replies to r (consumed) with ok and extra fields (stolen, may be NULL)
 * and fds (owned by the reply from now on; names says what each is). */
void mon_reply(mon *m, mon_req *r, json_t *fields, const int *fds, const char *const *names,
               size_t nfds);
void mon_reply_err(mon *m, mon_req *r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* mon_reply_err with a "code" field saying what kind of error it is
 * (SL_MON_ERR_EXHAUSTED: a limit was reached). */
void mon_reply_err_code(mon *m, mon_req *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sends an event (stolen) to every connection that said hello. */
void mon_event(mon *m, json_t *ev);
mon_req *mon_req_new(uint64_t conn, const json_t *msg);
void mon_req_free(mon_req *r);
/* Answers every waiter in *list with ok + a copy of fields (not stolen). */
void mon_reply_all(mon *m, mon_req **list, const json_t *fields);

/* mon_runc.c: child processes and runc invocations */
/* status: from waitpid; err: what the child wrote to its captured
 * stderr (may be ""). */
typedef void (*mon_job_cb)(mon *m, int status, const char *err, void *data);
/* Runs the runtime with `--root <runc_root>` and args (NULL-terminated).
 * stdio: the child's fds 0..2, -1 = /dev/null for 0, and a captured
 * temporary file for 1 and 2 (its text goes to cb). NULL on error (*e). */
mon_job *mon_runc(mon *m, const char *const *args, const int stdio[3], mon_job_cb cb, void *data,
                  sl_error *e);
/* A job of a child forked elsewhere (the native exec's starter): cb with
 * its status once reaped, err "". NULL on error (*e). */
mon_job *mon_job_add(mon *m, pid_t pid, mon_job_cb cb, void *data, sl_error *e);
pid_t mon_job_pid(const mon_job *j);
/* The job's callback will not fire (the child is still reaped). */
void mon_job_cancel(mon_job *j);
/* Called by the reaper; true when pid was a job. */
bool mon_jobs_reaped(mon *m, pid_t pid, int status);
/* Exit code of a waitpid status: the code, or 128 + signal. */
int mon_exit_code(int status);
/* The waitpid status that mon_exit_code maps to code (an exit record's
 * code: 129..128+SL_MON_MAX_SIGNAL is a signal, the rest an exit status). */
#define SL_MON_MAX_SIGNAL 64
int mon_status_of_code(int code);
/* The message of runc's log line in text (its last `msg="..."`, unquoted),
 * else text itself with its spaces trimmed; at most outlen-1 bytes
 * (outlen > 0). */
void mon_runc_message(const char *text, char *out, size_t outlen);

/* mon_console.c: console sockets (runc sends the PTY master here) */
typedef void (*mon_console_cb)(mon *m, int master, void *data);
mon_console *mon_console_new(mon *m, mon_console_cb cb, void *data, sl_error *e);
const char *mon_console_path(const mon_console *c);
void mon_console_free(mon_console *c);

/* mon_reaper.c: signals, reaping, exit records */
int mon_signals_start(mon *m, sl_error *e);
void mon_signals_stop(mon *m);
int mon_status_write(mon_ctr *c);
/* An exit reaped before its container's pid was known. */
bool mon_unclaimed_take(mon *m, pid_t pid, int *status);
json_t *mon_ctr_json(const mon_ctr *c);

/* mon_ctr.c: container lifecycle */
mon_ctr *mon_ctr_find(mon *m, const char *id);
void mon_ctr_create(mon *m, mon_req *r, const json_t *msg);
void mon_ctr_start(mon *m, mon_req *r, const json_t *msg);
void mon_ctr_stop(mon *m, mon_req *r, const json_t *msg);
void mon_ctr_remove(mon *m, mon_req *r, const json_t *msg);
void mon_ctr_reopen_log(mon *m, mon_req *r, const json_t *msg);
/* mon_update.c: `runc update` of a container's resources */
void mon_ctr_update(mon *m, mon_req *r, const json_t *msg);
/* The container goes away: its update, if any, is answered with an error. */
void mon_ctr_update_abort(mon_ctr *c);
/* "OOMKilled" for an exited container the OOM killer hit, else "". */
const char *mon_ctr_reason(const mon_ctr *c);
/* The container's init process was reaped. */
void mon_ctr_reaped(mon_ctr *c, int status);
/* Both output streams reached EOF (called by mon_stdio.c). */
void mon_ctr_outputs_done(mon_ctr *c);
/* Kills every container and exec, then stops the loop (replying to r). */
void mon_shutdown(mon *m, mon_req *r);
/* Shutdown progress: stops the loop once nothing is left. */
void mon_shutdown_check(mon *m);
/* At exit: frees what a timed-out shutdown left (no runc is run). */
void mon_ctr_release_all(mon *m);
void mon_exec_release_all(mon *m);
void mon_jobs_release_all(mon *m);

/* mon_stdio.c: container stdio */
void mon_io_init(mon_io *io, mon_ctr *c);
/* Starts watching the output fds and stdin. Returns 0 or -1 (*e). */
int mon_io_start(mon_ctr *c, sl_error *e);
/* Closes the outputs that are still open (after the drain wait). */
void mon_io_close_outputs(mon_ctr *c);
/* Reads what runc create left in the pipes (kept as noise, not logged). */
void mon_io_drain_noise(mon_ctr *c);
void mon_io_fini(mon_ctr *c, const char *why);
/* Queues stdin bytes for the container; false when over the high water. */
bool mon_io_stdin_push(mon_ctr *c, const void *data, size_t len);
/* A session with stdin ended: stdin_once closes the container's stdin. */
void mon_io_stdin_session_done(mon_ctr *c);

/* mon_attach.c: attach sessions */
void mon_attach(mon *m, mon_req *r, const json_t *msg);
extern const sl_mon_fanout_ops mon_attach_ops;
/* Pauses or resumes reading every session's stdin of c. */
void mon_attach_stdin_pause(mon_ctr *c, bool pause);
/* Resize of an attach session (tty containers). Returns 0 or -1 when the
 * session is unknown. */
int mon_attach_resize(mon *m, const char *session, int w, int h, const char **err);

/* mon_exec.c */
void mon_exec_start(mon *m, mon_req *r, const json_t *msg);
void mon_exec_kill(mon *m, mon_req *r, const json_t *msg);
void mon_resize(mon *m, mon_req *r, const json_t *msg);
/* Kills every exec (shutdown / container removal); ctr_id NULL = all. */
void mon_exec_kill_all(mon *m, const char *ctr_id);
/* A control connection closed: the execs it asked for lost the reader of
 * their output (sluiced's ExecSync), so they are killed rather than left
 * blocking on a full pipe. */
void mon_exec_conn_gone(mon *m, uint64_t conn);
/* Called by the reaper: true when pid was a detached exec's process. */
bool mon_exec_reaped(mon *m, pid_t pid, int status);
/* Reads the pid file of every started exec whose pid is not known yet. */
void mon_exec_pids_refresh(mon *m);

/* mon_exec_sweep.c: what a killed runc exec left */
/* A process's start time in clock ticks after boot (/proc/PID/stat). */
int mon_proc_starttime(pid_t pid, unsigned long long *t);
/* Kills the monitor's unknown children in ctr_id's mount namespace that
 * started at `since` or later (exec_id: for the log). */
void mon_exec_sweep(mon *m, const char *ctr_id, unsigned long long since, const char *exec_id);
/* Runs the sweeps deferred until no other exec of their container was
 * starting; called when a runc exec or native starter ended. */
void mon_exec_sweep_deferred(mon *m);

/* mon_sess.c: streaming sessions handed over by sluiced, served on the
 * monitor's loop with libsluice */
int mon_sess_start(mon *m, sl_error *e);
/* Ends every session and waits (running the loop) until they are closed. */
void mon_sess_stop(mon *m);
/* The `session` request: fds are taken. */
void mon_sess_request(mon *m, mon_req *r, const json_t *msg, int *fds, size_t nfds);
/* Every event also goes to the sessions served here (borrowed). */
void mon_sess_event(mon *m, const json_t *ev);
/* hello's `live_sessions` (mon_sess_report.h). */
json_t *mon_sess_live_sessions(const mon *m);
/* Runs a request in-process: its reply goes to fn. r_msg is borrowed. */
void mon_local_request(mon *m, const json_t *msg, mon_local_fn fn, void *arg);

/* mon_adopt.c: taking over the containers of a monitor that died */
/* How long an adopted container's exit record is awaited after its pidfd
 * fired (the reaper writes it once it reaped the process). */
#define SL_MON_EXIT_RECORD_WAIT_MS 2000
#define SL_MON_EXIT_RECORD_STEP_MS 20
/* The `stdio` request: duplicates of a container's output fds. */
void mon_ctr_stdio(mon *m, mon_req *r, const json_t *msg);
/* The `adopt` request: fds are taken. */
void mon_ctr_adopt(mon *m, mon_req *r, const json_t *msg, int *fds, size_t nfds);
/* Signals the container's init (through its pidfd when adopted). */
void mon_ctr_signal(mon_ctr *c, int sig);
/* Releases what adoption holds of c (ctr_free). */
void mon_adopt_fini(mon_ctr *c);
/* mon_ctr.c helpers mon_adopt.c shares */
mon_ctr *mon_ctr_new(mon *m, const char *id, const char *bundle);
void mon_ctr_free(mon_ctr *c);

/* mon_pause.c: the pod's shared pid namespace (--pid-ns) */
#define MON_PAUSE_NAME "sluice-pause" /* argv[0] and comm of the holder */
#define MON_PAUSE_LIFELINE_FD 3       /* the holder's end of its lifeline */
/* The holder's main (this executable run as MON_PAUSE_NAME). */
int mon_pause_main(void);
/* Starts the holder in a new pid namespace and bind-mounts that namespace
 * on file; with userns (a pinned user namespace, or NULL) the pid
 * namespace is made in it, so the pod's containers, which are in it too,
 * may mount its /proc. Returns 0 or -1 (*e); mon_pause_stop undoes either. */
int mon_pause_start(mon *m, const char *file, const char *userns, sl_error *e);
/* Kills and reaps the holder, unmounts and removes the file. */
void mon_pause_stop(mon *m);
/* Called by the reaper: true when pid was the holder. */
bool mon_pause_reaped(mon *m, pid_t pid, int status);
bool mon_pause_alive(const mon *m);
/* --adopt: a write end of the living holder's lifeline (its pid from
 * <run-dir>/MON_PAUSE_PID_FILE) into m->pause_pipe[1], so our reaper and we
 * keep it alive. Returns 0 or -1 (*e). */
#define MON_PAUSE_PID_FILE "pause.pid"
int mon_pause_lifeline_open(mon *m, sl_error *e);
/* --adopt: the holder found by mon_pause_lifeline_open is ours to keep
 * (not our child: never reaped here) and to kill at the end. */
int mon_pause_adopt(mon *m, const char *file, sl_error *e);

/* mon_keeper.c: sluice-reaper, the parent that outlives the monitor */
#define MON_REAPER_NAME "sluice-reaper" /* argv[0] and comm of the reaper */
#define MON_REAPER_LIFE_FD 3            /* its write end of the holder's lifeline */
#define MON_EXITS_DIR "exits"           /* <run-dir>/exits/<pid>: statuses it reaped */
/* The reaper's main (this executable run as MON_REAPER_NAME RUN_DIR PID). */
int mon_reaper_main(const char *run_dir, const char *monitor);
/* Forks: returns 0 in the child, the monitor; the parent execs the reaper.
 * life: the holder's lifeline write end for the reaper to keep, or -1. */
int mon_reaper_fork(const char *run_dir, int life, sl_error *e);

/* mon_bundle.c: a bundle's config.json, parsed (an object); NULL (*e) when
 * it cannot be read or is not a JSON object. */
json_t *mon_bundle_config(const char *bundle, sl_error *e);
/* What a bundle's config.json says about its pid namespace. */
typedef enum { MON_PIDNS_OWN, MON_PIDNS_HOST, MON_PIDNS_JOIN } mon_pidns_kind;
/* The kind, and for MON_PIDNS_JOIN the path (malloc'd into *path).
 * Returns 0 or -1 (*e) when the file cannot be read or parsed. */
int mon_bundle_pidns(const char *bundle, mon_pidns_kind *kind, char **path, sl_error *e);

/* TIOCSWINSZ; 0 or -1. */
int mon_set_winsize(int fd, int w, int h);
/* A fresh path for a short-lived socket in the run dir (malloc'd). */
char *mon_sock_path(mon *m);

#endif
