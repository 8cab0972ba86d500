/* RuntimeConfig, UpdateRuntimeConfig, CheckpointContainer and the CRI
 * metrics calls (ListMetricDescriptors, ListPodSandboxMetrics). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "fsutil.h"

/* The kubelet's pod CIDR, kept under the state dir so a restarted sluiced
 * still reports it (the kubelet sends it only when it changes). */
#define POD_CIDR_FILE "runtime-config.json"

/* sluice drives cgroups through cgroupfs paths only (OCI cgroupsPath
 * "/a/b"), never through systemd units. */
void sl_cri_runtime_config(sl_grpc_call *call, void *arg)
{
    (void)arg;
    Runtime__V1__LinuxRuntimeConfiguration linux = RUNTIME__V1__LINUX_RUNTIME_CONFIGURATION__INIT;
    linux.cgroup_driver = RUNTIME__V1__CGROUP_DRIVER__CGROUPFS;
    Runtime__V1__RuntimeConfigResponse resp = RUNTIME__V1__RUNTIME_CONFIG_RESPONSE__INIT;
    resp.linux = &linux;
    sl_grpc_call_reply(call, &resp.base);
}

/* One "address/prefix" of either family. */
static bool valid_cidr(const char *s, size_t len)
{
    char buf[64];
    const char *slash = memchr(s, '/', len);
    if (!slash || len >= sizeof(buf) || slash == s || (size_t)(slash - s) + 1 >= len)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    buf[slash - s] = '\0';
    unsigned char addr[16];
    int family = strchr(buf, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(family, buf, addr) != 1)
        return false;
    char *end;
    errno = 0;
    long bits = strtol(buf + (slash - s) + 1, &end, 10);
    return !errno && *end == '\0' && end != buf + (slash - s) + 1 && bits >= 0 &&
           bits <= (family == AF_INET ? 32 : 128);
}

/* "" or one or two CIDRs, comma-separated, as the kubelet joins them. */
bool sl_cri_valid_pod_cidr(const char *s)
{
    size_t n = strlen(s), parts = 0;
    if (n == 0)
        return true;
    if (n > SL_CRI_POD_CIDR_MAX)
        return false;
    for (const char *p = s;; parts++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (!valid_cidr(p, len) || parts >= 2)
            return false;
        if (!comma)
            return true;
        p = comma + 1;
    }
}

static char *cidr_path(const sl_cri *cri)
{
    return sl_path_join(cri->cfg->state_dir, POD_CIDR_FILE);
}

int sl_cri_load_runtime_config(sl_cri *cri)
{
    SL_AUTOFREE char *path = cidr_path(cri);
    SL_AUTOFREE char *text = NULL;
    sl_error e;
    if (!path || sl_read_file(path, 4096, &text, NULL, &e) < 0)
        return e.errnum == ENOENT ? 0 : -1;
    json_t *j = json_loads(text, 0, NULL);
    const char *cidr = json_string_value(json_object_get(j, "podCIDR"));
    if (cidr && sl_cri_valid_pod_cidr(cidr))
        snprintf(cri->pod_cidr, sizeof(cri->pod_cidr), "%s", cidr);
    json_decref(j);
    return 0;
}

static int save_cidr(const sl_cri *cri, const char *cidr, sl_error *e)
{
    SL_AUTOFREE char *path = cidr_path(cri);
    json_t *j = json_pack("{s:s}", "podCIDR", cidr);
    SL_AUTOFREE char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!path || !text)
        return sl_error_set(e, ENOMEM, "runtime config");
    return sl_write_file_atomic(path, text, strlen(text), 0644, e);
}

/* The kubelet sends the node's pod CIDR. sluice's pod network comes from
 * the CNI config (whose IPAM names its own ranges), so the CIDR is kept and
 * reported (Status verbose "podCIDR") but configures nothing; containerd
 * does the same unless a CNI config template is set. */
void sl_cri_update_runtime_config(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    const Runtime__V1__UpdateRuntimeConfigRequest *req = (const void *)sl_grpc_call_request(call);
    const Runtime__V1__NetworkConfig *net =
        req->runtime_config ? req->runtime_config->network_config : NULL;
    const char *cidr = net ? net->pod_cidr : NULL;
    sl_error e;
    if (cidr && !sl_cri_valid_pod_cidr(cidr)) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT,
                          "runtime_config.network_config.pod_cidr: \"%.*s\" is not one or two "
                          "comma-separated CIDRs",
                          SL_CRI_POD_CIDR_MAX, cidr);
        return;
    }
    if (cidr && strcmp(cidr, cri->pod_cidr)) {
        if (save_cidr(cri, cidr, &e) < 0) {
            sl_grpc_call_fail(call, SL_GRPC_INTERNAL, "runtime_config.network_config.pod_cidr: %s",
                              e.msg);
            return;
        }
        snprintf(cri->pod_cidr, sizeof(cri->pod_cidr), "%s", cidr);
    }
    Runtime__V1__UpdateRuntimeConfigResponse resp =
        RUNTIME__V1__UPDATE_RUNTIME_CONFIG_RESPONSE__INIT;
    sl_grpc_call_reply(call, &resp.base);
}

void sl_cri_checkpoint_container(sl_grpc_call *call, void *arg)
{
    (void)arg;
    const Runtime__V1__CheckpointContainerRequest *req = (const void *)sl_grpc_call_request(call);
    sl_grpc_call_fail(call, SL_GRPC_UNIMPLEMENTED,
                      "CheckpointContainer is not implemented: sluice has no checkpoint/restore "
                      "(CRIU); container \"%.80s\" was not checkpointed",
                      req->container_id);
}
