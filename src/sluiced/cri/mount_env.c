/* What the host offers for mounts, probed once per sluiced: SELinux, and
 * recursive read-only mounts, which need mount_setattr (Linux 5.12) and an
 * OCI runtime that knows the "rro" option (`runc features`, as the CRI's
 * RuntimeHandlerFeatures comment describes). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cri/ctr_mounts.h"

bool sl_runtime_features_have_rro(const char *json_text)
{
    json_t *j = json_loads(json_text, 0, NULL);
    json_t *opts = json_object_get(j, "mountOptions");
    size_t i;
    json_t *o;
    bool found = false;
    json_array_foreach(opts, i, o) found |=
        json_is_string(o) && !strcmp(json_string_value(o), "rro");
    json_decref(j);
    return found;
}

static bool kernel_at_least(int major, int minor)
{
    struct utsname u;
    int ma = 0, mi = 0;
    if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
        return false;
    return ma > major || (ma == major && mi >= minor);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads fd to EOF into buf (NUL-terminated, at most cap - 1 bytes) within
 * the deadline. True on EOF in time. */
static bool read_until_eof(int fd, char *buf, size_t cap, int64_t deadline)
{
    size_t got = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0 || got + 1 >= cap || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            buf[got] = '\0';
            return n == 0;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    return false;
}

/* `<runtime> features` lists "rro". */
static bool runtime_has_rro(const char *runtime)
{
    int out[2];
    if (!runtime || pipe2(out, O_CLOEXEC) < 0)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(out[1], 1);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 2);
        }
        execlp(runtime, runtime, "features", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char *buf = pid > 0 ? malloc(SL_RUNTIME_FEATURES_MAX) : NULL;
    bool eof = buf && read_until_eof(out[0], buf, SL_RUNTIME_FEATURES_MAX,
                                     now_ms() + SL_RUNTIME_FEATURES_TIMEOUT_MS);
    close(out[0]);
    int status = 0;
    if (pid > 0) {
        if (!eof)
            kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    bool ok =
        eof && WIFEXITED(status) && WEXITSTATUS(status) == 0 && sl_runtime_features_have_rro(buf);
    free(buf);
    return ok;
}

void sl_mount_env_probe(const char *runtime, sl_mount_env *env)
{
    static int probed = 0;
    static sl_mount_env cached;
    if (!probed) {
        cached.selinux = access("/sys/fs/selinux/enforce", F_OK) == 0;
        cached.rro = kernel_at_least(5, 12) && runtime_has_rro(runtime);
        probed = 1;
    }
    *env = cached;
}
