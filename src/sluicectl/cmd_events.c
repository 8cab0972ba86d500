/* events: CRI GetContainerEvents, as `crictl events`: every container
 * event the runtime streams, printed as it comes, until the runtime ends
 * the stream or sluicectl is interrupted (exit 0). */
#include <stdio.h>

#include "cmd_util.h"

static const char events_help[] =
    "Usage: sluicectl events [-o json|yaml]\n"
    "\n"
    "Streams container events (CRI GetContainerEvents: created, started, stopped,\n"
    "deleted, with the pod's and the containers' status) until interrupted.\n"
    "Each event is printed as it arrives: an indented JSON object, or a YAML\n"
    "document starting with ---.\n"
    "\n"
    "  -o, --output FORMAT   json (default) or yaml\n"
    "  -h, --help            this help\n";

static int on_event(void *arg, const ProtobufCMessage *m)
{
    ctl_out out = *(const ctl_out *)arg;
    if (out == CTL_OUT_YAML)
        fputs("---\n", stdout);
    cu_print_msg(m, out);
    /* a reader that went away (SIGPIPE is ignored) ends the stream */
    return fflush(stdout) != 0 || ferror(stdout);
}

static bool stop(void *arg)
{
    (void)arg;
    return cu_interrupted();
}

int cmd_events(ctl *c, int argc, char **argv)
{
    sl_error e;
    ctl_out out = CTL_OUT_JSON;
    cu_out_arg oa = {c, &out, false};
    int rc;
    if (cu_parse_out_only(c, argc, argv, events_help, &oa,
                          "takes no arguments (see sluicectl events --help)", &rc))
        return rc;
    cu_catch_interrupts();
    Runtime__V1__GetEventsRequest req = RUNTIME__V1__GET_EVENTS_REQUEST__INIT;
    sl_cri_stream_cb cb = {on_event, stop, &out};
    return ctl_rt_stream(c, "GetContainerEvents", &req.base,
                         &runtime__v1__container_event_response__descriptor, &cb, &e) < 0
               ? ctl_fail(c, &e)
               : 0;
}
