#include "container/oci_resources.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "grpc/grpc_status.h"

#define INVALID SL_GRPC_INVALID_ARGUMENT
#define UNSUPPORTED SL_GRPC_UNIMPLEMENTED

static int fail(sl_error *e, int code, const char *prefix, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(sl_error *e, int code, const char *prefix, const char *field, const char *fmt, ...)
{
    char msg[SL_SYS_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sl_error_code(e, code, "%s.%s: %s", prefix, field, msg);
}

static bool set(const char *s)
{
    return s && *s;
}

/* ---- checks ---- */

static int check_cpu(const sl_res *r, const char *px, sl_error *e)
{
    if (r->cpu_period &&
        (r->cpu_period < SL_RES_CPU_PERIOD_MIN || r->cpu_period > SL_RES_CPU_PERIOD_MAX))
        return fail(e, INVALID, px, "cpu_period",
                    "%" PRId64 ": must be 0 (unset) or %d..%d microseconds", r->cpu_period,
                    SL_RES_CPU_PERIOD_MIN, SL_RES_CPU_PERIOD_MAX);
    if (r->cpu_quota != 0 && r->cpu_quota != -1 &&
        (r->cpu_quota < SL_RES_CPU_QUOTA_MIN || r->cpu_quota > SL_RES_CPU_QUOTA_MAX))
        return fail(e, INVALID, px, "cpu_quota",
                    "%" PRId64 ": must be -1 (no limit), 0 (unset) or %d..%" PRId64 " microseconds",
                    r->cpu_quota, SL_RES_CPU_QUOTA_MIN, SL_RES_CPU_QUOTA_MAX);
    if (r->cpu_shares &&
        (r->cpu_shares < SL_RES_CPU_SHARES_MIN || r->cpu_shares > SL_RES_CPU_SHARES_MAX))
        return fail(e, INVALID, px, "cpu_shares", "%" PRId64 ": must be 0 (unset) or %d..%d",
                    r->cpu_shares, SL_RES_CPU_SHARES_MIN, SL_RES_CPU_SHARES_MAX);
    return 0;
}

static int check_list(const char *text, const sl_cg_bits *online, const char *online_text,
                      const char *px, const char *field, const char *what, sl_error *e)
{
    if (!set(text))
        return 0;
    sl_cg_bits bits;
    const char *why;
    if (sl_cg_list_parse(text, &bits, &why) < 0)
        return fail(e, INVALID, px, field, "\"%.64s\": %s", text, why);
    int missing = sl_cg_bits_missing(&bits, online);
    if (missing >= 0)
        return fail(e, INVALID, px, field, "\"%.64s\": %s %d is not online on this host (%s)", text,
                    what, missing, online_text);
    return 0;
}

static int check_swap_without_memsw(const sl_res *r, const char *px, sl_error *e)
{
    int64_t m = r->memory_limit_in_bytes, s = r->memory_swap_limit_in_bytes;
    if (s == 0 || s == -1 || s == m)
        return 0;
    return fail(e, UNSUPPORTED, px, "memory_swap_limit_in_bytes",
                "%" PRId64 ": this host does not account swap (no memsw), so only 0, -1 or the "
                "memory limit can be honoured",
                s);
}

static int check_memory(sl_res *r, const sl_cg_host *h, const char *px, sl_error *e)
{
    int64_t m = r->memory_limit_in_bytes, s = r->memory_swap_limit_in_bytes;
    if (m < -1 || (m > 0 && m < SL_RES_MIN_MEMORY))
        return fail(e, INVALID, px, "memory_limit_in_bytes",
                    "%" PRId64 ": must be -1 (no limit), 0 (unset) or at least %d bytes", m,
                    SL_RES_MIN_MEMORY);
    if (s < -1)
        return fail(e, INVALID, px, "memory_swap_limit_in_bytes",
                    "%" PRId64 ": must be -1 (no limit), 0 (unset) or memory plus swap in bytes",
                    s);
    if (!h->memsw)
        return check_swap_without_memsw(r, px, e);
    if (s > 0 && m <= 0)
        return fail(e, INVALID, px, "memory_swap_limit_in_bytes",
                    "%" PRId64 ": needs a memory_limit_in_bytes (it limits memory plus swap)", s);
    if (s > 0 && s < m)
        return fail(e, INVALID, px, "memory_swap_limit_in_bytes",
                    "%" PRId64 ": below memory_limit_in_bytes (%" PRId64
                    "); it limits memory plus swap",
                    s, m);
    if (s == 0 && m > 0)
        r->memory_swap_limit_in_bytes = m;
    return 0;
}

static const sl_cg_hugepage *host_size(const sl_cg_host *h, uint64_t size)
{
    for (size_t i = 0; i < h->n_hugepages; i++)
        if (h->hugepages[i].size == size)
            return &h->hugepages[i];
    return NULL;
}

static void host_sizes_text(const sl_cg_host *h, char *out, size_t len)
{
    snprintf(out, len, "%s", h->n_hugepages ? "" : "none");
    for (size_t i = 0; i < h->n_hugepages; i++) {
        char name[SL_CG_PAGE_SIZE_MAX];
        sl_cg_page_size_name(h->hugepages[i].size, name);
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", i ? " " : "", name);
    }
}

static int check_hugepage(const sl_res *r, size_t i, const sl_cg_host *h, const char *px,
                          sl_error *e)
{
    const sl_res_hugepage *hp = &r->hugepage_limits[i];
    char field[64], sizes[128];
    uint64_t size, other;
    snprintf(field, sizeof(field), "hugepage_limits[%zu].page_size", i);
    if (!hp->page_size || sl_cg_page_size_parse(hp->page_size, &size) < 0)
        return fail(e, INVALID, px, field, "\"%.32s\": not a page size such as 2MB or 1GB",
                    hp->page_size ? hp->page_size : "");
    const sl_cg_hugepage *host = host_size(h, size);
    host_sizes_text(h, sizes, sizeof(sizes));
    if (!host)
        return fail(e, INVALID, px, field,
                    "\"%.32s\": not a huge page size of this host (it has: %s)", hp->page_size,
                    sizes);
    for (size_t k = 0; k < i; k++)
        if (sl_cg_page_size_parse(r->hugepage_limits[k].page_size, &other) == 0 && other == size)
            return fail(e, INVALID, px, field, "\"%.32s\": that page size is given twice",
                        hp->page_size);
    snprintf(field, sizeof(field), "hugepage_limits[%zu].limit", i);
    if (hp->limit > (uint64_t)INT64_MAX)
        return fail(e, INVALID, px, field, "%" PRIu64 ": beyond the largest limit", hp->limit);
    snprintf(field, sizeof(field), "hugepage_limits[%zu]", i);
    /* Without the controller a limit holds only if the pool cannot exceed it. */
    if (!h->hugetlb && host->pool && (host->pool > hp->limit / size))
        return fail(e, UNSUPPORTED, px, field,
                    "this host has no hugetlb cgroup controller runc can use, and its %s pool "
                    "(%" PRIu64 " pages) can exceed the limit of %" PRIu64 " bytes",
                    hp->page_size, host->pool, hp->limit);
    return 0;
}

static bool key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

static int check_unified_entry(const sl_res *r, size_t i, const char *px, sl_error *e)
{
    const char *k = r->unified[i].key, *v = r->unified[i].value;
    size_t klen = k ? strlen(k) : 0;
    bool ok = klen > 0 && klen <= SL_RES_UNIFIED_KEY_MAX && k[0] != '.' && strchr(k, '.');
    for (size_t c = 0; ok && c < klen; c++)
        ok = key_char(k[c]);
    if (!ok)
        return fail(e, INVALID, px, "unified", "\"%.64s\": not a cgroup v2 file name", k ? k : "");
    for (size_t j = 0; j < i; j++)
        if (!strcmp(r->unified[j].key, k))
            return fail(e, INVALID, px, "unified", "\"%s\" given twice", k);
    size_t vlen = v ? strlen(v) : 0;
    json_t *utf8 = json_stringn(v ? v : "", vlen); /* NULL unless valid UTF-8 */
    bool ok_text = utf8 != NULL && vlen <= SL_RES_UNIFIED_VALUE_MAX;
    json_decref(utf8);
    for (size_t c = 0; c < vlen; c++)
        ok_text &= (unsigned char)v[c] >= 0x20;
    if (!ok_text)
        return fail(e, INVALID, px, "unified",
                    "\"%s\": the value is not UTF-8, has control characters or is over %d bytes", k,
                    SL_RES_UNIFIED_VALUE_MAX);
    return 0;
}

static int check_unified(const sl_res *r, const sl_cg_host *h, const char *px, sl_error *e)
{
    if (!r->n_unified)
        return 0;
    if (!h->v2)
        return fail(e, UNSUPPORTED, px, "unified",
                    "needs the cgroup v2 unified hierarchy; this host has cgroup v1");
    for (size_t i = 0; i < r->n_unified; i++)
        if (check_unified_entry(r, i, px, e) < 0)
            return -1;
    return 0;
}

int sl_res_check(sl_res *r, const sl_cg_host *h, const char *prefix, sl_error *e)
{
    if (check_cpu(r, prefix, e) < 0 ||
        check_list(r->cpuset_cpus, &h->cpus, h->cpus_text, prefix, "cpuset_cpus", "cpu", e) < 0 ||
        check_list(r->cpuset_mems, &h->mems, h->mems_text, prefix, "cpuset_mems", "memory node",
                   e) < 0 ||
        check_memory(r, h, prefix, e) < 0 || check_unified(r, h, prefix, e) < 0)
        return -1;
    for (size_t i = 0; i < r->n_hugepage_limits; i++)
        if (check_hugepage(r, i, h, prefix, e) < 0)
            return -1;
    if (r->oom_score_adj < SL_CG_OOM_MIN || r->oom_score_adj > SL_CG_OOM_MAX)
        return fail(e, INVALID, prefix, "oom_score_adj", "%" PRId64 ": must be %d..%d",
                    r->oom_score_adj, SL_CG_OOM_MIN, SL_CG_OOM_MAX);
    if (r->oom_score_adj < h->oom_floor)
        r->oom_score_adj = h->oom_floor;
    return 0;
}

/* ---- the OCI form ---- */

static json_t *oci_cpu(const sl_res *r)
{
    json_t *cpu = json_object();
    if (r->cpu_shares)
        json_object_set_new(cpu, "shares", json_integer(r->cpu_shares));
    if (r->cpu_quota)
        json_object_set_new(cpu, "quota", json_integer(r->cpu_quota));
    if (r->cpu_period)
        json_object_set_new(cpu, "period", json_integer(r->cpu_period));
    if (set(r->cpuset_cpus))
        json_object_set_new(cpu, "cpus", json_string(r->cpuset_cpus));
    if (set(r->cpuset_mems))
        json_object_set_new(cpu, "mems", json_string(r->cpuset_mems));
    return cpu;
}

static void set_nonempty(json_t *o, const char *key, json_t *v)
{
    if (v && json_object_size(v) + json_array_size(v) > 0)
        json_object_set_new(o, key, v);
    else
        json_decref(v);
}

json_t *sl_res_oci(const sl_res *r, const sl_cg_host *h)
{
    json_t *o = json_object();
    json_t *mem = json_object();
    if (!o || !mem) {
        json_decref(o);
        json_decref(mem);
        return NULL;
    }
    if (r->memory_limit_in_bytes)
        json_object_set_new(mem, "limit", json_integer(r->memory_limit_in_bytes));
    if (h->memsw && r->memory_swap_limit_in_bytes)
        json_object_set_new(mem, "swap", json_integer(r->memory_swap_limit_in_bytes));
    set_nonempty(o, "memory", mem);
    set_nonempty(o, "cpu", oci_cpu(r));
    json_t *hp = json_array();
    for (size_t i = 0; h->hugetlb && i < r->n_hugepage_limits; i++)
        json_array_append_new(hp,
                              json_pack("{s:s, s:I}", "pageSize", r->hugepage_limits[i].page_size,
                                        "limit", (json_int_t)r->hugepage_limits[i].limit));
    set_nonempty(o, "hugepageLimits", hp);
    json_t *un = json_object();
    for (size_t i = 0; i < r->n_unified; i++)
        json_object_set_new(un, r->unified[i].key, json_string(r->unified[i].value));
    set_nonempty(o, "unified", un);
    return o;
}

/* ---- update merge ---- */

static int merge_hugepages(sl_res *cur, const sl_res *upd, const char *px, sl_error *e)
{
    for (size_t i = 0; i < upd->n_hugepage_limits; i++) {
        const sl_res_hugepage *u = &upd->hugepage_limits[i];
        size_t k = 0;
        while (k < cur->n_hugepage_limits &&
               strcmp(cur->hugepage_limits[k].page_size, u->page_size ? u->page_size : ""))
            k++;
        if (k == SL_RES_MAX_HUGEPAGES)
            return fail(e, INVALID, px, "hugepage_limits", "more than %d page sizes",
                        SL_RES_MAX_HUGEPAGES);
        cur->hugepage_limits[k] = *u;
        if (k == cur->n_hugepage_limits)
            cur->n_hugepage_limits++;
    }
    return 0;
}

static int merge_unified(sl_res *cur, const sl_res *upd, const char *px, sl_error *e)
{
    for (size_t i = 0; i < upd->n_unified; i++) {
        const sl_res_kv *u = &upd->unified[i];
        size_t k = 0;
        while (k < cur->n_unified && strcmp(cur->unified[k].key, u->key ? u->key : ""))
            k++;
        if (k == SL_RES_MAX_UNIFIED)
            return fail(e, INVALID, px, "unified", "more than %d entries", SL_RES_MAX_UNIFIED);
        cur->unified[k] = *u;
        if (k == cur->n_unified)
            cur->n_unified++;
    }
    return 0;
}

int sl_res_merge(sl_res *cur, const sl_res *upd, const char *prefix, sl_error *e)
{
    if (upd->cpu_period)
        cur->cpu_period = upd->cpu_period;
    if (upd->cpu_quota)
        cur->cpu_quota = upd->cpu_quota;
    if (upd->cpu_shares)
        cur->cpu_shares = upd->cpu_shares;
    if (upd->memory_limit_in_bytes) {
        cur->memory_limit_in_bytes = upd->memory_limit_in_bytes;
        cur->memory_swap_limit_in_bytes = upd->memory_swap_limit_in_bytes;
    } else if (upd->memory_swap_limit_in_bytes) {
        cur->memory_swap_limit_in_bytes = upd->memory_swap_limit_in_bytes;
    }
    if (upd->oom_score_adj)
        cur->oom_score_adj = upd->oom_score_adj;
    if (set(upd->cpuset_cpus))
        cur->cpuset_cpus = upd->cpuset_cpus;
    if (set(upd->cpuset_mems))
        cur->cpuset_mems = upd->cpuset_mems;
    return merge_hugepages(cur, upd, prefix, e) < 0 || merge_unified(cur, upd, prefix, e) < 0 ? -1
                                                                                              : 0;
}

/* ---- the record form ---- */

json_t *sl_res_to_json(const sl_res *r)
{
    json_t *hp = json_array();
    json_t *un = json_object();
    for (size_t i = 0; hp && i < r->n_hugepage_limits; i++)
        json_array_append_new(hp,
                              json_pack("{s:s, s:I}", "page_size", r->hugepage_limits[i].page_size,
                                        "limit", (json_int_t)r->hugepage_limits[i].limit));
    for (size_t i = 0; un && i < r->n_unified; i++)
        json_object_set_new(un, r->unified[i].key, json_string(r->unified[i].value));
    return json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:o*, s:o*}", "cpu_period",
        (json_int_t)r->cpu_period, "cpu_quota", (json_int_t)r->cpu_quota, "cpu_shares",
        (json_int_t)r->cpu_shares, "memory_limit_in_bytes", (json_int_t)r->memory_limit_in_bytes,
        "memory_swap_limit_in_bytes", (json_int_t)r->memory_swap_limit_in_bytes, "oom_score_adj",
        (json_int_t)r->oom_score_adj, "cpuset_cpus", r->cpuset_cpus ? r->cpuset_cpus : "",
        "cpuset_mems", r->cpuset_mems ? r->cpuset_mems : "", "hugepage_limits", hp, "unified", un);
}

static int64_t int_at(const json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

void sl_res_from_json(const json_t *j, sl_res *r)
{
    memset(r, 0, sizeof(*r));
    if (!json_is_object(j))
        return;
    r->cpu_period = int_at(j, "cpu_period");
    r->cpu_quota = int_at(j, "cpu_quota");
    r->cpu_shares = int_at(j, "cpu_shares");
    r->memory_limit_in_bytes = int_at(j, "memory_limit_in_bytes");
    r->memory_swap_limit_in_bytes = int_at(j, "memory_swap_limit_in_bytes");
    r->oom_score_adj = int_at(j, "oom_score_adj");
    r->cpuset_cpus = json_string_value(json_object_get(j, "cpuset_cpus"));
    r->cpuset_mems = json_string_value(json_object_get(j, "cpuset_mems"));
    const json_t *hp = json_object_get(j, "hugepage_limits");
    for (size_t i = 0; i < json_array_size(hp) && i < SL_RES_MAX_HUGEPAGES; i++) {
        const json_t *it = json_array_get(hp, i);
        const char *ps = json_string_value(json_object_get(it, "page_size"));
        if (!ps)
            continue;
        r->hugepage_limits[r->n_hugepage_limits++] =
            (sl_res_hugepage){ps, (uint64_t)int_at(it, "limit")};
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(j, "unified"), key, v)
    {
        if (r->n_unified < SL_RES_MAX_UNIFIED && json_is_string(v))
            r->unified[r->n_unified++] = (sl_res_kv){key, json_string_value(v)};
    }
}
