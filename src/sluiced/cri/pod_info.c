/* The verbose info of a pod sandbox (see pod_info.h). */
#include "cri/pod_info.h"

#include <stdlib.h>

#include "cri/ctr_namespaces.h"
#include "cri/pb_json.h"
#include "fsutil.h"
#include "mon_proto.h"
#include "pod/netns.h"
#include "pod/pidns.h"

/* A pinned namespace's file, or "node" (the host's). */
static json_t *ns_entry(const char *ns_dir, const char *kind, bool host)
{
    if (host)
        return json_string("node");
    SL_AUTOFREE char *path = sl_pod_ns_path(ns_dir, kind);
    return path ? json_string(path) : json_null();
}

static json_t *namespaces(const sl_pod *p)
{
    sl_pod_ns_modes m;
    sl_ns_pod_modes_load(p->rec, &m);
    const char *dir = sl_rec_str(p->rec, "ns_dir");
    json_t *pid;
    if (m.pid == RUNTIME__V1__NAMESPACE_MODE__POD) {
        SL_AUTOFREE char *file = sl_pod_pidns_file(dir);
        pid = file ? json_string(file) : json_null();
    } else {
        pid = json_string(m.pid == RUNTIME__V1__NAMESPACE_MODE__NODE ? "node" : "container");
    }
    return json_pack("{s:o, s:o, s:o, s:o, s:o}", "network", ns_entry(dir, "net", m.host_network),
                     "uts", ns_entry(dir, "uts", m.host_network), "ipc",
                     ns_entry(dir, "ipc", m.host_ipc), "pid", pid, "user",
                     ns_entry(dir, "user", !m.userns.on));
}

static json_t *monitor(const sl_rt *rt, const sl_pod *p)
{
    SL_AUTOFREE char *run = sl_rt_pod_run_dir(rt, p->id);
    SL_AUTOFREE char *sock = run ? sl_path_join(run, SL_MON_SOCK_NAME) : NULL;
    SL_AUTOFREE char *pods = sl_path_join(rt->cfg->state_dir, "pods");
    SL_AUTOFREE char *dir = pods ? sl_path_join(pods, p->id) : NULL;
    SL_AUTOFREE char *log = dir ? sl_path_join(dir, SL_MON_LOG_NAME) : NULL;
    return json_pack("{s:I, s:b, s:s?, s:s?, s:s}", "pid",
                     (json_int_t)sl_rec_int(p->rec, "mon_pid"), "connected",
                     p->mon && sl_monc_alive(p->mon), "socket", sock, "log", log, "cgroup",
                     rt->cfg->monitor_cgroup);
}

/* The CNI result as recorded (a JSON text), or null for none. */
static json_t *cni_result(const sl_pod *p)
{
    const char *text = sl_rec_str(p->rec, "cni_result");
    json_t *j = *text ? json_loads(text, 0, NULL) : NULL;
    return j ? j : json_null();
}

char *sl_cri_pod_info(const sl_rt *rt, const sl_pod *p)
{
    SL_AUTOFREE char *run = sl_rt_pod_run_dir(rt, p->id);
    SL_AUTOFREE char *runc_root = run ? sl_path_join(run, "runc") : NULL;
    const char *handler = sl_rec_str(p->rec, "runtime_handler");
    json_t *info = json_pack("{s:I, s:o, s:{s:s, s:s, s:s?}, s:o, s:s, s:o, s:o}", "pid",
                             (json_int_t)sl_rec_int(p->rec, "mon_pid"), "monitor", monitor(rt, p),
                             "runtime", "handler", *handler ? handler : "runc", "path",
                             rt->cfg->runtime_path, "root", runc_root, "namespaces", namespaces(p),
                             "cgroupParent", sl_rec_str(p->rec, "cgroup_parent"), "cniResult",
                             cni_result(p), "config", sl_pb_json(&p->config->base));
    char *text = info ? json_dumps(info, JSON_COMPACT) : NULL;
    json_decref(info);
    return text;
}
