/* The server side of a runtime as processes: its daemon plus the per-pod
 * helpers (sluice-mon, containerd-shim) whose command line names this
 * instance. CPU from /proc/<pid>/stat utime+stime, memory as RSS, fds by
 * counting /proc/<pid>/fd. */
#include "bench.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct pstat {
    pid_t pid, ppid;
    char comm[32];
    uint64_t ticks, cticks;
    uint64_t rss_pages;
} pstat;

static int read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

static int read_stat(pid_t pid, pstat *p)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (read_file(path, buf, sizeof(buf)) < 0)
        return -1;
    char *l = strchr(buf, '('), *r = strrchr(buf, ')');
    if (!l || !r || r < l)
        return -1;
    size_t n =
        (size_t)(r - l - 1) < sizeof(p->comm) - 1 ? (size_t)(r - l - 1) : sizeof(p->comm) - 1;
    memcpy(p->comm, l + 1, n);
    p->comm[n] = '\0';
    /* After ") ": state(3) ppid(4) ... utime(14) stime(15) cutime(16)
     * cstime(17) ... rss(24). */
    char state;
    int ppid;
    unsigned long ut, st;
    long cut, cst, rss;
    if (sscanf(r + 2,
               "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld %*d %*d %*d %*d %*u "
               "%*u %ld",
               &state, &ppid, &ut, &st, &cut, &cst, &rss) != 7)
        return -1;
    if (state == 'Z')
        return -1;
    p->pid = pid;
    p->ppid = ppid;
    p->ticks = ut + st;
    p->cticks = (uint64_t)(cut > 0 ? cut : 0) + (uint64_t)(cst > 0 ? cst : 0);
    p->rss_pages = rss > 0 ? (uint64_t)rss : 0;
    return 0;
}

static bool cmdline_has(pid_t pid, const char *needle)
{
    char path[64], buf[8192];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    int n = read_file(path, buf, sizeof(buf));
    if (n <= 0)
        return false;
    for (int i = 0; i < n; i++)
        if (!buf[i])
            buf[i] = ' ';
    return strstr(buf, needle) != NULL;
}

static bool is_server(bn_rt *rt, const pstat *p)
{
    bool yes =
        p->pid == rt->daemon || (!strncmp(p->comm, rt->helper_comm, strlen(rt->helper_comm)) &&
                                 cmdline_has(p->pid, rt->helper_match));
    if (!yes)
        return false;
    for (int i = 0; i < rt->nseen; i++)
        if (rt->seen[i] == p->pid)
            return true;
    if (rt->nseen < BN_MAX_PIDS)
        rt->seen[rt->nseen++] = p->pid;
    return true;
}

/* Calls fn for every live process. */
static void each_proc(void (*fn)(const pstat *p, void *arg), void *arg)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        pstat p;
        if (*end || pid <= 0 || read_stat((pid_t)pid, &p) < 0)
            continue;
        fn(&p, arg);
    }
    closedir(d);
}

typedef struct cpu_arg {
    bn_rt *rt;
    bn_cpu *s;
} cpu_arg;

static void cpu_one(const pstat *p, void *arg)
{
    cpu_arg *a = arg;
    if (a->s->n < BN_MAX_PIDS && is_server(a->rt, p)) {
        a->s->pid[a->s->n] = p->pid;
        a->s->cticks[a->s->n] = p->cticks;
        a->s->ticks[a->s->n++] = p->ticks;
    }
}

void bn_cpu_snap(bn_rt *rt, bn_cpu *s)
{
    cpu_arg a = {rt, s};
    s->n = 0;
    each_proc(cpu_one, &a);
}

static double delta(const bn_cpu *before, const bn_cpu *after, bool reaped)
{
    uint64_t sum = 0;
    for (int i = 0; i < after->n; i++) {
        uint64_t was = 0, now = after->ticks[i] + (reaped ? after->cticks[i] : 0);
        for (int j = 0; j < before->n; j++)
            if (before->pid[j] == after->pid[i])
                was = before->ticks[j] + (reaped ? before->cticks[j] : 0);
        if (now > was)
            sum += now - was;
    }
    return (double)sum / (double)sysconf(_SC_CLK_TCK);
}

double bn_cpu_delta(const bn_cpu *before, const bn_cpu *after)
{
    return delta(before, after, false);
}

double bn_cpu_delta_reaped(const bn_cpu *before, const bn_cpu *after)
{
    return delta(before, after, true);
}

static int count_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

typedef struct mem_arg {
    bn_rt *rt;
    bn_mem *m;
    pid_t servers[BN_MAX_PIDS];
    int nservers;
    double page_kib;
} mem_arg;

static void mem_server(const pstat *p, void *arg)
{
    mem_arg *a = arg;
    if (!is_server(a->rt, p))
        return;
    a->m->rss_kib += (double)p->rss_pages * a->page_kib;
    if (p->pid == a->rt->daemon)
        a->m->daemon_rss_kib += (double)p->rss_pages * a->page_kib;
    a->m->fds += count_fds(p->pid);
    a->m->procs++;
    if (a->nservers < BN_MAX_PIDS)
        a->servers[a->nservers++] = p->pid;
}

static void mem_child(const pstat *p, void *arg)
{
    mem_arg *a = arg;
    if (strncmp(p->comm, "runc", 4))
        return;
    for (int i = 0; i < a->nservers; i++) {
        if (a->servers[i] == p->ppid) {
            a->m->child_rss_kib += (double)p->rss_pages * a->page_kib;
            a->m->children++;
            return;
        }
    }
}

void bn_mem_snap(bn_rt *rt, bn_mem *m)
{
    mem_arg a = {.rt = rt, .m = m, .page_kib = (double)sysconf(_SC_PAGESIZE) / 1024.0};
    memset(m, 0, sizeof(*m));
    each_proc(mem_server, &a);
    each_proc(mem_child, &a);
}
