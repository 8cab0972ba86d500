#include "pod/cni.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* Reads all of fd up to max bytes. */
static char *slurp(int fd, size_t max)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (cap >= max)
                break;
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (buf)
        buf[n] = '\0';
    return buf;
}

typedef struct exec_env {
    char cmd[32], id[300], netns[600], ifname[32], path[600], args[900];
} exec_env;

static void fill_env(exec_env *v, const sl_cni_opts *o, const char *command)
{
    snprintf(v->cmd, sizeof(v->cmd), "CNI_COMMAND=%s", command);
    snprintf(v->id, sizeof(v->id), "CNI_CONTAINERID=%s", o->container_id);
    snprintf(v->netns, sizeof(v->netns), "CNI_NETNS=%s", o->netns);
    snprintf(v->ifname, sizeof(v->ifname), "CNI_IFNAME=%s", SL_CNI_IFNAME);
    snprintf(v->path, sizeof(v->path), "CNI_PATH=%s", o->bin_dir);
    snprintf(v->args, sizeof(v->args),
             "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;"
             "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=%s",
             o->pod_namespace ? o->pod_namespace : "", o->pod_name ? o->pod_name : "",
             o->container_id, o->pod_uid ? o->pod_uid : "");
}

/* The plugin in the first directory of the ':'-separated list that has
 * it (CNI_PATH is such a list too). */
static char *find_plugin(const char *dirs, const char *type)
{
    if (strchr(type, '/'))
        return NULL;
    SL_AUTOFREE char *copy = strdup(dirs);
    char *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        char *exe = sl_path_join(d, type);
        if (exe && access(exe, X_OK) == 0)
            return exe;
        free(exe);
    }
    return NULL;
}

/* Runs one plugin with conf on stdin; returns its stdout (malloc'd) and
 * sets *status to its exit status. NULL when it could not run. */
static char *run_plugin(const sl_cni_opts *o, const char *command, const char *type,
                        const char *conf, int *status, sl_error *e)
{
    SL_AUTOFREE char *exe = find_plugin(o->bin_dir, type);
    if (!exe) {
        sl_error_set(e, ENOENT, "CNI plugin %s not found in %s", type, o->bin_dir);
        return NULL;
    }
    exec_env v;
    fill_env(&v, o, command);
    char *envp[] = {
        v.cmd, v.id, v.netns, v.ifname, v.path, v.args, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0) {
        sl_error_set(e, errno, "pipe");
        return NULL;
    }
    if (pipe2(out, O_CLOEXEC) < 0) {
        sl_error_set(e, errno, "pipe");
        close(in[0]);
        close(in[1]);
        return NULL;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        char *argv[] = {exe, NULL};
        execve(exe, argv, envp);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    /* Plugin configs are small: they fit the pipe, so writing first cannot
     * deadlock against the plugin's output. */
    size_t len = strlen(conf), off = 0;
    while (pid > 0 && off < len) {
        ssize_t w = write(in[1], conf + off, len - off);
        if (w <= 0 && errno != EINTR)
            break;
        if (w > 0)
            off += (size_t)w;
    }
    close(in[1]);
    char *res = pid > 0 ? slurp(out[0], SL_CNI_MAX_OUTPUT) : NULL;
    close(out[0]);
    if (pid < 0) {
        sl_error_set(e, errno, "fork");
        return NULL;
    }
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return res;
}

/* The text of a CNI error answer ({"code":N,"msg":"..","details":".."}). */
static void plugin_error(sl_error *e, const char *command, const char *type, const char *out)
{
    json_t *j = out ? json_loads(out, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(j, "msg"));
    const char *details = json_string_value(json_object_get(j, "details"));
    sl_error_set(e, 0, "CNI %s with plugin %s failed: %s%s%s", command, type,
                 msg ? msg : (out && *out ? out : "no answer"), details ? ": " : "",
                 details ? details : "");
    json_decref(j);
}

static int invoke(const sl_cni_opts *o, json_t *list, size_t i, const char *command,
                  const json_t *caps, json_t *prev, json_t **result, sl_error *e)
{
    json_t *plugin = sl_cni_plugin_conf(list, i, caps, prev, e);
    if (!plugin)
        return -1;
    const char *type = json_string_value(json_object_get(plugin, "type"));
    SL_AUTOFREE char *conf = json_dumps(plugin, JSON_COMPACT);
    int status = -1;
    SL_AUTOFREE char *out = conf ? run_plugin(o, command, type, conf, &status, e) : NULL;
    int rc = 0;
    if (!out)
        rc = -1;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = (plugin_error(e, command, type, out), -1);
    else if (result && *out)
        *result = json_loads(out, 0, NULL);
    json_decref(plugin);
    return rc;
}

/* The addresses of the pod's interface in a result object. */
static size_t result_ips(json_t *res, char **ips, size_t max)
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
    size_t n = res ? result_ips(res, ips, max) : 0;
    json_decref(res);
    return n;
}

int sl_cni_add(const sl_cni_opts *o, char **ip, char **result, sl_error *e)
{
    *ip = *result = NULL;
    json_t *list = load_list(o->conf_dir, e);
    if (!list)
        return -1;
    json_t *caps = sl_cni_capability_args(o);
    if (!caps) {
        json_decref(list);
        return sl_error_set(e, ENOMEM, "CNI capability args");
    }
    json_t *prev = NULL;
    size_t n = json_array_size(json_object_get(list, "plugins"));
    for (size_t i = 0; i < n; i++) {
        json_t *res = NULL;
        if (invoke(o, list, i, "ADD", caps, prev, &res, e) < 0) {
            SL_AUTOFREE char *undo = prev ? json_dumps(prev, JSON_COMPACT) : NULL;
            json_decref(prev);
            json_decref(list);
            json_decref(caps);
            sl_error ignored;
            sl_cni_del(o, undo, &ignored);
            return -1;
        }
        if (res) { /* a plugin that prints nothing passes the previous result on */
            json_decref(prev);
            prev = res;
        }
    }
    *ip = NULL;
    if (prev)
        result_ips(prev, ip, 1);
    *result = prev ? json_dumps(prev, JSON_COMPACT) : strdup("{}");
    json_decref(prev);
    json_decref(list);
    json_decref(caps);
    return 0;
}

int sl_cni_del(const sl_cni_opts *o, const char *result, sl_error *e)
{
    json_t *list = load_list(o->conf_dir, e);
    if (!list)
        return -1;
    json_t *prev = result ? json_loads(result, 0, NULL) : NULL;
    json_t *caps = sl_cni_capability_args(o);
    size_t n = json_array_size(json_object_get(list, "plugins"));
    int rc = 0;
    sl_error one;
    for (size_t i = n; i-- > 0;)
        if (invoke(o, list, i, "DEL", caps, prev, NULL, &one) < 0 && rc == 0) {
            rc = -1;
            if (e)
                *e = one;
        }
    json_decref(caps);
    json_decref(prev);
    json_decref(list);
    return rc;
}
