/* The native exec path (issue 16): an exec started by the monitor itself,
 * without `runc exec`. The monitor reads the container's config.json
 * process (merged with the exec's args and terminal as runc merges a
 * process.json) into a plan; a child joins the container's cgroups and
 * namespaces and forks the process, which applies the plan the way runc's
 * setns init does and execs. What the plan cannot express (an AppArmor or
 * SELinux label, a user namespace, a key it does not know) makes
 * mon_nexec_plan_new say why, and the exec goes through runc. */
#ifndef SL_MON_NEXEC_H
#define SL_MON_NEXEC_H

#include <jansson.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "sys_error.h"

#define MON_NEXEC_MAX_GIDS 1024    /* additionalGids of a process */
#define MON_NEXEC_MAX_RLIMITS 16   /* rlimits of a process (RLIMIT_NLIMITS) */
#define MON_NEXEC_MAX_CGROUPS 32   /* cgroup hierarchies joined */
#define MON_NEXEC_PASSWD_MAX 65536 /* bytes of the container's /etc/passwd read */
#define MON_NEXEC_ERR_MAX 1024     /* bytes of a start error */
#define MON_NEXEC_PATH_MAX 4096    /* a resolved program path */

typedef struct mon_nexec_rlimit {
    int resource;
    struct rlimit lim;
} mon_nexec_rlimit;

typedef struct mon_nexec_plan {
    pid_t init;   /* the container's init */
    int ns_flags; /* CLONE_NEW* of the namespaces its config lists */
    char *cgroup_procs[MON_NEXEC_MAX_CGROUPS];
    size_t ncgroups;
    uid_t uid;
    gid_t gid;
    gid_t gids[MON_NEXEC_MAX_GIDS];
    size_t ngids;
    uint64_t bounding, effective, permitted, inheritable, ambient;
    int last_cap; /* /proc/sys/kernel/cap_last_cap */
    bool no_new_privs;
    struct sock_fprog seccomp; /* .filter NULL: none */
    mon_nexec_rlimit rlimits[MON_NEXEC_MAX_RLIMITS];
    size_t nrlimits;
    bool has_oom;
    int oom_score_adj;
    bool has_umask;
    mode_t umask;
    bool tty;
    int tty_w, tty_h;
    char *cwd;
    char **argv; /* NULL-terminated */
    char **envp; /* NULL-terminated, one spare slot for HOME */
    bool has_home;
    char *path; /* the value of PATH in envp, or NULL */
    /* scratch the child uses without allocating */
    char home[MON_NEXEC_PASSWD_MAX];
    char passwd[MON_NEXEC_PASSWD_MAX];
} mon_nexec_plan;

/* The plan for running cmd (strings) in the container whose bundle and
 * init are given. NULL with *e: e->code 0 = the native path does not
 * cover it (e->msg says what, the exec falls back to runc); else an error
 * reading or building it. */
mon_nexec_plan *mon_nexec_plan_new(const char *bundle, pid_t init, const json_t *cmd, bool tty,
                                   int w, int h, sl_error *e);
void mon_nexec_plan_free(mon_nexec_plan *p);

/* The parts of a plan that are pure, for unit tests. */
/* env as runc's init sets it: each NAME=VALUE in order, a repeated name
 * keeping its first place and its last value. NULL with *e (an entry
 * without '=' or with an empty name: the native path leaves that to runc). */
char **mon_nexec_env(const json_t *env, size_t spare, sl_error *e);
/* The home directory of uid in an /etc/passwd text into out (at most
 * outlen-1 bytes), "/" when no line names uid. */
void mon_nexec_passwd_home(const char *text, uid_t uid, char *out, size_t outlen);

/* Starts the plan's process: forks a starter that joins the container's
 * cgroups and namespaces and forks the process, then exits 0 once the
 * process exec'd (its pid written to pid_fd), or 1 with runc's kind of
 * message written to log_fd. stdio: the process's fds 0..2 (tty: ignored);
 * console_fd: tty, a socket connected to the console socket the PTY master
 * is sent on, else -1. Returns the starter's pid or -1 (*e). */
pid_t mon_nexec_spawn(const mon_nexec_plan *p, const int stdio[3], int console_fd, int pid_fd,
                      int log_fd, sl_error *e);

#endif
