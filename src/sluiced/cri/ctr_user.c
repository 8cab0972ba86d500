#include "cri/ctr_user.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fsutil.h"
#include "grpc/grpc_status.h"

#define FIELD "linux.security_context."
#define MAX_ID 4294967294u /* (uid_t)-1 means "unchanged" to the kernel */

int sl_ctr_id_check(const char *field, int64_t id, sl_error *e)
{
    if (id < 0 || id > (int64_t)MAX_ID)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "%s: %lld is not a valid id (0..%u)",
                             field, (long long)id, MAX_ID);
    return 0;
}

/* <rootfs>/<rel> read with symlinks resolved inside rootfs (an image's
 * /etc/passwd may be a link anywhere), a regular file only (never a FIFO
 * that would block the loop). NULL when missing or unreadable. */
static char *read_in_root(const char *rootfs, const char *rel)
{
    SL_AUTOCLOSE int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    SL_AUTOCLOSE int fd = root < 0 ? -1 : (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SL_CTR_MAX_ETC_FILE)
        return NULL;
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
    if (n < 0) {
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

/* Splits line at ':' into at most n fields; false when it has fewer. */
static bool split(char *line, char **f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        f[i] = line;
        char *c = line ? strchr(line, ':') : NULL;
        if (c)
            *c = '\0';
        else if (i + 1 < n)
            return false;
        line = c ? c + 1 : NULL;
    }
    return true;
}

static bool parse_id(const char *s, uint32_t *out)
{
    char *end;
    if (!*s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > MAX_ID)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* A /etc/passwd entry by name (name != NULL) or by uid. */
typedef struct pw_entry {
    char name[256];
    uint32_t uid, gid;
} pw_entry;

static bool find_passwd(const char *rootfs, const char *name, uint32_t uid, pw_entry *out)
{
    SL_AUTOFREE char *text = read_in_root(rootfs, "etc/passwd");
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *f[4];
        if (!split(line, f, 4) || !parse_id(f[2], &out->uid))
            continue;
        char *colon = strchr(f[3], ':');
        if (colon)
            *colon = '\0';
        if (!parse_id(f[3], &out->gid))
            continue;
        if (name ? !strcmp(f[0], name) : out->uid == uid) {
            snprintf(out->name, sizeof(out->name), "%s", f[0]);
            return true;
        }
    }
    return false;
}

/* Calls fn for each /etc/group entry (name, gid, member list). */
static void each_group(const char *rootfs, bool (*fn)(const char *, uint32_t, char *, void *),
                       void *arg)
{
    SL_AUTOFREE char *text = read_in_root(rootfs, "etc/group");
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *f[4];
        uint32_t gid;
        if (split(line, f, 4) && parse_id(f[2], &gid) && !fn(f[0], gid, f[3], arg))
            return;
    }
}

typedef struct group_query {
    const char *name;
    uint32_t gid;
    bool found;
} group_query;

static bool group_by_name(const char *name, uint32_t gid, char *members, void *arg)
{
    group_query *q = arg;
    (void)members;
    if (strcmp(name, q->name))
        return true;
    q->gid = gid;
    q->found = true;
    return false;
}

/* Where the resolution is: uid, gid, the user name for /etc/group. */
typedef struct user_acc {
    uint32_t uid, gid;
    char name[256]; /* "" when the uid has no /etc/passwd entry */
    uint32_t *gids;
    size_t ngids;
} user_acc;

/* "name" or "uid" (with its /etc/passwd gid, else 0). */
static int resolve_user_part(const char *rootfs, const char *user, const char *field, user_acc *acc,
                             sl_error *e)
{
    pw_entry pw;
    uint32_t uid;
    if (parse_id(user, &uid)) {
        acc->uid = uid;
        acc->gid = 0;
        if (find_passwd(rootfs, NULL, uid, &pw)) {
            acc->gid = pw.gid;
            snprintf(acc->name, sizeof(acc->name), "%s", pw.name);
        }
        return 0;
    }
    if (!find_passwd(rootfs, user, 0, &pw))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s: no user \"%s\" in the image's /etc/passwd", field, user);
    acc->uid = pw.uid;
    acc->gid = pw.gid;
    snprintf(acc->name, sizeof(acc->name), "%s", pw.name);
    return 0;
}

static int resolve_group_part(const char *rootfs, const char *group, const char *field,
                              user_acc *acc, sl_error *e)
{
    if (parse_id(group, &acc->gid))
        return 0;
    group_query q = {.name = group};
    each_group(rootfs, group_by_name, &q);
    if (!q.found)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s: no group \"%s\" in the image's /etc/group", field, group);
    acc->gid = q.gid;
    return 0;
}

/* The image's USER: "user", "user:group". */
static int resolve_image_user(const char *rootfs, const char *spec, user_acc *acc, sl_error *e)
{
    char user[256], group[256] = "";
    const char *colon = strchr(spec, ':');
    int ulen = colon ? (int)(colon - spec) : (int)strlen(spec);
    if (ulen >= (int)sizeof(user) || (colon && strlen(colon + 1) >= sizeof(group)))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "image USER \"%s\": too long", spec);
    snprintf(user, sizeof(user), "%.*s", ulen, spec);
    if (colon)
        snprintf(group, sizeof(group), "%s", colon + 1);
    if (resolve_user_part(rootfs, user, "image USER", acc, e) < 0)
        return -1;
    return *group ? resolve_group_part(rootfs, group, "image USER", acc, e) : 0;
}

static int add_gid(user_acc *acc, uint32_t gid)
{
    for (size_t i = 0; i < acc->ngids; i++)
        if (acc->gids[i] == gid)
            return 0;
    if (acc->ngids >= SL_CTR_MAX_GROUPS)
        return -1;
    acc->gids[acc->ngids++] = gid;
    return 0;
}

/* /etc/group entries that list the user (containerd skips a group that
 * only shares the user's name). */
static bool member_group(const char *name, uint32_t gid, char *members, void *arg)
{
    user_acc *acc = arg;
    if (!strcmp(name, acc->name))
        return true;
    for (char *m = members, *next; m && *m; m = next) {
        next = strchr(m, ',');
        if (next)
            *next++ = '\0';
        if (!strcmp(m, acc->name))
            return add_gid(acc, gid) == 0;
    }
    return true;
}

static int cmp_gid(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int collect_groups(const Runtime__V1__LinuxContainerSecurityContext *sc, const char *rootfs,
                          user_acc *acc, sl_error *e)
{
    size_t nsup = sc ? sc->n_supplemental_groups : 0;
    if (nsup > SL_CTR_MAX_GROUPS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD "supplemental_groups: more than %d groups", SL_CTR_MAX_GROUPS);
    for (size_t i = 0; i < nsup; i++)
        if (sl_ctr_id_check(FIELD "supplemental_groups", sc->supplemental_groups[i], e) < 0)
            return -1;
    acc->gids = calloc(SL_CTR_MAX_GROUPS, sizeof(uint32_t));
    if (!acc->gids)
        return sl_error_set(e, ENOMEM, "groups");
    add_gid(acc, acc->gid);
    bool strict =
        sc && sc->supplemental_groups_policy == RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Strict;
    if (!strict && *acc->name)
        each_group(rootfs, member_group, acc);
    for (size_t i = 0; i < nsup; i++)
        if (add_gid(acc, (uint32_t)sc->supplemental_groups[i]) < 0)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 FIELD "supplemental_groups: more than %d groups with the "
                                       "image's",
                                 SL_CTR_MAX_GROUPS);
    qsort(acc->gids, acc->ngids, sizeof(uint32_t), cmp_gid);
    return 0;
}

static int check_request(const Runtime__V1__LinuxContainerSecurityContext *sc, sl_error *e)
{
    if (!sc)
        return 0;
    if (sc->run_as_user && sl_ctr_id_check(FIELD "run_as_user", sc->run_as_user->value, e) < 0)
        return -1;
    if (sc->run_as_group && sl_ctr_id_check(FIELD "run_as_group", sc->run_as_group->value, e) < 0)
        return -1;
    if (sc->run_as_group && !sc->run_as_user && !*sc->run_as_username)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD "run_as_group: set without run_as_user or run_as_username");
    if (sc->run_as_user && *sc->run_as_username)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD "run_as_username: only one of run_as_user and "
                                   "run_as_username can be set");
    int policy = sc->supplemental_groups_policy;
    if (policy != RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Merge &&
        policy != RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Strict)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD "supplemental_groups_policy: unknown policy %d", policy);
    return 0;
}

int sl_ctr_user_resolve(const Runtime__V1__LinuxContainerSecurityContext *sc,
                        const char *image_user, const char *rootfs, sl_ctr_user *out, sl_error *e)
{
    user_acc acc = {0};
    *out = (sl_ctr_user){0};
    if (check_request(sc, e) < 0)
        return -1;
    int rc;
    if (sc && *sc->run_as_username)
        rc = resolve_user_part(rootfs, sc->run_as_username, FIELD "run_as_username", &acc, e);
    else if (sc && sc->run_as_user) {
        char uid[24];
        snprintf(uid, sizeof(uid), "%lld", (long long)sc->run_as_user->value);
        rc = resolve_user_part(rootfs, uid, FIELD "run_as_user", &acc, e);
    } else
        rc = resolve_image_user(rootfs, *image_user ? image_user : "0", &acc, e);
    if (rc == 0 && sc && sc->run_as_group)
        acc.gid = (uint32_t)sc->run_as_group->value;
    if (rc == 0)
        rc = collect_groups(sc, rootfs, &acc, e);
    if (rc < 0) {
        free(acc.gids);
        return -1;
    }
    *out = (sl_ctr_user){.uid = acc.uid, .gid = acc.gid, .gids = acc.gids, .ngids = acc.ngids};
    return 0;
}

void sl_ctr_user_fini(sl_ctr_user *u)
{
    free(u->gids);
    *u = (sl_ctr_user){0};
}
