#include "state/state.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"

#define RECORD "record.json"

char *sl_state_dir(const char *root, const char *kind, const char *id)
{
    SL_AUTOFREE char *k = sl_path_join(root, kind);
    return k ? sl_path_join(k, id) : NULL;
}

static char *record_path(const char *root, const char *kind, const char *id)
{
    SL_AUTOFREE char *d = sl_state_dir(root, kind, id);
    return d ? sl_path_join(d, RECORD) : NULL;
}

int sl_state_save(const char *root, const char *kind, const char *id, json_t *rec, sl_error *e)
{
    SL_AUTOFREE char *dir = sl_state_dir(root, kind, id);
    SL_AUTOFREE char *path = record_path(root, kind, id);
    SL_AUTOFREE char *text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    if (!dir || !path || !text)
        return sl_error_set(e, ENOMEM, "save %s %s", kind, id);
    if (sl_mkdir_p(dir, 0700, e) < 0)
        return -1;
    return sl_write_file_atomic(path, text, strlen(text), 0600, e);
}

json_t *sl_state_load(const char *root, const char *kind, const char *id, sl_error *e)
{
    SL_AUTOFREE char *path = record_path(root, kind, id);
    if (!path) {
        sl_error_set(e, ENOMEM, "load %s %s", kind, id);
        return NULL;
    }
    SL_AUTOFREE char *text = NULL;
    size_t len;
    if (sl_read_file(path, SL_STATE_MAX_RECORD, &text, &len, e) < 0)
        return NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    if (!j)
        sl_error_set(e, 0, "%s: %s", path, je.text);
    return j;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sl_state_list(const char *root, const char *kind, char ***ids, size_t *n, sl_error *e)
{
    *ids = NULL;
    *n = 0;
    SL_AUTOFREE char *dir = sl_path_join(root, kind);
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return errno == ENOENT ? 0 : sl_error_set(e, errno, "list %s", dir ? dir : kind);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        SL_AUTOFREE char *rp = record_path(root, kind, de->d_name);
        struct stat st;
        if (!rp || stat(rp, &st) < 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(*ids, cap * sizeof(char *));
            if (!nv)
                break;
            *ids = nv;
        }
        (*ids)[(*n)++] = strdup(de->d_name);
    }
    closedir(d);
    if (*n)
        qsort(*ids, *n, sizeof(char *), cmp);
    return 0;
}

void sl_state_ids_free(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

int sl_state_remove(const char *root, const char *kind, const char *id, sl_error *e)
{
    SL_AUTOFREE char *dir = sl_state_dir(root, kind, id);
    if (!dir)
        return sl_error_set(e, ENOMEM, "remove %s %s", kind, id);
    return sl_rm_rf(dir, e);
}
