#include "cgroup_host.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "fsutil.h"

#define CGROUP2_MAGIC 0x63677270 /* CGROUP2_SUPER_MAGIC */
#define CAP_SYS_RESOURCE_BIT 24
#define HUGEPAGES_DIR "/sys/kernel/mm/hugepages"

static const char *const size_units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
#define N_UNITS (sizeof(size_units) / sizeof(size_units[0]))

/* ---- lists ---- */

static int parse_num(const char **p, unsigned long *v)
{
    if (!isdigit((unsigned char)**p))
        return -1;
    unsigned long n = 0;
    while (isdigit((unsigned char)**p)) {
        n = n * 10 + (unsigned long)(**p - '0');
        if (n >= SL_CG_MAX_CPUS)
            n = SL_CG_MAX_CPUS; /* too large: stays too large, no overflow */
        (*p)++;
    }
    *v = n;
    return 0;
}

int sl_cg_list_parse(const char *text, sl_cg_bits *bits, const char **why)
{
    memset(bits, 0, sizeof(*bits));
    if (strlen(text) >= SL_CG_LIST_MAX)
        return *why = "the list is too long", -1;
    const char *p = text;
    while (*p) {
        unsigned long a, b;
        if (parse_num(&p, &a) < 0)
            return *why = "not a list of numbers and ranges such as 0-3,8", -1;
        b = a;
        if (*p == '-') {
            p++;
            if (parse_num(&p, &b) < 0)
                return *why = "not a list of numbers and ranges such as 0-3,8", -1;
            if (b < a)
                return *why = "a range that goes down", -1;
        }
        if (b >= SL_CG_MAX_CPUS)
            return *why = "a number beyond the largest supported", -1;
        for (unsigned long i = a; i <= b; i++)
            bits->w[i / 64] |= UINT64_C(1) << (i % 64);
        if (*p == ',' && p[1] != '\0')
            p++;
        else if (*p)
            return *why = "not a list of numbers and ranges such as 0-3,8", -1;
    }
    return 0;
}

int sl_cg_bits_missing(const sl_cg_bits *a, const sl_cg_bits *b)
{
    for (size_t i = 0; i < SL_CG_MAX_CPUS / 64; i++) {
        uint64_t extra = a->w[i] & ~b->w[i];
        if (extra)
            return (int)(i * 64) + __builtin_ctzll(extra);
    }
    return -1;
}

/* ---- page sizes ---- */

int sl_cg_page_size_parse(const char *name, uint64_t *bytes)
{
    const char *p = name;
    uint64_t n = 0;
    if (!isdigit((unsigned char)*p))
        return -1;
    while (isdigit((unsigned char)*p)) {
        if (n > (UINT64_MAX - 9) / 10)
            return -1;
        n = n * 10 + (uint64_t)(*p++ - '0');
    }
    for (size_t u = 1; u < N_UNITS; u++) {
        if (strcmp(p, size_units[u]) != 0)
            continue;
        for (size_t k = 0; k < u; k++) {
            if (n > UINT64_MAX / 1024)
                return -1;
            n *= 1024;
        }
        *bytes = n;
        return n ? 0 : -1;
    }
    return -1;
}

void sl_cg_page_size_name(uint64_t bytes, char *out)
{
    size_t u = 0;
    while (u + 1 < N_UNITS && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(out, SL_CG_PAGE_SIZE_MAX, "%" PRIu64 "%s", bytes, size_units[u]);
}

/* ---- file texts ---- */

int sl_cg_kv_get(const char *text, const char *key, uint64_t *value)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        if (!strncmp(line, key, klen) && line[klen] == ' ') {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(line + klen + 1, &end, 10);
            if (errno || end == line + klen + 1)
                return -1;
            *value = v;
            return 0;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

static bool list_has(const char *list, size_t len, const char *word)
{
    size_t wlen = strlen(word);
    for (const char *p = list; p < list + len;) {
        const char *comma = memchr(p, ',', (size_t)(list + len - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(list + len - p);
        if (n == wlen && !memcmp(p, word, n))
            return true;
        p += n + 1;
    }
    return false;
}

static int copy_field(const char *s, size_t len, char *out, size_t outlen)
{
    if (len >= outlen)
        return -1;
    memcpy(out, s, len);
    out[len] = '\0';
    return 0;
}

int sl_cg_proc_path(const char *text, const char *controller, char *out, size_t outlen)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(end - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (c2) {
            size_t clen = (size_t)(c2 - c1 - 1);
            bool match = controller ? list_has(c1 + 1, clen, controller)
                                    : (clen == 0 && c1 - line == 1 && line[0] == '0');
            if (match)
                return copy_field(c2 + 1, (size_t)(end - c2 - 1), out, outlen);
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* Splits a line into space-separated fields (at most max). */
static size_t split_fields(const char *line, const char *end, const char **f, size_t *flen,
                           size_t max)
{
    size_t n = 0;
    const char *p = line;
    while (p < end && n < max) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        const char *s = p;
        while (p < end && *p != ' ')
            p++;
        f[n] = s;
        flen[n++] = (size_t)(p - s);
    }
    return n;
}

/* One mountinfo line: "id parent maj:min root mnt opts [optional...] - fstype src superopts".
 * controller NULL: the cgroup2 mount. */
static int mountinfo_line(const char *line, const char *end, const char *controller, char *mnt,
                          size_t mntlen, char *root, size_t rootlen)
{
    if (end - line > SL_CG_MOUNTINFO_LINE_MAX)
        return -1;
    const char *f[64];
    size_t fl[64];
    size_t n = split_fields(line, end, f, fl, 64);
    size_t sep = 6;
    while (sep < n && !(fl[sep] == 1 && f[sep][0] == '-'))
        sep++;
    if (n < 6 || sep + 3 >= n) /* fstype, source and super options follow "-" */
        return -1;
    if (!controller && (fl[sep + 1] != 7 || memcmp(f[sep + 1], "cgroup2", 7)))
        return -1;
    if (controller && (fl[sep + 1] != 6 || memcmp(f[sep + 1], "cgroup", 6)))
        return -1;
    if (controller && !list_has(f[sep + 3], fl[sep + 3], controller))
        return -1;
    if (copy_field(f[4], fl[4], mnt, mntlen) < 0 || copy_field(f[3], fl[3], root, rootlen) < 0)
        return -1;
    return 0;
}

int sl_cg_mountinfo_find(const char *text, const char *controller, char *mnt, size_t mntlen,
                         char *root, size_t rootlen)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        if (mountinfo_line(line, end, controller, mnt, mntlen, root, rootlen) == 0)
            return 0;
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* ---- the running host ---- */

static char *read_text(const char *path)
{
    char *text = NULL;
    if (sl_read_file(path, SL_CG_FILE_MAX, &text, NULL, NULL) < 0)
        return NULL;
    return text;
}

static bool is_v2(void)
{
    struct statfs st;
    return statfs(SL_CG_ROOT, &st) == 0 && st.f_type == CGROUP2_MAGIC;
}

/* mountinfo line by line: its size grows with the host's mounts. */
static int v1_mount(const char *controller, char *mnt, size_t mntlen, char *root, size_t rootlen)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = -1;
    while (f && rc < 0 && (n = getline(&line, &cap, f)) > 0)
        rc = mountinfo_line(line, line + n - (line[n - 1] == '\n'), controller, mnt, mntlen, root,
                            rootlen);
    free(line);
    if (f)
        fclose(f);
    return rc;
}

/* The directory of the v1 hierarchy of controller as seen from here, for
 * the cgroup path p (from /proc/<pid>/cgroup). Malloc'd or NULL. */
static char *v1_dir(const char *controller, const char *p)
{
    char mnt[1024], root[1024];
    if (v1_mount(controller, mnt, sizeof(mnt), root, sizeof(root)) < 0)
        return NULL;
    size_t rlen = strcmp(root, "/") ? strlen(root) : 0;
    if (rlen && (strncmp(p, root, rlen) || (p[rlen] && p[rlen] != '/')))
        return NULL; /* outside the part of the hierarchy mounted here */
    return sl_path_join(mnt, p + rlen);
}

static int read_list(const char *path, const char *fallback, sl_cg_bits *bits, char *text,
                     sl_error *e)
{
    SL_AUTOFREE char *t = read_text(path);
    const char *why = NULL;
    if (!t && !fallback)
        return sl_error_set(e, errno, "read %s", path);
    snprintf(text, SL_CG_LIST_MAX, "%s", t ? t : fallback);
    text[strcspn(text, "\n")] = '\0';
    if (sl_cg_list_parse(text, bits, &why) < 0)
        return sl_error_set(e, 0, "%s: \"%s\": %s", path, text, why);
    return 0;
}

static bool file_exists_in(const char *dir, const char *name)
{
    SL_AUTOFREE char *p = dir ? sl_path_join(dir, name) : NULL;
    return p && access(p, F_OK) == 0;
}

/* v2: memory.swap.max exists in every non-root cgroup when the kernel
 * accounts swap; look at our own cgroup, else at any child of the root. */
static bool v2_memsw(void)
{
    char own[1024];
    SL_AUTOFREE char *self = read_text("/proc/self/cgroup");
    if (self && sl_cg_proc_path(self, NULL, own, sizeof(own)) == 0 && strcmp(own, "/")) {
        SL_AUTOFREE char *dir = sl_path_join(SL_CG_ROOT, own);
        return file_exists_in(dir, "memory.swap.max");
    }
    DIR *d = opendir(SL_CG_ROOT);
    struct dirent *de;
    bool found = false;
    while (d && !found && (de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        SL_AUTOFREE char *dir = sl_path_join(SL_CG_ROOT, de->d_name);
        found = file_exists_in(dir, "memory.swap.max");
    }
    if (d)
        closedir(d);
    return found;
}

static void probe_controllers(sl_cg_host *h)
{
    if (h->v2) {
        SL_AUTOFREE char *ctrls = read_text(SL_CG_ROOT "/cgroup.controllers");
        h->hugetlb = ctrls && strstr(ctrls, "hugetlb");
        h->memsw = v2_memsw();
        return;
    }
    SL_AUTOFREE char *mem = v1_dir("memory", "/");
    SL_AUTOFREE char *huge = v1_dir("hugetlb", "/");
    h->memsw = file_exists_in(mem, "memory.memsw.limit_in_bytes");
    h->hugetlb = huge != NULL;
}

static uint64_t read_u64(const char *dir, const char *name)
{
    SL_AUTOFREE char *p = sl_path_join(dir, name);
    SL_AUTOFREE char *t = p ? read_text(p) : NULL;
    return t ? strtoull(t, NULL, 10) : 0;
}

static void probe_hugepages(sl_cg_host *h)
{
    DIR *d = opendir(HUGEPAGES_DIR);
    struct dirent *de;
    while (d && (de = readdir(d)) && h->n_hugepages < SL_CG_MAX_HUGEPAGE_SIZES) {
        unsigned long long kb;
        char unit[4];
        if (sscanf(de->d_name, "hugepages-%llu%3s", &kb, unit) != 2 || strcmp(unit, "kB"))
            continue;
        SL_AUTOFREE char *dir = sl_path_join(HUGEPAGES_DIR, de->d_name);
        if (!dir)
            continue;
        sl_cg_hugepage *hp = &h->hugepages[h->n_hugepages++];
        hp->size = (uint64_t)kb * 1024;
        hp->pool = read_u64(dir, "nr_hugepages") + read_u64(dir, "nr_overcommit_hugepages");
    }
    if (d)
        closedir(d);
}

/* Lowering oom_score_adj below the value a process inherited needs
 * CAP_SYS_RESOURCE; without it the daemon's own value is the floor (what
 * containerd's restrict_oom_score_adj does), as runc would fail below it. */
static int probe_oom_floor(sl_cg_host *h, sl_error *e)
{
    SL_AUTOFREE char *own = read_text("/proc/self/oom_score_adj");
    SL_AUTOFREE char *status = read_text("/proc/self/status");
    const char *cap = status ? strstr(status, "\nCapEff:") : NULL;
    if (!own || !cap)
        return sl_error_set(e, errno, "read /proc/self/oom_score_adj and status");
    uint64_t eff = strtoull(cap + 8, NULL, 16);
    h->oom_floor = eff & (UINT64_C(1) << CAP_SYS_RESOURCE_BIT) ? SL_CG_OOM_MIN : atoi(own);
    return 0;
}

int sl_cg_probe(sl_cg_host *h, sl_error *e)
{
    memset(h, 0, sizeof(*h));
    h->v2 = is_v2();
    probe_controllers(h);
    probe_hugepages(h);
    if (read_list("/sys/devices/system/cpu/online", NULL, &h->cpus, h->cpus_text, e) < 0 ||
        read_list("/sys/devices/system/node/online", "0", &h->mems, h->mems_text, e) < 0)
        return -1;
    return probe_oom_floor(h, e);
}

char *sl_cg_oom_file(pid_t pid)
{
    char path[64], cg[1024];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    SL_AUTOFREE char *text = read_text(path);
    bool v2 = is_v2();
    if (!text || sl_cg_proc_path(text, v2 ? NULL : "memory", cg, sizeof(cg)) < 0)
        return NULL;
    SL_AUTOFREE char *dir = v2 ? sl_path_join(SL_CG_ROOT, cg) : v1_dir("memory", cg);
    return dir ? sl_path_join(dir, v2 ? "memory.events" : "memory.oom_control") : NULL;
}

int sl_cg_oom_kills(const char *file, uint64_t *n)
{
    SL_AUTOFREE char *text = read_text(file);
    return text ? sl_cg_kv_get(text, "oom_kill", n) : -1;
}
