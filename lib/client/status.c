/* client-go's error-stream decoders (tools/remotecommand errorstream.go
 * and v4.go), with the same messages where it has them. */
#include "client/status.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static void set_text(sl_status *st, const char *prefix, const char *s, size_t n)
{
    size_t p = strlen(prefix);
    size_t room = sizeof(st->message) - 1 - p;
    if (n > room)
        n = room;
    memcpy(st->message, prefix, p);
    for (size_t i = 0; i < n; i++) /* a server's text never brings control bytes along */
        st->message[p + i] = (s[i] >= ' ' || s[i] == '\t') && s[i] != 0x7f ? s[i] : '?';
    st->message[p + n] = '\0';
}

static void failure(sl_status *st, const char *prefix, const char *s)
{
    st->exited = 0;
    st->exit_code = -1;
    set_text(st, prefix, s, strlen(s));
}

/* "2" -> 2; like strconv.ParseUint(s, 10, 8). */
static int parse_u8(const char *s, int *out)
{
    int v = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
        if (v > 255)
            return -1;
    }
    *out = v;
    return 0;
}

static void exit_code_of(json_t *j, const char *msg, sl_status *st)
{
    json_t *details = json_object_get(j, "details");
    if (!json_is_object(details)) {
        failure(st, "error stream protocol error: ", "details must be set");
        return;
    }
    json_t *causes = json_object_get(details, "causes"), *c;
    size_t i;
    json_array_foreach(causes, i, c)
    {
        if (!json_is_string(json_object_get(c, "reason")) ||
            strcmp(json_string_value(json_object_get(c, "reason")), "ExitCode") != 0)
            continue;
        const char *num = json_string_value(json_object_get(c, "message"));
        int code;
        if (parse_u8(num, &code) < 0) {
            failure(st, "error stream protocol error: invalid exit code value ", num ? num : "");
            return;
        }
        st->exited = 1;
        st->exit_code = code;
        set_text(st, "", msg, strlen(msg));
        return;
    }
    failure(st, "error stream protocol error: ", "no ExitCode cause given");
}

static void decode_v4(const uint8_t *data, size_t len, sl_status *st)
{
    json_error_t e;
    json_t *j = json_loadb((const char *)data, len, 0, &e);
    if (!json_is_object(j)) {
        failure(st, "error stream protocol error: ", j ? "not a Status object" : e.text);
        json_decref(j);
        return;
    }
    const char *status = json_string_value(json_object_get(j, "status"));
    const char *reason = json_string_value(json_object_get(j, "reason"));
    const char *msg = json_string_value(json_object_get(j, "message"));
    if (!msg)
        msg = "";
    if (status && strcmp(status, "Success") == 0) {
        st->exited = 1;
        st->exit_code = 0;
    } else if (status && strcmp(status, "Failure") == 0 && reason &&
               strcmp(reason, "NonZeroExitCode") == 0) {
        exit_code_of(j, msg, st);
    } else {
        failure(st, "", msg[0] ? msg : "unknown error (Status without a message)");
    }
    json_decref(j);
}

void sl_status_decode(int version, const uint8_t *data, size_t len, sl_status *st)
{
    memset(st, 0, sizeof(*st));
    if (len == 0) { /* client-go: nothing on the error stream is success */
        st->exited = 1;
        return;
    }
    if (version >= 4) {
        decode_v4(data, len, st);
        return;
    }
    st->exited = 0;
    st->exit_code = -1;
    set_text(st, "", (const char *)data, len);
}

size_t sl_resize_format(char buf[SL_RESIZE_MSG_MAX], uint16_t width, uint16_t height)
{
    int n = snprintf(buf, SL_RESIZE_MSG_MAX, "{\"Width\":%u,\"Height\":%u}\n", width, height);
    return n > 0 ? (size_t)n : 0;
}
