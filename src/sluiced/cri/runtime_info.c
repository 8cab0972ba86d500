/* RuntimeService Version and Status. */
#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/ctr_mounts.h"
#include "cri/service.h"
#include "cri/sluice_version.h"
#include "cri/stats.h"
#include "fsutil.h"
#include "pod/cni.h"

/* Status verbose: the keys of the info map (containerd's where it has one;
 * not "runtimeHandlers", which crictl info uses for the response field). */
enum { INFO_CONFIG, INFO_CNI, INFO_CNI_STATUS, INFO_POD_CIDR, INFO_N };
static const char *const info_keys[INFO_N] = {"config", "cniconfig", "lastCNILoadStatus",
                                              "podCIDR"};

void sl_cri_version(sl_grpc_call *call, void *arg)
{
    (void)arg;
    Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
    resp.version = SL_CRI_VERSION;
    resp.runtime_name = SL_CRI_RUNTIME_NAME;
    resp.runtime_version = SLUICE_VERSION;
    resp.runtime_api_version = SL_CRI_API_VERSION;
    sl_grpc_call_reply(call, &resp.base);
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* The file names libcni loads network configs from. */
bool sl_cri_cni_config_present(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (de->d_name[0] == '.' ||
            (de->d_type != DT_REG && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN))
            continue;
        found = has_suffix(de->d_name, ".conf") || has_suffix(de->d_name, ".conflist") ||
                has_suffix(de->d_name, ".json");
    }
    closedir(d);
    return found;
}

static const char *cgroup_version(const sl_cri *cri)
{
    sl_cg_mode m = cri->stats ? sl_stats_cgroup_mode(cri->stats) : SL_CG_NONE;
    return m == SL_CG_V2 ? "v2" : m == SL_CG_V1 ? "v1" : "none";
}

/* sluice has one runtime handler, the default (""): runc via the monitor. */
static json_t *info_handlers(const sl_config *c)
{
    return json_pack("[{s:s, s:b, s:s, s:s}]", "name", "", "default", 1, "runtimeType", "oci",
                     "runtimePath", c->runtime_path);
}

/* What sluiced runs with: directories, programs, runtime handlers, cgroups,
 * limits of the stats calls. */
static json_t *info_config(const sl_cri *cri)
{
    const sl_config *c = cri->cfg;
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "listen", c->listen, "stateDir",
                  c->state_dir, "runDir", c->run_dir, "imageDir", c->image_dir ? c->image_dir : "",
                  "importDir", c->import_dir ? c->import_dir : "", "cniConfDir", c->cni_conf_dir,
                  "cniBinDir", c->cni_bin_dir, "runtimePath", c->runtime_path);
    if (!j)
        return NULL;
    json_object_set_new(j, "runtimeHandlers", info_handlers(c));
    json_object_set_new(j, "cgroupDriver", json_string("cgroupfs"));
    json_object_set_new(j, "cgroupVersion", json_string(cgroup_version(cri)));
    if (cri->stream)
        json_object_set_new(j, "streamServer", json_string(sl_server_base_url(cri->stream)));
    json_object_set_new(j, "statsFsRefreshMs", json_integer(c->stats_fs_refresh_ms));
    json_object_set_new(j, "statsCpuWindowMs", json_integer(c->stats_cpu_window_ms));
    return j;
}

/* The bin dir list ("a:b") as an array. */
static json_t *plugin_dirs(const char *dirs)
{
    json_t *a = json_array();
    for (const char *p = dirs; a && p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n)
            json_array_append_new(a, json_stringn(p, n));
        p = colon ? colon + 1 : NULL;
    }
    return a;
}

/* One plugin of the list as containerd shows it: the config and its text. */
static json_t *plugin_info(json_t *plugin)
{
    SL_AUTOFREE char *src = json_dumps(plugin, JSON_COMPACT);
    return json_pack("{s:O, s:s}", "Network", plugin, "Source", src ? src : "");
}

/* The CNI network list in containerd's cniconfig shape; *status gets "OK"
 * or why there is none. */
static json_t *info_cni(const sl_config *c, char *status, size_t len)
{
    sl_error e;
    SL_AUTOFREE char *path = NULL;
    json_t *list = sl_cni_config(c->cni_conf_dir, &path, &e);
    json_t *nets = json_array();
    snprintf(status, len, "%s", list ? "OK" : e.msg);
    if (list && nets) {
        json_t *plugins = json_array();
        json_t *p;
        size_t i;
        json_array_foreach(json_object_get(list, "plugins"), i, p)
            json_array_append_new(plugins, plugin_info(p));
        SL_AUTOFREE char *src = json_dumps(list, JSON_COMPACT);
        json_array_append_new(nets, json_pack("{s:{s:O?, s:O?, s:o, s:s, s:s}, s:s}", "Config",
                                              "Name", json_object_get(list, "name"), "CNIVersion",
                                              json_object_get(list, "cniVersion"), "Plugins",
                                              plugins, "Source", src ? src : "", "File",
                                              path ? path : "", "IFName", SL_CNI_IFNAME));
    }
    json_decref(list);
    return json_pack("{s:o, s:s, s:i, s:o}", "PluginDirs", plugin_dirs(c->cni_bin_dir),
                     "PluginConfDir", c->cni_conf_dir, "PluginMaxConfNum", 1, "Networks", nets);
}

/* The verbose info map: each value a JSON text. Returns the count filled. */
static size_t status_info(const sl_cri *cri, char *values[INFO_N])
{
    char cni_status[SL_SYS_ERROR_MAX];
    json_t *j[INFO_N];
    j[INFO_CONFIG] = info_config(cri);
    j[INFO_CNI] = info_cni(cri->cfg, cni_status, sizeof(cni_status));
    j[INFO_CNI_STATUS] = json_string(cni_status);
    j[INFO_POD_CIDR] = json_string(cri->pod_cidr);
    size_t n = 0;
    for (size_t i = 0; i < INFO_N; i++) {
        values[i] = j[i] ? json_dumps(j[i], JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        n += values[i] != NULL;
        json_decref(j[i]);
    }
    return n;
}

void sl_cri_status(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    if (!cri->rt.mount_probe.done) { /* sluiced just started: the handler features come first */
        sl_waitq_retry(&cri->rt.mount_probe.waiters, sl_cri_status, call, arg);
        return;
    }
    char msg[512];
    Runtime__V1__RuntimeCondition runtime = RUNTIME__V1__RUNTIME_CONDITION__INIT;
    Runtime__V1__RuntimeCondition network = RUNTIME__V1__RUNTIME_CONDITION__INIT;
    runtime.type = "RuntimeReady";
    runtime.status = true;
    network.type = "NetworkReady";
    network.status = sl_cri_cni_config_present(cri->cfg->cni_conf_dir);
    if (!network.status) {
        snprintf(msg, sizeof(msg), "no CNI network config (*.conf, *.conflist, *.json) in %s",
                 cri->cfg->cni_conf_dir);
        network.reason = SL_CRI_NETWORK_NOT_READY_REASON;
        network.message = msg;
    }
    Runtime__V1__RuntimeCondition *conds[] = {&runtime, &network};
    Runtime__V1__RuntimeStatus status = RUNTIME__V1__RUNTIME_STATUS__INIT;
    status.n_conditions = 2;
    status.conditions = conds;
    Runtime__V1__StatusResponse resp = RUNTIME__V1__STATUS_RESPONSE__INIT;
    resp.status = &status;
    const Runtime__V1__StatusRequest *req = (const void *)sl_grpc_call_request(call);
    char *values[INFO_N] = {0};
    Runtime__V1__StatusResponse__InfoEntry entries[INFO_N];
    Runtime__V1__StatusResponse__InfoEntry *ptrs[INFO_N];
    if (req->verbose && status_info(cri, values) > 0) {
        for (size_t i = 0; i < INFO_N; i++) {
            if (!values[i])
                continue;
            runtime__v1__status_response__info_entry__init(&entries[resp.n_info]);
            entries[resp.n_info].key = (char *)info_keys[i];
            entries[resp.n_info].value = values[i];
            ptrs[resp.n_info] = &entries[resp.n_info];
            resp.n_info++;
        }
        resp.info = ptrs;
    }
    /* The default handler and its name, "runc": what their mounts can do
     * (the kubelet and critest ask before sending recursive_read_only). */
    Runtime__V1__RuntimeHandlerFeatures feat = RUNTIME__V1__RUNTIME_HANDLER_FEATURES__INIT;
    feat.recursive_read_only_mounts = cri->rt.mount_probe.env.rro;
    /* pods with userns_options POD: a user namespace of their own */
    feat.user_namespaces = cri->rt.mount_probe.env.idmap;
    Runtime__V1__RuntimeHandler dflt = RUNTIME__V1__RUNTIME_HANDLER__INIT;
    Runtime__V1__RuntimeHandler runc = RUNTIME__V1__RUNTIME_HANDLER__INIT;
    dflt.features = runc.features = &feat;
    runc.name = "runc";
    Runtime__V1__RuntimeHandler *handlers[] = {&dflt, &runc};
    resp.n_runtime_handlers = 2;
    resp.runtime_handlers = handlers;
    /* Strict is applied (ctr_user.c), so the kubelet may send it: it
     * refuses Strict pods on a runtime that does not say so. */
    Runtime__V1__RuntimeFeatures features = RUNTIME__V1__RUNTIME_FEATURES__INIT;
    features.supplemental_groups_policy = true;
    resp.features = &features;
    sl_grpc_call_reply(call, &resp.base);
    for (size_t i = 0; i < INFO_N; i++)
        free(values[i]);
}
