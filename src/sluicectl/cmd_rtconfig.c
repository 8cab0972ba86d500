/* runtime-config and update-runtime-config: CRI RuntimeConfig and
 * UpdateRuntimeConfig, as crictl has them. */
#include <stdio.h>

#include "cmd_util.h"

static const char runtime_config_help[] =
    "Usage: sluicectl runtime-config [-o table|json|yaml]\n"
    "\n"
    "Shows the runtime's configuration the kubelet reads (CRI RuntimeConfig):\n"
    "the cgroup driver.\n"
    "\n"
    "  -o, --output FORMAT   table (default), json or yaml\n"
    "  -h, --help            this help\n";

/* crictl's column: a tabwriter cell of 10 or more bytes plus 3 of padding. */
#define RTCONFIG_KEY_WIDTH 17

static const char *cgroup_driver_name(int d)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&runtime__v1__cgroup_driver__descriptor, d);
    return v ? v->name : "UNKNOWN";
}

int cmd_runtime_config(ctl *c, int argc, char **argv)
{
    sl_error e;
    ctl_out out = CTL_OUT_TABLE;
    cu_out_arg oa = {c, &out, true};
    int rc;
    if (cu_parse_out_only(c, argc, argv, runtime_config_help, &oa,
                          "takes no arguments (see sluicectl runtime-config --help)", &rc))
        return rc;
    Runtime__V1__RuntimeConfigRequest req = RUNTIME__V1__RUNTIME_CONFIG_REQUEST__INIT;
    Runtime__V1__RuntimeConfigResponse *r = (void *)ctl_rt_call(
        c, "RuntimeConfig", &req.base, &runtime__v1__runtime_config_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    if (out != CTL_OUT_TABLE)
        cu_print_msg(&r->base, out);
    else if (r->linux)
        printf("%-*s%s\n", RTCONFIG_KEY_WIDTH,
               "cgroup driver:", cgroup_driver_name(r->linux->cgroup_driver));
    ctl_free_msg(r);
    return 0;
}

static const char update_runtime_config_help[] =
    "Usage: sluicectl update-runtime-config -p CIDR\n"
    "\n"
    "Sends the runtime the node's pod CIDR as the kubelet does (CRI\n"
    "UpdateRuntimeConfig). An empty CIDR tells the runtime to forget it.\n"
    "\n"
    "  -p, --pod-cidr CIDR   pod CIDR(s), comma-separated (one per family)\n"
    "  -h, --help            this help\n";

static int pod_cidr_opt(void *arg, int id, const char *val)
{
    (void)id;
    *(const char **)arg = val;
    return 0;
}

int cmd_update_runtime_config(ctl *c, int argc, char **argv)
{
    sl_error e;
    static const struct option lo[] = {
        {"pod-cidr", required_argument, NULL, 'p'}, CTL_OPT_HELP, CTL_OPT_END};
    const char *cidr = NULL;
    int first, rc;
    if (ctl_parse(c, argc, argv, "p:", lo, update_runtime_config_help, pod_cidr_opt, &cidr, &first,
                  &rc))
        return rc;
    if (first < argc || !cidr)
        return ctl_usage(c, "takes --pod-cidr and no arguments (see sluicectl "
                            "update-runtime-config --help)");
    Runtime__V1__NetworkConfig net = RUNTIME__V1__NETWORK_CONFIG__INIT;
    net.pod_cidr = (char *)cidr;
    Runtime__V1__RuntimeConfig cfg = RUNTIME__V1__RUNTIME_CONFIG__INIT;
    cfg.network_config = &net;
    Runtime__V1__UpdateRuntimeConfigRequest req = RUNTIME__V1__UPDATE_RUNTIME_CONFIG_REQUEST__INIT;
    req.runtime_config = &cfg;
    void *r = ctl_rt_call(c, "UpdateRuntimeConfig", &req.base,
                          &runtime__v1__update_runtime_config_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    ctl_free_msg(r);
    fputs("Runtime config successfully updated\n", stderr); /* crictl's log line */
    return 0;
}
