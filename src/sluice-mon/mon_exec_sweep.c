/* What a killed runc exec (or native starter, mon_nexec.c: it forks the
 * process the same way and joins the container's mount namespace itself)
 * may have started without writing its pid file.
 *
 * runc exec clones the exec'd process as its own child (the namespace
 * stages use CLONE_PARENT) and writes the pid file only after the process
 * runs. A runc killed in between leaves a process nobody knows: at runc's
 * death it is reparented to the monitor (its subreaper). So once the killed
 * runc is reaped, the monitor's children that are in the container's mount
 * namespace, started after that runc and known as no container or exec are
 * what it left, and are killed with their process groups. Every other
 * exec's pid file is read first: a runc writes it before it exits, so an
 * exec whose runc is gone is known by then. An exec whose runc or starter
 * still runs may already have its process, our child too and not known
 * yet: while there is one, the sweep waits for it to end (without this, a
 * storm of 300 timed-out ExecSyncs now and then killed one other exec). */
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mon.h"
#include "proc_stat.h"

#define SWEEP_CHILDREN_TEXT 65536 /* bytes of one task's children list */

int mon_proc_starttime(pid_t pid, unsigned long long *t)
{
    return sl_proc_stat(pid, NULL, t);
}

static int mnt_ns(pid_t pid, ino_t *ino)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
    if (stat(path, &st) < 0)
        return -1;
    *ino = st.st_ino;
    return 0;
}

/* A container, an exec's process, or the runc exec or native starter of
 * an exec still starting: a starter has joined the container's mount
 * namespace and is our child, so without this one exec's sweep killed the
 * starters of others, whose processes nobody then killed. */
static bool known(mon *m, pid_t pid)
{
    for (mon_ctr *c = m->ctrs; c; c = c->next)
        if (c->pid == pid)
            return true;
    for (mon_exec *x = m->execs; x; x = x->next)
        if (x->pid == pid || (x->job && mon_job_pid(x->job) == pid))
            return true;
    return pid == m->pause_pid;
}

/* Kills pid when it is a leftover of the killed runc. */
static void check(mon *m, pid_t pid, ino_t ns, unsigned long long since, const char *exec_id)
{
    ino_t ino;
    unsigned long long start;
    if (known(m, pid) || mnt_ns(pid, &ino) < 0 || ino != ns ||
        mon_proc_starttime(pid, &start) < 0 || start < since)
        return;
    mon_log(MON_INFO, "exec %s: killing pid %d, which its killed runc exec left", exec_id,
            (int)pid);
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Every pid in a task's children file. */
static void check_task(mon *m, const char *tid, ino_t ns, unsigned long long since,
                       const char *exec_id)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/self/task/%s/children", tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    long pid;
    for (int i = 0; i < SWEEP_CHILDREN_TEXT / 2 && fscanf(f, "%ld", &pid) == 1; i++)
        if (pid > 0 && pid <= INT_MAX)
            check(m, (pid_t)pid, ns, since, exec_id);
    fclose(f);
}

/* An exec of the container whose runc or starter runs, its pid unknown. */
static bool starting(mon *m, const char *ctr_id)
{
    for (mon_exec *x = m->execs; x; x = x->next)
        if (x->job && x->pid <= 0 && !strcmp(x->ctr_id, ctr_id))
            return true;
    return false;
}

void mon_exec_sweep(mon *m, const char *ctr_id, unsigned long long since, const char *exec_id)
{
    mon_ctr *c = mon_ctr_find(m, ctr_id);
    ino_t ns;
    if (!c || c->pid <= 0 || mnt_ns(c->pid, &ns) < 0)
        return;
    mon_exec_pids_refresh(m);
    if (starting(m, ctr_id)) {
        if (!c->sweep_since || since < c->sweep_since)
            c->sweep_since = since;
        snprintf(c->sweep_exec, sizeof(c->sweep_exec), "%s", exec_id);
        mon_log(MON_DEBUG,
                "exec %s: what its killed runc left is swept once the execs "
                "starting in %s are known",
                exec_id, ctr_id);
        return;
    }
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d));)
        if (de->d_name[0] != '.')
            check_task(m, de->d_name, ns, since, exec_id);
    closedir(d);
}

void mon_exec_sweep_deferred(mon *m)
{
    for (mon_ctr *c = m->ctrs; c; c = c->next) {
        if (!c->sweep_since)
            continue;
        char exec_id[sizeof(c->sweep_exec)];
        unsigned long long since = c->sweep_since;
        snprintf(exec_id, sizeof(exec_id), "%s", c->sweep_exec);
        c->sweep_since = 0;
        mon_exec_sweep(m, c->id, since, exec_id); /* deferred again while one starts */
    }
}
