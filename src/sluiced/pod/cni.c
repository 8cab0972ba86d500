#include "pod/cni.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* The lexically first *.conflist / *.conf / *.json file, as libcni picks. */
static char *first_conf(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256)
        if (has_suffix(de->d_name, ".conflist") || has_suffix(de->d_name, ".conf") ||
            has_suffix(de->d_name, ".json"))
            names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof(char *), name_cmp);
    char *path = n && names[0] ? sl_path_join(dir, names[0]) : NULL;
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    return path;
}

/* Loads the list; a single .conf becomes a list of one plugin. The file's
 * path goes to *path_out when given. */
static json_t *load_list_at(const char *conf_dir, char **path_out, sl_error *e)
{
    SL_AUTOFREE char *path = first_conf(conf_dir);
    if (path_out)
        *path_out = path ? strdup(path) : NULL;
    if (!path) {
        sl_error_set(e, 0, "no network configuration in %s", conf_dir);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) {
        sl_error_set(e, 0, "%s: %s (line %d)", path, je.text, je.line);
        return NULL;
    }
    if (json_is_array(json_object_get(j, "plugins")))
        return j;
    json_t *list = json_pack("{s:O?, s:O?, s:[O]}", "cniVersion", json_object_get(j, "cniVersion"),
                             "name", json_object_get(j, "name"), "plugins", j);
    json_decref(j);
    if (!list)
        sl_error_set(e, 0, "%s: not a CNI network configuration", path);
    return list;
}

static json_t *load_list(const char *conf_dir, sl_error *e)
{
    return load_list_at(conf_dir, NULL, e);
}

int sl_cni_has_capability(const char *conf_dir, const char *cap, char **path, sl_error *e)
{
    json_t *list = load_list_at(conf_dir, path, e);
    if (!list)
        return -1;
    size_t i;
    json_t *plugin;
    int found = 0;
    json_array_foreach(json_object_get(list, "plugins"), i, plugin)
    {
        if (json_is_true(json_object_get(json_object_get(plugin, "capabilities"), cap)))
            found = 1;
    }
    json_decref(list);
    return found;
}

json_t *sl_cni_capability_args(const sl_cni_opts *o)
{
    json_t *caps = json_object();
    json_t *maps = json_array();
    for (size_t i = 0; caps && maps && i < o->n_portmaps; i++) {
        const sl_cni_portmap *m = &o->portmaps[i];
        json_t *one = json_pack("{s:i, s:i, s:s}", "hostPort", m->host_port, "containerPort",
                                m->container_port, "protocol", m->protocol);
        if (one && m->host_ip && *m->host_ip)
            json_object_set_new(one, "hostIP", json_string(m->host_ip));
        if (!one || json_array_append_new(maps, one) < 0) {
            json_decref(maps);
            maps = NULL;
        }
    }
    if (!caps || !maps) {
        json_decref(caps);
        json_decref(maps);
        return NULL;
    }
    if (json_array_size(maps))
        json_object_set_new(caps, SL_CNI_CAP_PORTMAP, maps);
    else
        json_decref(maps);
    return caps;
}

/* runtimeConfig: the capability args the plugin declares, and only those
 * (CNI CONVENTIONS.md); a plugin that declares none gets none. */
static void add_runtime_config(json_t *plugin, const json_t *caps)
{
    json_t *declared = json_object_get(plugin, "capabilities");
    json_t *rc = json_object();
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)caps, key, val)
    {
        if (json_is_true(json_object_get(declared, key)))
            json_object_set(rc, key, val);
    }
    if (json_object_size(rc))
        json_object_set_new(plugin, "runtimeConfig", rc);
    else
        json_decref(rc);
}

json_t *sl_cni_plugin_conf(const json_t *list, size_t i, const json_t *caps, json_t *prev,
                           sl_error *e)
{
    json_t *plugin = json_deep_copy(json_array_get(json_object_get(list, "plugins"), i));
    if (!plugin || !json_string_value(json_object_get(plugin, "type"))) {
        json_decref(plugin);
        sl_error_set(e, 0, "CNI plugin %zu has no type", i);
        return NULL;
    }
    json_object_set(plugin, "name", json_object_get(list, "name"));
    json_object_set(plugin, "cniVersion", json_object_get(list, "cniVersion"));
    if (prev)
        json_object_set(plugin, "prevResult", prev);
    if (caps)
        add_runtime_config(plugin, caps);
    return plugin;
}

json_t *sl_cni_config(const char *conf_dir, char **path, sl_error *e)
{
    json_t *list = load_list(conf_dir, e);
    *path = list ? first_conf(conf_dir) : NULL;
    return list;
}

bool sl_cni_ready(const char *conf_dir)
{
    sl_error e;
    json_t *j = load_list(conf_dir, &e);
    bool ok = j && json_array_size(json_object_get(j, "plugins")) > 0;
    json_decref(j);
    return ok;
}

/* The addresses of the pod's interface in a result object. */
size_t sl_cni_result_obj_ips(json_t *res, char **ips, size_t max)
{
    json_t *ifs = json_object_get(res, "interfaces");
    size_t n = 0, i;
    json_t *ip;
    json_array_foreach(json_object_get(res, "ips"), i, ip)
    {
        const char *addr = json_string_value(json_object_get(ip, "address"));
        json_t *idx = json_object_get(ip, "interface");
        const char *ifname =
            json_is_integer(idx)
                ? json_string_value(
                      json_object_get(json_array_get(ifs, (size_t)json_integer_value(idx)), "name"))
                : NULL;
        if (!addr || n == max || (ifname && strcmp(ifname, SL_CNI_IFNAME)))
            continue;
        const char *slash = strchr(addr, '/');
        ips[n] = strndup(addr, slash ? (size_t)(slash - addr) : strlen(addr));
        if (ips[n])
            n++;
    }
    return n;
}

size_t sl_cni_result_ips(const char *result, char **ips, size_t max)
{
    json_t *res = result ? json_loads(result, 0, NULL) : NULL;
    size_t n = res ? sl_cni_result_obj_ips(res, ips, max) : 0;
    json_decref(res);
    return n;
}
