#include "remotecommand/rc_resize.h"

#include <jansson.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "sluice/error.h"

void sl_rc_resize_init(sl_rc_resize *r)
{
    r->len = 0;
    r->failed = 0;
}

/* Go's encoding/json matches field names case-insensitively, preferring
 * an exact match; clients rely on it ({"width":..} works with the kubelet). */
static json_t *field(json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    const char *key;
    json_t *val;
    if (v)
        return v;
    json_object_foreach(obj, key, val)
    {
        if (!strcasecmp(key, name))
            return val;
    }
    return NULL;
}

static int size_field(json_t *obj, const char *name, uint16_t *out)
{
    json_t *v = field(obj, name);
    if (!v) {
        *out = 0; /* Go leaves an absent field at zero */
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535)
        return -1;
    *out = (uint16_t)json_integer_value(v);
    return 0;
}

/* Length of the object at the start of buf when it is complete (its
 * closing brace seen outside strings), 0 when more input is needed, -1 when
 * it does not start with '{'. Deciding completeness here, not from the
 * parser's error, keeps the verdict independent of how the stream was cut
 * (jansson calls a string cut after a backslash an invalid escape). */
static long object_end(const char *buf, size_t len)
{
    if (len == 0 || buf[0] != '{')
        return len ? -1 : 0;
    int depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char ch = buf[i];
        if (esc)
            esc = false;
        else if (in_str && ch == '\\')
            esc = true;
        else if (ch == '"')
            in_str = !in_str;
        else if (!in_str && (ch == '{' || ch == '['))
            depth++;
        else if (!in_str && (ch == '}' || ch == ']') && --depth == 0)
            return (long)i + 1;
    }
    return 0;
}

/* Parses one object at the start of the buffer. Returns bytes used, 0 when
 * more input is needed, -1 when malformed. */
static long parse_one(sl_rc_resize *r, sl_term_size *size)
{
    long end = object_end(r->buf, r->len);
    if (end <= 0)
        return end;
    json_error_t err;
    json_t *obj = json_loadb(r->buf, (size_t)end, 0, &err);
    if (!obj)
        return -1;
    int bad = !json_is_object(obj) || size_field(obj, "Width", &size->width) ||
              size_field(obj, "Height", &size->height);
    json_decref(obj);
    return bad ? -1 : end;
}

int sl_rc_resize_feed(sl_rc_resize *r, const uint8_t *data, size_t len,
                      void (*fn)(void *arg, sl_term_size size), void *arg)
{
    while (!r->failed && len > 0) {
        size_t n = sizeof(r->buf) - r->len;
        if (n > len)
            n = len;
        memcpy(r->buf + r->len, data, n);
        r->len += n;
        data += n;
        len -= n;
        for (;;) {
            size_t ws = 0; /* objects are separated by newlines */
            while (ws < r->len && memchr(" \t\r\n", r->buf[ws], 4))
                ws++;
            memmove(r->buf, r->buf + ws, r->len - ws);
            r->len -= ws;
            if (r->len == 0)
                break;
            sl_term_size size = {0, 0};
            long used = parse_one(r, &size);
            if (used < 0) {
                r->failed = 1;
                break;
            }
            if (used == 0) {
                if (r->len == sizeof(r->buf))
                    r->failed = 1; /* an object longer than we allow */
                break;
            }
            memmove(r->buf, r->buf + used, r->len - (size_t)used);
            r->len -= (size_t)used;
            fn(arg, size);
        }
    }
    return r->failed ? SL_ERR_PROTO : SL_OK;
}
