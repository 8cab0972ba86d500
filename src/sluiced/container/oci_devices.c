#include "container/oci_devices.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

int sl_oci_device_access(const char *perm, char out[4])
{
    bool r = false, w = false, m = false;
    if (!*perm)
        return -1;
    for (const char *p = perm; *p; p++) {
        bool *bit = *p == 'r' ? &r : *p == 'w' ? &w : *p == 'm' ? &m : NULL;
        if (!bit || *bit)
            return -1;
        *bit = true;
    }
    size_t n = 0;
    if (r)
        out[n++] = 'r';
    if (w)
        out[n++] = 'w';
    if (m)
        out[n++] = 'm';
    out[n] = '\0';
    return 0;
}

static int push(sl_oci_devices *d, const struct stat *st, const char *ctr, const char *access,
                sl_error *e)
{
    if (d->n >= SL_DEVICES_MAX)
        return sl_error_set(e, E2BIG, "more than %d devices", SL_DEVICES_MAX);
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        sl_oci_device *v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return sl_error_set(e, ENOMEM, "devices");
        d->v = v;
        d->cap = cap;
    }
    sl_oci_device *x = &d->v[d->n];
    if (!(x->path = strdup(ctr)))
        return sl_error_set(e, ENOMEM, "devices");
    x->type = S_ISBLK(st->st_mode) ? 'b' : 'c';
    x->major = major(st->st_rdev);
    x->minor = minor(st->st_rdev);
    x->mode = st->st_mode & 07777;
    x->uid = st->st_uid;
    x->gid = st->st_gid;
    snprintf(x->access, sizeof(x->access), "%s", access);
    d->n++;
    return 0;
}

/* Directories a device walk leaves alone (containerd's list). */
static bool skipped_dir(const char *name)
{
    static const char *const names[] = {"pts",  "shm",         "fd",   "mqueue",
                                        ".lxc", ".lxd-mounts", ".udev"};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

static int walk(sl_oci_devices *d, const char *host, const char *ctr, const char *access, int depth,
                sl_error *e);

static int walk_entry(sl_oci_devices *d, const char *host, const char *ctr, const char *name,
                      const char *access, int depth, sl_error *e)
{
    char h[SL_DEVICE_PATH_MAX], c[SL_DEVICE_PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(h, sizeof(h), "%s/%s", host, name) >= sizeof(h) ||
        (size_t)snprintf(c, sizeof(c), "%s/%s", ctr, name) >= sizeof(c))
        return sl_error_set(e, ENAMETOOLONG, "%s/%s", host, name);
    if (lstat(h, &st) < 0)
        return errno == ENOENT ? 0 : sl_error_set(e, errno, "%s", h);
    if (S_ISDIR(st.st_mode))
        return skipped_dir(name) ? 0 : walk(d, h, c, access, depth + 1, e);
    if ((!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) || !strcmp(name, "console"))
        return 0;
    return push(d, &st, c, access, e);
}

static int walk(sl_oci_devices *d, const char *host, const char *ctr, const char *access, int depth,
                sl_error *e)
{
    if (depth > SL_DEVICES_DEPTH)
        return sl_error_set(e, ELOOP, "%s: more than %d directory levels", host, SL_DEVICES_DEPTH);
    DIR *dir = opendir(host);
    if (!dir)
        return sl_error_set(e, errno, "%s", host);
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(dir)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            rc = walk_entry(d, host, ctr, de->d_name, access, depth, e);
    closedir(dir);
    return rc;
}

int sl_oci_devices_add(sl_oci_devices *d, const char *host, const char *ctr, const char *access,
                       sl_error *e)
{
    struct stat st;
    if (!ctr || !*ctr)
        ctr = host;
    if (stat(host, &st) < 0)
        return sl_error_set(e, errno, "\"%s\"", host);
    if (S_ISDIR(st.st_mode))
        return walk(d, host, ctr, access, 0, e);
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
        return sl_error_set(e, ENODEV, "\"%s\" is not a device node", host);
    return push(d, &st, ctr, access, e);
}

void sl_oci_devices_fini(sl_oci_devices *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i].path);
    free(d->v);
    *d = (sl_oci_devices){0};
}

static json_t *child(json_t *parent, const char *key, json_t *(*make)(void))
{
    json_t *c = json_object_get(parent, key);
    if (!c) {
        c = make();
        json_object_set_new(parent, key, c);
    }
    return c;
}

void sl_oci_devices_json(json_t *linux_section, const sl_oci_device *v, size_t n)
{
    if (n == 0)
        return;
    json_t *devs = child(linux_section, "devices", json_array);
    json_t *rules = child(child(linux_section, "resources", json_object), "devices", json_array);
    for (size_t i = 0; i < n; i++) {
        const sl_oci_device *x = &v[i];
        char type[2] = {x->type, '\0'};
        json_array_append_new(
            devs, json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:i}", "path", x->path, "type", type,
                            "major", (json_int_t)x->major, "minor", (json_int_t)x->minor,
                            "fileMode", (int)x->mode, "uid", (int)x->uid, "gid", (int)x->gid));
        json_array_append_new(rules, json_pack("{s:b, s:s, s:I, s:I, s:s}", "allow", 1, "type",
                                               type, "major", (json_int_t)x->major, "minor",
                                               (json_int_t)x->minor, "access", x->access));
    }
}
