/* exec and attach: flags, ExecSync, and the streaming runner (stream.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_util.h"
#include "stream.h"

#define EXECSYNC_NO_TIMEOUT_MS (24u * 3600 * 1000) /* call deadline for --timeout 0 */

static const char exec_help[] =
    "Usage: sluicectl exec [-i] [-t] [-s] [--timeout N] [-r spdy|websocket] CONTAINER CMD "
    "[ARG...]\n"
    "\n"
    "Runs CMD in a running container. sluicectl exits with CMD's exit code.\n"
    "\n"
    "  -i, --interactive       send stdin to CMD (its EOF is passed on)\n"
    "  -t, --tty               run CMD on a terminal: the local one is put into raw\n"
    "                          mode, its size is sent at once and on every SIGWINCH\n"
    "  -s, --sync              use ExecSync: print stdout, then stderr (no stdin, no tty)\n"
    "      --timeout N         with -s: seconds CMD may run (0 = no limit)\n"
    "  -r, --transport T       spdy (default) or websocket; websocket offers\n"
    "                          v5.channel.k8s.io then v4.channel.k8s.io and falls back to\n"
    "                          SPDY (with a new URL) when the server refuses (-D says so)\n"
    "  -h, --help              this help\n";

typedef struct exec_opts {
    ctl *c;
    bool in, tty, sync;
    uint64_t timeout;
    sl_transport transport;
    const char *detach_keys;
} exec_opts;

static int exec_opt(void *arg, int id, const char *val)
{
    exec_opts *o = arg;
    switch (id) {
    case 'i':
        o->in = true;
        return 0;
    case 't':
        o->tty = true;
        return 0;
    case 's':
        o->sync = true;
        return 0;
    case 'T':
        return ctl_parse_uint(o->c, "--timeout", val, 86400 * 365, &o->timeout);
    case 'r':
        return ctl_parse_transport(o->c, val, false, &o->transport);
    case 'k':
        o->detach_keys = val;
        return 0;
    default:
        return -1;
    }
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

/* The command's exit code, or -1 with e set when the call failed. */
static int exec_sync(ctl *c, const exec_opts *o, const char *id, char **cmd, size_t ncmd,
                     sl_error *e)
{
    Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
    req.container_id = (char *)id;
    req.cmd = cmd;
    req.n_cmd = ncmd;
    req.timeout = (int64_t)o->timeout;
    uint32_t tmo =
        o->timeout ? c->timeout_ms + (uint32_t)o->timeout * 1000u : EXECSYNC_NO_TIMEOUT_MS;
    ProtobufCMessage *r;
    sl_error ce;
    if (ctl_call_raw(c, false, "ExecSync", &req.base, &runtime__v1__exec_sync_response__descriptor,
                     &r, tmo, &ce, e) != SL_CRI_OK)
        return -1;
    Runtime__V1__ExecSyncResponse *x = (void *)r;
    write_all(STDOUT_FILENO, x->stdout.data, x->stdout.len);
    write_all(STDERR_FILENO, x->stderr.data, x->stderr.len);
    int code = x->exit_code;
    ctl_free_msg(r);
    return code;
}

int cmd_exec(ctl *c, int argc, char **argv)
{
    sl_error e;
    static const struct option lo[] = {{"interactive", no_argument, NULL, 'i'},
                                       {"tty", no_argument, NULL, 't'},
                                       {"sync", no_argument, NULL, 's'},
                                       {"timeout", required_argument, NULL, 'T'},
                                       {"transport", required_argument, NULL, 'r'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    exec_opts o = {.c = c, .transport = SL_TRANSPORT_SPDY};
    int first, rc;
    if (ctl_parse(c, argc, argv, "+itsr:", lo, exec_help, exec_opt, &o, &first, &rc))
        return rc;
    if (argc - first < 2)
        return ctl_usage(c, "needs CONTAINER and CMD (see sluicectl exec --help)");
    if (o.sync && (o.in || o.tty))
        return ctl_usage(c, "-s (ExecSync) takes neither -i nor -t");
    char *id = ctl_resolve_ctr(c, argv[first], &e);
    if (!id)
        return ctl_fail(c, &e);
    if (o.sync) {
        rc = exec_sync(c, &o, id, argv + first + 1, (size_t)(argc - first - 1), &e);
        if (rc < 0)
            rc = ctl_fail(c, &e);
    } else {
        ctl_stream_req r = {.ctr_id = id,
                            .cmd = argv + first + 1,
                            .ncmd = (size_t)(argc - first - 1),
                            .tty = o.tty,
                            .stdin_on = o.in,
                            .transport = o.transport};
        rc = ctl_stream_run(c, &r, &e);
        if (rc < 0)
            rc = ctl_fail(c, &e);
    }
    free(id);
    return rc;
}

static const char attach_help[] =
    "Usage: sluicectl attach [-i] [-t] [-r spdy|websocket] [--detach-keys KEYS] CONTAINER\n"
    "\n"
    "Attaches to a running container's stdio. -t is refused for a container that\n"
    "has no terminal (its stderr would be lost).\n"
    "\n"
    "  -i, --stdin             send stdin to the container\n"
    "  -t, --tty               the container has a terminal: the local one is put into\n"
    "                          raw mode and its size sent at once and on SIGWINCH\n"
    "  -r, --transport T       spdy (default) or websocket (falls back to SPDY when refused)\n"
    "      --detach-keys KEYS  with -i: keys that detach and leave the container running\n"
    "                          (default ctrl-p,ctrl-q; \"\" for none)\n"
    "  -h, --help              this help\n";

/* The container's tty from verbose ContainerStatus info ({"info": {"config":
 * {"tty": ...}}}, sluiced and containerd; containerd leaves a false tty
 * out): 1, 0, or -1 when the runtime does not say. */
static int ctr_tty(ctl *c, const char *id)
{
    sl_error e; /* a failed call is "does not say": the attach goes on */
    Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
    req.container_id = (char *)id;
    req.verbose = true;
    Runtime__V1__ContainerStatusResponse *r = (void *)ctl_rt_call(
        c, "ContainerStatus", &req.base, &runtime__v1__container_status_response__descriptor, &e);
    int tty = -1;
    for (size_t i = 0; r && i < r->n_info; i++) {
        if (strcmp(r->info[i]->key, "info"))
            continue;
        json_t *j = json_loads(r->info[i]->value, 0, NULL);
        json_t *cfg = json_object_get(j, "config");
        if (json_is_object(cfg))
            tty = json_is_true(json_object_get(cfg, "tty"));
        json_decref(j);
    }
    ctl_free_msg(r);
    return tty;
}

int cmd_attach(ctl *c, int argc, char **argv)
{
    sl_error e;
    static const struct option lo[] = {{"stdin", no_argument, NULL, 'i'},
                                       {"tty", no_argument, NULL, 't'},
                                       {"transport", required_argument, NULL, 'r'},
                                       {"detach-keys", required_argument, NULL, 'k'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    exec_opts o = {.c = c, .transport = SL_TRANSPORT_SPDY, .detach_keys = CTL_DEFAULT_DETACH_KEYS};
    int first, rc;
    if (ctl_parse(c, argc, argv, "itr:", lo, attach_help, exec_opt, &o, &first, &rc))
        return rc;
    if (argc - first != 1)
        return ctl_usage(c, "needs exactly one CONTAINER (see sluicectl attach --help)");
    ctl_stream_req r = {.attach = true, .tty = o.tty, .stdin_on = o.in, .transport = o.transport};
    if (ctl_parse_detach_keys(o.detach_keys, r.detach, &r.ndetach) < 0)
        return ctl_usage(c,
                         "--detach-keys \"%s\": use a comma-separated list of ctrl-<key> or "
                         "single characters, e.g. ctrl-p,ctrl-q",
                         o.detach_keys);
    char *id = ctl_resolve_ctr(c, argv[first], &e);
    if (!id)
        return ctl_fail(c, &e);
    /* The runtime attaches with the container's own tty: -t on a container
     * without one would silently lose its stderr. */
    if (o.tty && ctr_tty(c, id) == 0) {
        sl_error_set(&e, 0,
                     "container %s has no terminal (its config has tty: false): attach without -t",
                     id);
        free(id);
        return ctl_fail(c, &e);
    }
    r.ctr_id = id;
    rc = ctl_stream_run(c, &r, &e);
    if (rc < 0)
        rc = ctl_fail(c, &e);
    free(id);
    return rc;
}
