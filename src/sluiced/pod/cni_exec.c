/* Running the plugins of a CNI network: one child after the other on the
 * loop (proc/child.h), each fed its configuration on stdin, each with a
 * deadline. ADD passes each result on as the next prevResult; a failure
 * undoes the list with DEL; DEL runs every plugin in reverse. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "pod/cni.h"
#include "proc/child.h"

typedef struct exec_env {
    char cmd[32], id[300], netns[600], ifname[32], path[600], args[900];
} exec_env;

typedef struct cni_op {
    uv_loop_t *loop;
    json_t *list, *caps;
    json_t *prev; /* ADD: the last result; DEL: the result ADD gave */
    char *bin_dir;
    exec_env v;
    uint32_t timeout_ms;
    size_t n, i;      /* plugins; ADD: the next, DEL: one past the next */
    bool del;         /* running DEL (also when undoing a failed ADD) */
    bool add_failed;  /* the DEL undoes a failed ADD: report the ADD's error */
    bool failed;      /* err holds the first failure */
    bool starting;    /* inside *_start: the end is reported by its return */
    bool ended_early; /* ended while starting */
    sl_error err;
    sl_cni_done_fn done;
    void *arg;
} cni_op;

static void fill_env(exec_env *v, const sl_cni_opts *o)
{
    snprintf(v->id, sizeof(v->id), "CNI_CONTAINERID=%s", o->container_id);
    snprintf(v->netns, sizeof(v->netns), "CNI_NETNS=%s", o->netns);
    snprintf(v->ifname, sizeof(v->ifname), "CNI_IFNAME=%s", SL_CNI_IFNAME);
    snprintf(v->path, sizeof(v->path), "CNI_PATH=%s", o->bin_dir);
    snprintf(v->args, sizeof(v->args),
             "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;"
             "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=%s",
             o->pod_namespace ? o->pod_namespace : "", o->pod_name ? o->pod_name : "",
             o->container_id, o->pod_uid ? o->pod_uid : "");
}

/* The plugin in the first directory of the ':'-separated list that has
 * it (CNI_PATH is such a list too). */
static char *find_plugin(const char *dirs, const char *type)
{
    if (strchr(type, '/'))
        return NULL;
    SL_AUTOFREE char *copy = strdup(dirs);
    char *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        char *exe = sl_path_join(d, type);
        if (exe && access(exe, X_OK) == 0)
            return exe;
        free(exe);
    }
    return NULL;
}

/* The text of a CNI error answer ({"code":N,"msg":"..","details":".."}). */
static void plugin_error(sl_error *e, const char *command, const char *type, const char *out,
                         const sl_child_result *r)
{
    json_t *j = out && *out ? json_loads(out, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(j, "msg"));
    const char *details = json_string_value(json_object_get(j, "details"));
    char st[64];
    sl_error_set(e, 0, "CNI %s with plugin %s failed: %s%s%s", command, type,
                 msg ? msg : (out && *out ? out : sl_child_status_text(r, st, sizeof(st))),
                 details ? ": " : "", details ? details : "");
    json_decref(j);
}

static void op_free(cni_op *op)
{
    json_decref(op->list);
    json_decref(op->caps);
    json_decref(op->prev);
    free(op->bin_dir);
    free(op);
}

static void op_end(cni_op *op)
{
    if (op->starting) {
        op->ended_early = true;
        return;
    }
    if (op->failed) {
        op->done(op->arg, -1, NULL, NULL, &op->err);
    } else if (op->del) {
        op->done(op->arg, 0, NULL, NULL, NULL);
    } else {
        char *ip = NULL;
        if (op->prev)
            sl_cni_result_obj_ips(op->prev, &ip, 1);
        SL_AUTOFREE char *res = op->prev ? json_dumps(op->prev, JSON_COMPACT) : strdup("{}");
        op->done(op->arg, 0, ip, res, NULL);
        free(ip);
    }
    op_free(op);
}

static void fail(cni_op *op, const sl_error *e)
{
    if (op->failed)
        return;
    op->failed = true;
    op->err = *e;
}

static void child_done(void *arg, const sl_child_result *r);

/* Runs plugin i of the list with the current command; -1 (*e) when it
 * could not start. */
static int run_plugin(cni_op *op, size_t i, sl_error *e)
{
    json_t *plugin = sl_cni_plugin_conf(op->list, i, op->caps, op->prev, e);
    if (!plugin)
        return -1;
    const char *type = json_string_value(json_object_get(plugin, "type"));
    const char *command = op->del ? "DEL" : "ADD";
    SL_AUTOFREE char *conf = json_dumps(plugin, JSON_COMPACT);
    SL_AUTOFREE char *exe = find_plugin(op->bin_dir, type);
    char what[300];
    snprintf(what, sizeof(what), "CNI plugin %s (%s)", type, command);
    int rc = -1;
    if (!conf)
        sl_error_set(e, ENOMEM, "%s", what);
    else if (!exe)
        sl_error_set(e, ENOENT, "CNI plugin %s not found in %s", type, op->bin_dir);
    snprintf(op->v.cmd, sizeof(op->v.cmd), "CNI_COMMAND=%s", command);
    char *envp[] = {op->v.cmd,
                    op->v.id,
                    op->v.netns,
                    op->v.ifname,
                    op->v.path,
                    op->v.args,
                    "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                    NULL};
    char *argv[] = {exe, NULL};
    sl_child_opts co = {.what = what,
                        .file = exe,
                        .argv = argv,
                        .env = envp,
                        .input = conf,
                        .input_len = conf ? strlen(conf) : 0,
                        .max_output = SL_CNI_MAX_OUTPUT,
                        .timeout_ms = op->timeout_ms,
                        .timeout_key = SL_CNI_TIMEOUT_KEY};
    if (conf && exe)
        rc = sl_child_start(op->loop, &co, child_done, op, NULL, e);
    json_decref(plugin);
    return rc;
}

static void del_next(cni_op *op)
{
    while (op->i > 0) {
        sl_error e;
        if (run_plugin(op, --op->i, &e) == 0)
            return; /* child_done goes on */
        if (!op->add_failed)
            fail(op, &e);
    }
    op_end(op);
}

/* A failed ADD: report e after DEL of the whole list, as libcni does. */
static void undo_add(cni_op *op, const sl_error *e)
{
    fail(op, e);
    op->del = true;
    op->add_failed = true;
    op->i = op->n;
    del_next(op);
}

static void add_next(cni_op *op)
{
    if (op->i == op->n) {
        op_end(op);
        return;
    }
    sl_error e;
    if (run_plugin(op, op->i, &e) < 0)
        undo_add(op, &e);
}

/* A plugin that prints nothing passes the previous result on. */
static void take_result(cni_op *op, const char *out)
{
    json_t *res = *out ? json_loads(out, 0, NULL) : NULL;
    if (res) {
        json_decref(op->prev);
        op->prev = res;
    }
}

static void child_done(void *arg, const sl_child_result *r)
{
    cni_op *op = arg;
    sl_error e = r->error;
    bool ok = !r->error.msg[0] && r->term_signal == 0 && r->exit_status == 0;
    if (!r->error.msg[0] && !ok) {
        json_t *plugin = json_array_get(json_object_get(op->list, "plugins"), op->i);
        const char *type = json_string_value(json_object_get(plugin, "type"));
        plugin_error(&e, op->del ? "DEL" : "ADD", type ? type : "?", r->output, r);
    }
    if (op->del) {
        if (!ok && !op->add_failed)
            fail(op, &e);
        del_next(op);
    } else if (!ok) {
        undo_add(op, &e);
    } else {
        take_result(op, r->output);
        op->i++;
        add_next(op);
    }
}

static cni_op *op_new(uv_loop_t *loop, const sl_cni_opts *o, const char *result,
                      sl_cni_done_fn done, void *arg, sl_error *e)
{
    SL_AUTOFREE char *path = NULL;
    json_t *list = sl_cni_config(o->conf_dir, &path, e);
    if (!list)
        return NULL;
    cni_op *op = calloc(1, sizeof(*op));
    if (op) {
        op->list = list;
        op->caps = sl_cni_capability_args(o);
        op->bin_dir = strdup(o->bin_dir);
        op->prev = result ? json_loads(result, 0, NULL) : NULL;
    }
    if (!op || !op->caps || !op->bin_dir) {
        if (op)
            op_free(op);
        else
            json_decref(list);
        sl_error_set(e, ENOMEM, "CNI");
        return NULL;
    }
    op->loop = loop;
    op->n = json_array_size(json_object_get(list, "plugins"));
    if (op->n == 0) {
        op_free(op);
        sl_error_set(e, 0, "the CNI network configuration in %s has no plugins", o->conf_dir);
        return NULL;
    }
    op->timeout_ms = o->plugin_timeout_ms;
    op->done = done;
    op->arg = arg;
    fill_env(&op->v, o);
    return op;
}

/* Runs first(op). The list has plugins, so an end before it returns is a
 * failure of every one of them to start: the caller's -1. */
static int run_start(cni_op *op, void (*first)(cni_op *), sl_error *e)
{
    op->starting = true;
    first(op);
    op->starting = false;
    if (!op->ended_early)
        return 0;
    if (e)
        *e = op->err;
    op_free(op);
    return -1;
}

int sl_cni_add_start(uv_loop_t *loop, const sl_cni_opts *o, sl_cni_done_fn done, void *arg,
                     sl_error *e)
{
    cni_op *op = op_new(loop, o, NULL, done, arg, e);
    return op ? run_start(op, add_next, e) : -1;
}

int sl_cni_del_start(uv_loop_t *loop, const sl_cni_opts *o, const char *result, sl_cni_done_fn done,
                     void *arg, sl_error *e)
{
    cni_op *op = op_new(loop, o, result, done, arg, e);
    if (!op)
        return -1;
    op->del = true;
    op->i = op->n;
    return run_start(op, del_next, e);
}

/* ---- waiting on a private loop ---- */

typedef struct sync_end {
    int rc;
    char *ip, *result;
    sl_error e;
} sync_end;

static void sync_done(void *arg, int rc, const char *ip, const char *result, const sl_error *e)
{
    sync_end *s = arg;
    s->rc = rc;
    s->ip = ip ? strdup(ip) : NULL;
    s->result = result ? strdup(result) : NULL;
    if (e)
        s->e = *e;
}

static int run_sync(bool del, const sl_cni_opts *o, const char *result, sync_end *s, sl_error *e)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop) < 0)
        return sl_error_set(e, ENOMEM, "CNI: event loop");
    int rc = del ? sl_cni_del_start(&loop, o, result, sync_done, s, e)
                 : sl_cni_add_start(&loop, o, sync_done, s, e);
    if (rc == 0) {
        uv_run(&loop, UV_RUN_DEFAULT);
        rc = s->rc;
        if (rc < 0 && e)
            *e = s->e;
    }
    uv_loop_close(&loop);
    return rc;
}

int sl_cni_add(const sl_cni_opts *o, char **ip, char **result, sl_error *e)
{
    sync_end s = {0};
    int rc = run_sync(false, o, NULL, &s, e);
    *ip = rc == 0 ? s.ip : NULL;
    *result = rc == 0 ? s.result : NULL;
    if (rc < 0) {
        free(s.ip);
        free(s.result);
    }
    return rc;
}

int sl_cni_del(const sl_cni_opts *o, const char *result, sl_error *e)
{
    sync_end s = {0};
    int rc = run_sync(true, o, result, &s, e);
    free(s.ip);
    free(s.result);
    return rc;
}
