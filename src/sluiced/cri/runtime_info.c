/* RuntimeService Version and Status. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cri/ctr_mounts.h"
#include "cri/service.h"
#include "cri/sluice_version.h"

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

void sl_cri_status(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
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
    /* The default handler and its name, "runc": what their mounts can do
     * (the kubelet and critest ask before sending recursive_read_only). */
    sl_mount_env env;
    sl_mount_env_probe(cri->cfg->runtime_path, &env);
    Runtime__V1__RuntimeHandlerFeatures feat = RUNTIME__V1__RUNTIME_HANDLER_FEATURES__INIT;
    feat.recursive_read_only_mounts = env.rro;
    Runtime__V1__RuntimeHandler dflt = RUNTIME__V1__RUNTIME_HANDLER__INIT;
    Runtime__V1__RuntimeHandler runc = RUNTIME__V1__RUNTIME_HANDLER__INIT;
    dflt.features = runc.features = &feat;
    runc.name = "runc";
    Runtime__V1__RuntimeHandler *handlers[] = {&dflt, &runc};
    resp.n_runtime_handlers = 2;
    resp.runtime_handlers = handlers;
    sl_grpc_call_reply(call, &resp.base);
}
