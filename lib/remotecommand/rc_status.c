#include "remotecommand/rc_status.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

/* Text the kubelet library puts in front of a runtime's exit error. */
#define NONZERO_PREFIX "command terminated with non-zero exit code: "

static int dump(json_t *j, char **out, size_t *len)
{
    if (!j)
        return SL_ERR_NOMEM;
    /* Key order is part of the wire format (Go's encoding/json field order). */
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!s)
        return SL_ERR_NOMEM;
    *out = s;
    *len = strlen(s);
    return SL_OK;
}

static int text(const char *s, char **out, size_t *len)
{
    *out = strdup(s);
    if (!*out)
        return SL_ERR_NOMEM;
    *len = strlen(s);
    return SL_OK;
}

static int exit_status(int json, int code, const char *message, char **out, size_t *len)
{
    char msg[1024], num[16];
    snprintf(num, sizeof(num), "%d", code);
    if (message)
        snprintf(msg, sizeof(msg), NONZERO_PREFIX "%s", message);
    else
        snprintf(msg, sizeof(msg), NONZERO_PREFIX "exit status %d", code);
    if (!json)
        return text(msg, out, len);
    return dump(json_pack("{s:{}, s:s, s:s, s:s, s:{s:[{s:s, s:s}]}}", "metadata", "status",
                          "Failure", "message", msg, "reason", "NonZeroExitCode", "details",
                          "causes", "reason", "ExitCode", "message", num),
                out, len);
}

static int internal_status(int json, int attach, const char *message, char **out, size_t *len)
{
    char cause[1024], msg[1100];
    snprintf(cause, sizeof(cause), "%s%s",
             attach ? "error attaching to container: " : "error executing command in container: ",
             message ? message : "unknown error");
    snprintf(msg, sizeof(msg), "Internal error occurred: %s", cause);
    if (!json)
        return text(msg, out, len);
    return dump(json_pack("{s:{}, s:s, s:s, s:s, s:{s:[{s:s}]}, s:i}", "metadata", "status",
                          "Failure", "message", msg, "reason", "InternalError", "details", "causes",
                          "message", cause, "code", 500),
                out, len);
}

int sl_rc_status_format(int json, int attach, sl_rc_outcome outcome, int exit_code,
                        const char *message, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (outcome == SL_RC_INTERNAL)
        return internal_status(json, attach, message, out, len);
    if (exit_code != 0)
        return exit_status(json, exit_code, message, out, len);
    if (!json)
        return SL_OK;
    return dump(json_pack("{s:{}, s:s}", "metadata", "status", "Success"), out, len);
}
