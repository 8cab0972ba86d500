/* update: CRI UpdateContainerResources, as `crictl update`: the flags fill
 * LinuxContainerResources; what is not given is 0 (or ""), which runtimes
 * take as "leave as it is". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

static const char update_help[] =
    "Usage: sluicectl update [FLAGS] CONTAINER-ID...\n"
    "\n"
    "Updates the resources of containers (CRI UpdateContainerResources) and\n"
    "prints their IDs. Values not given are sent as 0 (\"\" for the cpusets),\n"
    "which the runtime leaves as they are.\n"
    "\n"
    "      --memory BYTES        memory limit (-1: none)\n"
    "      --cpu-share N         CPU shares (relative weight)\n"
    "      --cpu-quota USEC      CFS quota per period (-1: none)\n"
    "      --cpu-period USEC     CFS period\n"
    "      --cpuset-cpus LIST    CPUs to use, e.g. 0-2,4\n"
    "      --cpuset-mems LIST    memory nodes to use\n"
    "  -h, --help                this help\n"
    "(crictl's --cpu-count and --cpu-maximum are for Windows containers and refused.)\n";

enum { U_MEM = 256, U_SHARES, U_QUOTA, U_PERIOD, U_CPUS, U_MEMS, U_COUNT, U_MAX };

typedef struct update_opts {
    ctl *c;
    Runtime__V1__LinuxContainerResources res;
} update_opts;

static int update_opt(void *arg, int id, const char *val)
{
    update_opts *o = arg;
    Runtime__V1__LinuxContainerResources *r = &o->res;
    switch (id) {
    case U_MEM:
        return ctl_parse_int(o->c, "--memory", val, &r->memory_limit_in_bytes);
    case U_SHARES:
        return ctl_parse_int(o->c, "--cpu-share", val, &r->cpu_shares);
    case U_QUOTA:
        return ctl_parse_int(o->c, "--cpu-quota", val, &r->cpu_quota);
    case U_PERIOD:
        return ctl_parse_int(o->c, "--cpu-period", val, &r->cpu_period);
    case U_CPUS:
        r->cpuset_cpus = (char *)val;
        return 0;
    case U_MEMS:
        r->cpuset_mems = (char *)val;
        return 0;
    default:
        return ctl_usage(o->c, "--cpu-count and --cpu-maximum are for Windows containers, "
                               "which sluicectl does not update");
    }
}

static int update_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    update_opts *o = arg;
    Runtime__V1__UpdateContainerResourcesRequest req =
        RUNTIME__V1__UPDATE_CONTAINER_RESOURCES_REQUEST__INIT;
    req.container_id = (char *)id;
    req.linux = &o->res;
    void *r = ctl_rt_call_slow(c, "UpdateContainerResources", &req.base,
                               &runtime__v1__update_container_resources_response__descriptor, e);
    if (!r)
        return -1;
    ctl_free_msg(r);
    puts(id);
    return 0;
}

int cmd_update(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"memory", required_argument, NULL, U_MEM},
                                       {"cpu-share", required_argument, NULL, U_SHARES},
                                       {"cpu-quota", required_argument, NULL, U_QUOTA},
                                       {"cpu-period", required_argument, NULL, U_PERIOD},
                                       {"cpuset-cpus", required_argument, NULL, U_CPUS},
                                       {"cpuset-mems", required_argument, NULL, U_MEMS},
                                       {"cpu-count", required_argument, NULL, U_COUNT},
                                       {"cpu-maximum", required_argument, NULL, U_MAX},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    update_opts o = {.c = c, .res = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT};
    int first, rc;
    if (ctl_parse(c, argc, argv, "", lo, update_help, update_opt, &o, &first, &rc))
        return rc;
    return cu_each_arg(c, argc, argv, first,
                       "needs at least one CONTAINER-ID (see sluicectl update --help)", CU_CTR,
                       update_one, &o);
}
