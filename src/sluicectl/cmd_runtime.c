/* Runtime-wide commands: version, info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

static const char version_help[] =
    "Usage: sluicectl version [-o json|yaml]\n"
    "\n"
    "Shows the runtime's name and version (CRI Version) and sluicectl's.\n"
    "\n"
    "  -o, --output FORMAT   json or yaml instead of text\n"
    "  -h, --help            this help\n";

int cmd_version(ctl *c, int argc, char **argv)
{
    sl_error e;
    ctl_out out = CTL_OUT_TABLE;
    cu_out_arg oa = {c, &out, true};
    int rc;
    if (cu_parse_out_only(c, argc, argv, version_help, &oa, "takes no arguments", &rc))
        return rc;
    Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
    req.version = (char *)"v1";
    Runtime__V1__VersionResponse *r = (void *)ctl_rt_call(
        c, "Version", &req.base, &runtime__v1__version_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    if (out == CTL_OUT_TABLE)
        printf("Version:  %s\nRuntimeName:  %s\nRuntimeVersion:  %s\nRuntimeApiVersion:  %s\n",
               r->version, r->runtime_name, r->runtime_version, r->runtime_api_version);
    else
        cu_print_msg(&r->base, out);
    ctl_free_msg(r);
    return 0;
}

static const char info_help[] =
    "Usage: sluicectl info [-o json|yaml] [-q]\n"
    "\n"
    "Shows the runtime's status (CRI Status, verbose): conditions, handlers,\n"
    "features, and the runtime's own information documents.\n"
    "\n"
    "  -o, --output FORMAT   json (default) or yaml\n"
    "  -q, --quiet           the status only, not the runtime's verbose info\n"
    "  -h, --help            this help\n";

int cmd_info(ctl *c, int argc, char **argv)
{
    sl_error e;
    cu_inspect o = {c, CTL_OUT_JSON, false};
    int first, rc;
    if (cu_parse_inspect(c, argc, argv, info_help, &o, &first, &rc))
        return rc;
    if (first < argc)
        return ctl_usage(c, "takes no arguments");
    if (o.out == CTL_OUT_TABLE)
        return ctl_usage(c, "unknown output format \"table\": use json or yaml");
    ctl_out out = o.out;
    Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
    req.verbose = !o.quiet;
    Runtime__V1__StatusResponse *r =
        (void *)ctl_rt_call(c, "Status", &req.base, &runtime__v1__status_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    /* As crictl: {"status": ..., <info keys>...}. */
    json_t *j = ctl_msg_to_json(&r->base);
    json_t *doc = json_object();
    json_object_set(doc, "status", json_object_get(j, "status"));
    json_t *info = json_object_get(j, "info");
    if (info)
        json_object_update(doc, info);
    static const char *const extra[] = {"runtimeHandlers", "features"};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (json_object_get(j, extra[i]))
            json_object_set(doc, extra[i], json_object_get(j, extra[i]));
    ctl_print_doc(doc, out);
    json_decref(doc);
    json_decref(j);
    ctl_free_msg(r);
    return 0;
}
