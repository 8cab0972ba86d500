/* Child processes of the monitor: runc invocations with chosen stdio. The
 * reaper hands every exit to mon_jobs_reaped, which calls the job's
 * callback with what the child wrote to its captured stderr. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mon.h"

#define RUNC_MAX_ARGS 32

struct mon_job {
    mon_job *next;
    pid_t pid;
    int errfd; /* captured stdout+stderr, or -1 */
    mon_job_cb cb;
    void *data;
};

int mon_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 255;
}

int mon_status_of_code(int code)
{
    if (code > 128 && code <= 128 + SL_MON_MAX_SIGNAL)
        return code - 128; /* WIFSIGNALED with that signal */
    return (code & 0xff) << 8;
}

/* Go's %q escapes that runc's log lines use; others are kept as they are. */
static void unquote(const char *p, char *out, size_t outlen)
{
    size_t n = 0;
    for (; *p && *p != '"' && n + 1 < outlen; p++) {
        char ch = *p;
        if (ch == '\\' && p[1]) {
            ch = *++p;
            ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
        }
        out[n++] = ch;
    }
    out[n] = '\0';
}

void mon_runc_message(const char *text, char *out, size_t outlen)
{
    const char *msg = NULL;
    for (const char *p = text; (p = strstr(p, "msg=\"")); p++)
        msg = p + 5;
    if (msg) {
        unquote(msg, out, outlen);
        return;
    }
    while (*text == ' ' || *text == '\n')
        text++;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\n'))
        n--;
    snprintf(out, outlen, "%.*s", (int)n, text);
}

/* An unlinked temporary file in the run dir for a child's error output. */
static int capture_file(mon *m)
{
    int fd = open(m->run_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    char *path = sl_path_join(m->run_dir, ".err.XXXXXX");
    if (!path)
        return -1;
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    free(path);
    return fd;
}

/* In the child: stdio in place, default signal state, exec. Never returns. */
static void child_exec(char *const argv[], const int fds[3])
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL); /* ignored dispositions survive exec */
    signal(SIGHUP, SIG_DFL);
    for (int i = 0; i < 3; i++) {
        if (fds[i] == i)
            fcntl(i, F_SETFD, 0);
        else if (dup2(fds[i], i) < 0)
            _exit(127);
    }
    execv(argv[0], argv);
    _exit(127);
}

static int build_argv(mon *m, const char *const *args, char **argv)
{
    int n = 0;
    argv[n++] = m->runtime;
    argv[n++] = "--root";
    argv[n++] = m->runc_root;
    for (; *args; args++) {
        if (n >= RUNC_MAX_ARGS - 1)
            return -1;
        argv[n++] = (char *)*args;
    }
    argv[n] = NULL;
    return 0;
}

mon_job *mon_runc(mon *m, const char *const *args, const int stdio[3], mon_job_cb cb, void *data,
                  sl_error *e)
{
    char *argv[RUNC_MAX_ARGS];
    if (build_argv(m, args, argv) < 0)
        return sl_error_set(e, E2BIG, "runc arguments"), NULL;
    mon_job *j = calloc(1, sizeof(*j));
    if (!j)
        return sl_error_set(e, ENOMEM, "job"), NULL;
    j->errfd = -1;
    int fds[3] = {stdio ? stdio[0] : -1, stdio ? stdio[1] : -1, stdio ? stdio[2] : -1};
    if (fds[0] < 0)
        fds[0] = m->devnull;
    if (fds[1] < 0 || fds[2] < 0) {
        if ((j->errfd = capture_file(m)) < 0) {
            free(j);
            return sl_error_set(e, errno, "capture file in %s", m->run_dir), NULL;
        }
        fds[1] = fds[1] < 0 ? j->errfd : fds[1];
        fds[2] = fds[2] < 0 ? j->errfd : fds[2];
    }
    pid_t pid = fork();
    if (pid == 0)
        child_exec(argv, fds);
    if (pid < 0) {
        int err = errno;
        if (j->errfd >= 0)
            close(j->errfd);
        free(j);
        return sl_error_set(e, err, "fork %s", m->runtime), NULL;
    }
    mon_log(MON_DEBUG, "runc %s: pid %d", args[0], (int)pid);
    j->pid = pid;
    j->cb = cb;
    j->data = data;
    j->next = m->jobs;
    m->jobs = j;
    return j;
}

mon_job *mon_job_add(mon *m, pid_t pid, mon_job_cb cb, void *data, sl_error *e)
{
    mon_job *j = calloc(1, sizeof(*j));
    if (!j)
        return sl_error_set(e, ENOMEM, "job"), NULL;
    *j = (mon_job){.next = m->jobs, .pid = pid, .errfd = -1, .cb = cb, .data = data};
    m->jobs = j;
    return j;
}

pid_t mon_job_pid(const mon_job *j)
{
    return j->pid;
}

void mon_job_cancel(mon_job *j)
{
    if (j)
        j->cb = NULL;
}

/* The last SL_MON_ERR_TEXT-1 bytes of the capture, trimmed. */
static void read_err(int fd, char *buf)
{
    buf[0] = '\0';
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return;
    off_t off = st.st_size > SL_MON_ERR_TEXT - 1 ? st.st_size - (SL_MON_ERR_TEXT - 1) : 0;
    ssize_t n = pread(fd, buf, SL_MON_ERR_TEXT - 1, off);
    if (n < 0)
        n = 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    for (ssize_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] < 0x20 && buf[i] != '\n')
            buf[i] = ' ';
}

bool mon_jobs_reaped(mon *m, pid_t pid, int status)
{
    for (mon_job **pp = &m->jobs; *pp; pp = &(*pp)->next) {
        mon_job *j = *pp;
        if (j->pid != pid)
            continue;
        *pp = j->next;
        char err[SL_MON_ERR_TEXT];
        read_err(j->errfd, err);
        mon_log(MON_DEBUG, "child %d exited %d%s%s", (int)pid, mon_exit_code(status),
                err[0] ? ": " : "", err);
        if (j->cb)
            j->cb(m, status, err, j->data);
        if (j->errfd >= 0)
            close(j->errfd);
        free(j);
        return true;
    }
    return false;
}

void mon_jobs_release_all(mon *m)
{
    while (m->jobs) {
        mon_job *j = m->jobs;
        m->jobs = j->next;
        if (j->errfd >= 0)
            close(j->errfd);
        free(j);
    }
}
