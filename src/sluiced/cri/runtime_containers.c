/* RuntimeService container lifecycle: create, start, stop, remove,
 * reopen log. The pod monitor runs the containers; these handlers prepare
 * the bundle and keep the records. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/rootfs.h"
#include "cri/cri_fields.h"
#include "cri/cri_util.h"
#include "cri/image_jobs.h"
#include "cri/ctr_resources.h"
#include "cri/ctr_namespaces.h"
#include "cri/ctr_spec.h"
#include "cri/mon_adopt.h"
#include "cri/mon_death.h"
#include "cri/pod_cgroup.h"
#include "cri/pod_config.h"
#include "fsutil.h"
#include "state/state.h"

/* One CRI call waiting for its monitor reply. */
typedef struct ctr_op {
    sl_rt *rt;
    sl_grpc_call *call;
    char id[SL_ID_HEX + 1];
    int kind; /* which call */
} ctr_op;

enum { OP_CREATE, OP_START, OP_STOP, OP_REMOVE_STOP, OP_REMOVE, OP_REOPEN };

void sl_cri_forget_ctr(sl_rt *rt, sl_ctr *c)
{
    sl_error e;
    SL_AUTOFREE char *dir = sl_state_dir(rt->model.state_dir, "containers", c->id);
    if (dir)
        sl_rootfs_umount(dir, &e);
    sl_model_remove_ctr(&rt->model, c, &e);
}

/* Forgets a removed container and tells the event subscribers (the event
 * lists the pod's remaining containers, as containerd's does). */
static void forget_deleted(sl_rt *rt, sl_ctr *c)
{
    char id[SL_ID_HEX + 1], pod_id[SL_ID_HEX + 1];
    snprintf(id, sizeof(id), "%s", c->id);
    snprintf(pod_id, sizeof(pod_id), "%s", c->pod_id);
    sl_cri_forget_ctr(rt, c);
    sl_events_ctr(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT, id, pod_id);
}

static const char *reply_error(const json_t *reply)
{
    if (!reply)
        return "the pod monitor went away";
    if (json_is_true(json_object_get(reply, "ok")))
        return NULL;
    const char *err = json_string_value(json_object_get(reply, "error"));
    return err ? err : "the pod monitor refused";
}

static void reply_empty(sl_grpc_call *call)
{
    /* Every empty CRI response packs to zero bytes. */
    Runtime__V1__StartContainerResponse resp = RUNTIME__V1__START_CONTAINER_RESPONSE__INIT;
    sl_grpc_call_reply(call, &resp.base);
}

static void send_op(ctr_op *op, sl_pod *p, json_t *req);

static void op_reply(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    ctr_op *op = arg;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    const char *err = reply_error(reply);
    sl_ctr *c = sl_model_ctr(&op->rt->model, op->id);
    if (op->kind == OP_CREATE && err) {
        if (c)
            sl_cri_forget_ctr(op->rt, c);
        sl_grpc_call_fail(op->call, SL_GRPC_UNKNOWN, "failed to create container: %s", err);
    } else if (op->kind == OP_CREATE) {
        if (c) /* kept for a monitor that adopts it if this one dies */
            sl_mon_stdio_fetch(op->rt, sl_model_pod(&op->rt->model, c->pod_id), c);
        if (c)
            sl_events_ctr(op->rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT, c->id,
                          c->pod_id);
        Runtime__V1__CreateContainerResponse resp = RUNTIME__V1__CREATE_CONTAINER_RESPONSE__INIT;
        resp.container_id = op->id;
        sl_grpc_call_reply(op->call, &resp.base);
    } else if (op->kind == OP_REMOVE_STOP && c) {
        /* stopped (or gone): now remove it from the monitor */
        op->kind = OP_REMOVE;
        sl_pod *p = sl_model_pod(&op->rt->model, c->pod_id);
        send_op(op, p, json_pack("{s:s, s:s}", "type", "remove", "container_id", op->id));
        return;
    } else if (op->kind == OP_REMOVE || op->kind == OP_REMOVE_STOP) {
        if (c)
            forget_deleted(op->rt, c);
        reply_empty(op->call);
    } else if (err && op->kind == OP_START) {
        sl_grpc_call_fail(op->call, SL_GRPC_UNKNOWN, "failed to start container \"%s\": %s", op->id,
                          err);
    } else if (err) {
        sl_grpc_call_fail(op->call, SL_GRPC_UNKNOWN, "%s", err);
    } else {
        if (op->kind == OP_START && c)
            sl_events_ctr(op->rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STARTED_EVENT, c->id,
                          c->pod_id);
        reply_empty(op->call);
    }
    free(op);
}

static void orphan_killed(void *arg)
{
    json_t *ok = json_pack("{s:b}", "ok", true);
    op_reply(arg, ok, NULL, 0);
    json_decref(ok);
}

/* A stop or remove in a pod whose monitor died: the OCI runtime kills the
 * container (at once: the grace period needs the monitor). */
static bool kill_orphan(ctr_op *op, sl_pod *p)
{
    sl_ctr *c = sl_model_ctr(&op->rt->model, op->id);
    if (!p || !p->mon_dead || !c ||
        (op->kind != OP_STOP && op->kind != OP_REMOVE_STOP && op->kind != OP_REMOVE))
        return false;
    op->kind = op->kind == OP_STOP ? OP_STOP : OP_REMOVE;
    if (sl_mon_kill_orphan(op->rt, p, c, orphan_killed, op) < 0)
        orphan_killed(op);
    return true;
}

/* Sends req to the pod's monitor; without one the reply is "gone". */
static void send_op(ctr_op *op, sl_pod *p, json_t *req)
{
    sl_error e;
    if (kill_orphan(op, p)) {
        json_decref(req);
        return;
    }
    sl_monc *m = p ? sl_rt_pod_mon(op->rt, p, &e) : NULL;
    if (!m || sl_monc_request(m, req, NULL, 0, op_reply, op, &e) < 0) {
        if (!m)
            json_decref(req);
        op_reply(op, NULL, NULL, 0);
    }
}

static ctr_op *new_op(sl_grpc_call *call, sl_rt *rt, const char *id, int kind)
{
    ctr_op *op = calloc(1, sizeof(*op));
    if (!op) {
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    op->rt = rt;
    op->call = call;
    op->kind = kind;
    snprintf(op->id, sizeof(op->id), "%s", id);
    return op;
}

static sl_ctr *find_ctr(sl_grpc_call *call, sl_rt *rt, const char *id)
{
    sl_ctr *c = sl_model_ctr(&rt->model, id);
    if (!c)
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "container \"%s\" not found", id);
    return c;
}

/* ---- create ---- */

static char *log_path_of(const sl_pod *p, const Runtime__V1__ContainerConfig *c)
{
    if (!*p->config->log_directory || !*c->log_path)
        return strdup("");
    return sl_path_join(p->config->log_directory, c->log_path);
}

/* The overlay; in a pod with a user namespace, over layers idmapped
 * through it, with the upper layer the container root's. */
static int mount_rootfs(const char *dir, const sl_image *img, const sl_pod_userns *u,
                        const char *userns_path, sl_error *e)
{
    const char *const *layers = (const char *const *)img->layer_dirs;
    if (!u->on)
        return sl_rootfs_mount(dir, layers, img->n_layers, NULL, e);
    sl_rootfs_userns ns = {.fd = open(userns_path, O_RDONLY | O_CLOEXEC),
                           .root_uid = u->uid.host_id,
                           .root_gid = u->gid.host_id};
    if (ns.fd < 0)
        return sl_error_set(e, errno, "open the pod's user namespace %s", userns_path);
    int rc = sl_rootfs_mount(dir, layers, img->n_layers, &ns, e);
    close(ns.fd);
    return rc;
}

/* Rootfs, config.json and the record; the monitor does the rest. */
static sl_ctr *prepare(sl_rt *rt, sl_pod *p, const char *id, const Runtime__V1__ContainerConfig *c,
                       const sl_image *img, const sl_ctr_res *res, sl_error *e)
{
    SL_AUTOFREE char *dir = sl_state_dir(rt->model.state_dir, "containers", id);
    SL_AUTOFREE char *rootfs = dir ? sl_path_join(dir, "rootfs") : NULL;
    SL_AUTOFREE char *cfg_path = dir ? sl_path_join(dir, "config.json") : NULL;
    SL_AUTOFREE char *log = log_path_of(p, c);
    SL_AUTOFREE char *cg = sl_pod_cgroup_ctr_path(p, id);
    if (!cfg_path || !log || !cg) {
        sl_error_set(e, ENOMEM, "container");
        return NULL;
    }
    sl_pod_ns_modes modes;
    sl_ctr_ns_plan plan;
    __attribute__((cleanup(sl_ctr_ns_fini))) sl_ctr_ns ns = {0};
    const sl_mount_env *menv = &rt->mount_probe.env; /* done: the handler waited */
    sl_ns_pod_modes_load(p->rec, &modes);
    if (sl_ns_ctr_plan(c, &modes, &plan, e) < 0 || sl_ctr_ns_resolve(rt, p, &plan, &ns, e) < 0)
        return NULL;
    if (mount_rootfs(dir, img, &modes.userns, ns.user, e) < 0)
        return NULL;
    SL_AUTOFREE char *idmap_dir = sl_rootfs_idmap_dir(dir);
    SL_AUTOFREE char *run_dir = sl_rt_pod_run_dir(rt, p->id);
    SL_AUTOFREE char *etc_dir = run_dir ? sl_path_join(run_dir, SL_POD_ETC_DIR) : NULL;
    /* The pod's UTS namespace has its hostname already (the node's when the
     * config has none); host-network pods have none of their own. */
    bool uts = !sl_rec_bool(p->rec, "host_network");
    json_t *user = NULL;
    sl_ctr_spec_in in = {.config = c,
                         .image = &img->config,
                         .rootfs = rootfs,
                         .ns_dir = sl_rec_str(p->rec, "ns_dir"),
                         .ns = &ns,
                         .mount_env = menv,
                         .hostname = uts && *p->config->hostname ? p->config->hostname : NULL,
                         .cgroups_path = cg,
                         .pod_etc_dir = etc_dir,
                         .pod = p->config,
                         .user = &user,
                         .resources = res->oci,
                         .oom_score_adj = &res->oom_score_adj,
                         .userns = &modes.userns,
                         .idmap_dir = idmap_dir};
    SL_AUTOFREE char *spec = sl_ctr_spec(&in, e);
    if (!spec || sl_write_file_atomic(cfg_path, spec, strlen(spec), 0644, e) < 0)
        goto fail;
    if (*log) {
        SL_AUTOFREE char *copy = strdup(log);
        if (!copy || sl_mkdir_p(dirname(copy), 0755, e) < 0)
            goto fail;
    }
    const char *repo_digest = img->n_repo_digests ? img->repo_digests[0] : img->id;
    json_t *rec = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:s}", "id", id, "created_at",
                            (json_int_t)sl_now_ns(), "image_id", img->id, "image_ref", repo_digest,
                            "image_name", c->image->image, "log_path", log, "bundle", dir);
    if (rec && user)
        json_object_set(rec, "user", user);
    json_decref(user);
    user = NULL;
    if (rec)
        json_object_set(rec, "resources", res->rec);
    sl_ctr *ctr = rec ? sl_model_add_ctr(&rt->model, id, p->id, c, rec, e) : NULL;
    json_decref(rec);
    if (ctr)
        return ctr;
fail:;
    json_decref(user);
    sl_error ignored;
    sl_rootfs_umount(dir, &ignored);
    sl_rm_rf(dir, &ignored);
    return NULL;
}

void sl_cri_create_container(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__CreateContainerRequest *req = (const void *)sl_grpc_call_request(call);
    const Runtime__V1__ContainerConfig *c = req->config;
    if (!c || !c->metadata || !*c->metadata->name || !c->image || !*c->image->image) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT,
                          "container config with metadata name and image is required");
        return;
    }
    sl_error e = {0};
    if (sl_cri_check_fields(&c->base, "config", &e) < 0 ||
        sl_cri_log_path_check(c->log_path, &e) < 0) {
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    if (!rt->mount_probe.done) { /* sluiced just started: what mounts can do comes first */
        sl_waitq_retry(&rt->mount_probe.waiters, sl_cri_create_container, call, arg);
        return;
    }
    sl_pod *p = sl_cri_ready_pod(call, rt, req->pod_sandbox_id);
    if (!p)
        return;
    const sl_image *img = sl_image_store_find(rt->images, c->image->image, &e);
    if (!img && sl_imgq_may_give(rt->imgq, c->image->image, true)) { /* being imported */
        sl_imgq_retry(rt->imgq, sl_cri_create_container, call, arg);
        return;
    }
    if (!img) {
        sl_grpc_call_fail(call, e.errnum == ENOENT ? SL_GRPC_NOT_FOUND : SL_GRPC_INVALID_ARGUMENT,
                          "image \"%s\": %s", c->image->image, e.msg);
        return;
    }
    sl_ctr_res res;
    if (sl_cri_res_create(c, &res, &e) < 0) {
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    char id[SL_ID_HEX + 1];
    sl_model_new_id(id);
    sl_ctr *ctr = prepare(rt, p, id, c, img, &res, &e);
    sl_ctr_res_fini(&res);
    if (!ctr) {
        sl_grpc_call_fail(call, e.code ? e.code : SL_GRPC_UNKNOWN, "%s", e.msg);
        return;
    }
    ctr_op *op = new_op(call, rt, id, OP_CREATE);
    if (!op)
        return;
    send_op(op, p,
            json_pack("{s:s, s:s, s:s, s:b, s:b, s:b, s:s}", "type", "create", "container_id", id,
                      "bundle", sl_rec_str(ctr->rec, "bundle"), "tty", c->tty, "stdin", c->stdin,
                      "stdin_once", c->stdin_once, "log_path", sl_rec_str(ctr->rec, "log_path")));
}

/* ---- start, stop, remove, reopen ---- */

static void simple_op(sl_grpc_call *call, sl_rt *rt, const char *id, int kind, json_t *req)
{
    sl_ctr *c = find_ctr(call, rt, id);
    if (!c) {
        json_decref(req);
        return;
    }
    ctr_op *op = new_op(call, rt, id, kind);
    if (!op) {
        json_decref(req);
        return;
    }
    send_op(op, sl_model_pod(&rt->model, c->pod_id), req);
}

void sl_cri_start_container(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__StartContainerRequest *req = (const void *)sl_grpc_call_request(call);
    simple_op(call, cri_rt(arg), req->container_id, OP_START,
              json_pack("{s:s, s:s}", "type", "start", "container_id", req->container_id));
}

void sl_cri_stop_container(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__StopContainerRequest *req = (const void *)sl_grpc_call_request(call);
    int64_t t = req->timeout < 0 ? 0 : req->timeout;
    sl_ctr *c = sl_model_ctr(&cri_rt(arg)->model, req->container_id);
    if (!c) {
        reply_empty(call); /* idempotent, as critest v1.32 requires: already gone is stopped */
        return;
    }
    sl_ctr_status st;
    sl_model_ctr_status(&cri_rt(arg)->model, c, &st);
    if (st.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED) {
        reply_empty(call); /* stopped already (a monitor that adopted the pod may not know it) */
        return;
    }
    simple_op(call, cri_rt(arg), req->container_id, OP_STOP,
              json_pack("{s:s, s:s, s:I}", "type", "stop", "container_id", req->container_id,
                        "timeout", (json_int_t)t));
}

void sl_cri_remove_container(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__RemoveContainerRequest *req = (const void *)sl_grpc_call_request(call);
    if (!sl_model_ctr(&rt->model, req->container_id)) { /* idempotent */
        reply_empty(call);
        return;
    }
    /* A running container is killed first, as the CRI asks. */
    simple_op(call, rt, req->container_id, OP_REMOVE_STOP,
              json_pack("{s:s, s:s, s:i}", "type", "stop", "container_id", req->container_id,
                        "timeout", 0));
}

void sl_cri_reopen_log(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ReopenContainerLogRequest *req = (const void *)sl_grpc_call_request(call);
    sl_ctr *c = find_ctr(call, rt, req->container_id);
    if (!c)
        return;
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, c, &st);
    if (st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING) {
        sl_grpc_call_fail(call, SL_GRPC_FAILED_PRECONDITION, "container \"%s\" is not running",
                          c->id);
        return;
    }
    simple_op(call, rt, c->id, OP_REOPEN,
              json_pack("{s:s, s:s}", "type", "reopen_log", "container_id", c->id));
}
