#include "container/oci_mounts.h"

#include <stdbool.h>
#include <string.h>

#define DEST_MAX 4096

void sl_oci_path_clean(const char *p, char *out, size_t cap)
{
    size_t o = 0;
    while (*p && o + 1 < cap) {
        while (*p == '/')
            p++;
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && !(n == 1 && *p == '.') && o + 1 + n < cap) {
            out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
    }
    if (o == 0 && cap > 1)
        out[o++] = '/';
    out[o] = '\0';
}

static const char *propagation(int p)
{
    return p == 2 ? "rshared" : p == 1 ? "rslave" : "rprivate";
}

/* Does a container mount take the standard mount's place? */
static bool replaced(const char *std_dest, const sl_oci_mount *binds, size_t n)
{
    char a[DEST_MAX], b[DEST_MAX];
    sl_oci_path_clean(std_dest, a, sizeof(a));
    for (size_t i = 0; i < n; i++) {
        sl_oci_path_clean(binds[i].container_path, b, sizeof(b));
        if (!strcmp(a, b) || (!strcmp(b, "/dev") && !strncmp(a, "/dev/", 5)))
            return true;
    }
    return false;
}

static json_t *bind_json(const sl_oci_mount *u)
{
    json_t *opts =
        json_pack("[s, s, s]", "rbind", propagation(u->propagation), u->readonly ? "ro" : "rw");
    if (opts && u->rro)
        json_array_append_new(opts, json_string("rro"));
    return json_pack("{s:s, s:s, s:s, s:o}", "destination", u->container_path, "type", "bind",
                     "source", u->host_path, "options", opts);
}

json_t *sl_oci_mounts_json(json_t *std, const sl_oci_mount *binds, size_t n)
{
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(std, i, m)
    {
        const char *dest = json_string_value(json_object_get(m, "destination"));
        if (dest && !replaced(dest, binds, n))
            json_array_append(out, m);
    }
    json_decref(std);
    for (i = 0; out && i < n; i++)
        if (json_array_append_new(out, bind_json(&binds[i])) < 0) {
            json_decref(out);
            return NULL;
        }
    return out;
}
