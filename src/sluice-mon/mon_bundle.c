/* Reading a bundle's config.json for what the monitor must know about a
 * container: whether it has a pid namespace of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mon.h"

static int pidns_of(const json_t *cfg, mon_pidns_kind *kind, char **path, sl_error *e)
{
    json_t *ns = json_object_get(json_object_get(cfg, "linux"), "namespaces");
    size_t i;
    json_t *it;
    *kind = MON_PIDNS_HOST; /* no pid entry: the host's */
    json_array_foreach(ns, i, it)
    {
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *p = json_string_value(json_object_get(it, "path"));
        if (!type || strcmp(type, "pid"))
            continue;
        if (!p || !*p) {
            *kind = MON_PIDNS_OWN;
            return 0;
        }
        *kind = MON_PIDNS_JOIN;
        if (!(*path = strdup(p)))
            return sl_error_set(e, ENOMEM, "bundle");
        return 0;
    }
    return 0;
}

json_t *mon_bundle_config(const char *bundle, sl_error *e)
{
    SL_AUTOFREE char *file = sl_path_join(bundle, "config.json");
    SL_AUTOFREE char *text = NULL;
    size_t len;
    if (!file)
        return sl_error_set(e, ENOMEM, "bundle"), NULL;
    if (sl_read_file(file, SL_MON_BUNDLE_CONFIG_MAX, &text, &len, e) < 0)
        return NULL;
    json_t *cfg = json_loadb(text, len, 0, NULL);
    if (!json_is_object(cfg)) {
        json_decref(cfg);
        return sl_error_set(e, EINVAL, "%s is not a JSON object", file), NULL;
    }
    return cfg;
}

int mon_bundle_pidns(const char *bundle, mon_pidns_kind *kind, char **path, sl_error *e)
{
    *path = NULL;
    json_t *cfg = mon_bundle_config(bundle, e);
    if (!cfg)
        return -1;
    int rc = pidns_of(cfg, kind, path, e);
    json_decref(cfg);
    return rc;
}
