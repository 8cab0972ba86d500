#include "stats/cgroup.h"
#include "stats/decimal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fsutil.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Bytes read at once when counting cgroup.procs lines. */
#define PROCS_CHUNK 8192

/* ---- parsers ---- */

static bool only_space(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\n' && *s != '\t')
            return false;
    return true;
}

bool sl_cg_parse_value(const char *text, uint64_t *v)
{
    const char *end;
    if (!strncmp(text, "max", 3) && only_space(text + 3)) {
        *v = SL_CG_NO_LIMIT;
        return true;
    }
    if (!sl_decimal_u64(text, &end, v) || !only_space(end))
        return false;
    if (*v > SL_CG_UNLIMITED_ABOVE)
        *v = SL_CG_NO_LIMIT;
    return true;
}

bool sl_cg_keyed(const char *text, const char *key, uint64_t *v)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *end;
        if (!strncmp(line, key, klen) && line[klen] == ' ' &&
            sl_decimal_u64(line + klen + 1, &end, v) && (*end == '\n' || *end == '\0'))
            return true;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return false;
}

uint64_t sl_cg_count_lines(const char *text, size_t len)
{
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    return n;
}

uint64_t sl_cg_working_set(const sl_cg_stats *st)
{
    return st->mem_usage > st->inactive_file ? st->mem_usage - st->inactive_file : 0;
}

bool sl_cg_available(const sl_cg_stats *st, uint64_t *avail)
{
    if (!st->mem || st->mem_limit == SL_CG_NO_LIMIT)
        return false;
    uint64_t ws = sl_cg_working_set(st);
    *avail = st->mem_limit > ws ? st->mem_limit - ws : 0;
    return true;
}

bool sl_cg_swap_available(const sl_cg_stats *st, uint64_t *avail)
{
    if (!st->swap || st->swap_limit == SL_CG_NO_LIMIT)
        return false;
    *avail = st->swap_limit > st->swap_usage ? st->swap_limit - st->swap_usage : 0;
    return true;
}

/* ---- files ---- */

sl_cg_mode sl_cg_detect(const char *root)
{
    struct statfs sf;
    if (statfs(root, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
        return SL_CG_V2;
    SL_AUTOFREE char *cpuacct = sl_path_join(root, "cpuacct");
    SL_AUTOFREE char *memory = sl_path_join(root, "memory");
    struct stat st;
    if ((cpuacct && stat(cpuacct, &st) == 0) || (memory && stat(memory, &st) == 0))
        return SL_CG_V1;
    return SL_CG_NONE;
}

/* <root>[/<ctrl>]<path>, malloc'd. */
static char *cg_dir(const char *root, const char *ctrl, const char *path)
{
    char *out = NULL;
    int n = ctrl ? asprintf(&out, "%s/%s%s", root, ctrl, path) : asprintf(&out, "%s%s", root, path);
    return n < 0 ? NULL : out;
}

/* Reads <dir>/<file> into a malloc'd text; NULL when absent or unreadable. */
static char *read_cg_file(const char *dir, const char *file)
{
    SL_AUTOFREE char *p = dir ? sl_path_join(dir, file) : NULL;
    char *text = NULL;
    sl_error e;
    if (!p || sl_read_file(p, SL_CG_FILE_MAX, &text, NULL, &e) < 0)
        return NULL;
    return text;
}

static bool read_value(const char *dir, const char *file, uint64_t *v)
{
    SL_AUTOFREE char *text = read_cg_file(dir, file);
    return text && sl_cg_parse_value(text, v);
}

static bool read_keyed(const char *dir, const char *file, const char *key, uint64_t *v)
{
    SL_AUTOFREE char *text = read_cg_file(dir, file);
    return text && sl_cg_keyed(text, key, v);
}

/* Lines of <dir>/cgroup.procs, read in chunks (a big cgroup's list can be
 * long). Returns -1 when the file cannot be opened. */
static int64_t procs_in(const char *dir)
{
    SL_AUTOFREE char *p = sl_path_join(dir, "cgroup.procs");
    SL_AUTOCLOSE int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return -1;
    char buf[PROCS_CHUNK];
    uint64_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += sl_cg_count_lines(buf, (size_t)r);
    }
    return (int64_t)n;
}

/* Processes of dir and every descendant cgroup down to depth levels. */
static int64_t procs_tree(const char *dir, int depth)
{
    int64_t n = procs_in(dir);
    if (n < 0 || depth <= 0)
        return n;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        SL_AUTOFREE char *sub = sl_path_join(dir, de->d_name);
        int64_t k = sub ? procs_tree(sub, depth - 1) : -1;
        if (k > 0)
            n += k;
    }
    if (d)
        closedir(d);
    return n;
}

static void read_procs(const char *dir, sl_cg_stats *st)
{
    int64_t n = dir ? procs_tree(dir, SL_CG_MAX_DEPTH) : -1;
    st->procs = n >= 0;
    st->nprocs = n >= 0 ? (uint64_t)n : 0;
}

/* ---- v1 ---- */

static void v1_memory(const char *dir, sl_cg_stats *st)
{
    SL_AUTOFREE char *stat = read_cg_file(dir, "memory.stat");
    st->mem = stat && read_value(dir, "memory.usage_in_bytes", &st->mem_usage);
    if (!st->mem)
        return;
    if (!read_value(dir, "memory.limit_in_bytes", &st->mem_limit))
        st->mem_limit = SL_CG_NO_LIMIT;
    sl_cg_keyed(stat, "total_inactive_file", &st->inactive_file);
    sl_cg_keyed(stat, "total_rss", &st->rss);
    sl_cg_keyed(stat, "total_pgfault", &st->pgfault);
    sl_cg_keyed(stat, "total_pgmajfault", &st->pgmajfault);
    uint64_t memsw, memsw_limit;
    /* memsw counts memory + swap; present only with swap accounting */
    st->swap = read_value(dir, "memory.memsw.usage_in_bytes", &memsw);
    if (!st->swap)
        return;
    st->swap_usage = memsw > st->mem_usage ? memsw - st->mem_usage : 0;
    if (!read_value(dir, "memory.memsw.limit_in_bytes", &memsw_limit) ||
        memsw_limit == SL_CG_NO_LIMIT)
        st->swap_limit = SL_CG_NO_LIMIT;
    else if (st->mem_limit == SL_CG_NO_LIMIT)
        st->swap_limit = memsw_limit;
    else
        st->swap_limit = memsw_limit > st->mem_limit ? memsw_limit - st->mem_limit : 0;
}

static int read_v1(const char *root, const char *path, sl_cg_stats *st)
{
    SL_AUTOFREE char *cpu = cg_dir(root, "cpuacct", path);
    SL_AUTOFREE char *mem = cg_dir(root, "memory", path);
    SL_AUTOFREE char *pids = cg_dir(root, "pids", path);
    st->cpu = read_value(cpu, "cpuacct.usage", &st->cpu_ns);
    v1_memory(mem, st);
    struct stat sb;
    read_procs(pids && stat(pids, &sb) == 0 ? pids : cpu, st);
    return st->cpu || st->mem || st->procs ? 0 : -1;
}

/* ---- v2 ---- */

static int read_v2(const char *root, const char *path, sl_cg_stats *st)
{
    SL_AUTOFREE char *dir = cg_dir(root, NULL, path);
    uint64_t usec;
    st->cpu = read_keyed(dir, "cpu.stat", "usage_usec", &usec) && usec <= UINT64_MAX / 1000;
    st->cpu_ns = st->cpu ? usec * 1000 : 0;
    SL_AUTOFREE char *stat = read_cg_file(dir, "memory.stat");
    st->mem = stat && read_value(dir, "memory.current", &st->mem_usage);
    if (st->mem) {
        if (!read_value(dir, "memory.max", &st->mem_limit))
            st->mem_limit = SL_CG_NO_LIMIT;
        sl_cg_keyed(stat, "inactive_file", &st->inactive_file);
        sl_cg_keyed(stat, "anon", &st->rss);
        sl_cg_keyed(stat, "pgfault", &st->pgfault);
        sl_cg_keyed(stat, "pgmajfault", &st->pgmajfault);
        st->swap = read_value(dir, "memory.swap.current", &st->swap_usage);
        if (st->swap && !read_value(dir, "memory.swap.max", &st->swap_limit))
            st->swap_limit = SL_CG_NO_LIMIT;
    }
    read_procs(dir, st);
    return st->cpu || st->mem || st->procs ? 0 : -1;
}

int sl_cg_read(const char *root, sl_cg_mode mode, const char *path, sl_cg_stats *st, sl_error *e)
{
    memset(st, 0, sizeof(*st));
    if (path[0] != '/' || strstr(path, "/..") || strstr(path, "../"))
        return sl_error_set(e, EINVAL, "cgroup path \"%s\": not absolute or has \"..\"", path);
    int rc = mode == SL_CG_V2   ? read_v2(root, path, st)
             : mode == SL_CG_V1 ? read_v1(root, path, st)
                                : -1;
    if (rc < 0)
        return sl_error_set(e, ENOENT, "cgroup %s", path);
    return 0;
}
