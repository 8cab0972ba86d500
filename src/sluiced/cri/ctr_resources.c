#include "cri/ctr_resources.h"

#include <string.h>

#include "grpc/grpc_status.h"

void sl_ctr_res_fini(sl_ctr_res *r)
{
    json_decref(r->rec);
    json_decref(r->oci);
    r->rec = r->oci = NULL;
}

int sl_cri_res_in(const Runtime__V1__LinuxContainerResources *c, const char *prefix, sl_res *r,
                  sl_error *e)
{
    memset(r, 0, sizeof(*r));
    if (!c)
        return 0;
    if (c->n_hugepage_limits > SL_RES_MAX_HUGEPAGES)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s.hugepage_limits: %zu entries, at most %d", prefix,
                             c->n_hugepage_limits, SL_RES_MAX_HUGEPAGES);
    if (c->n_unified > SL_RES_MAX_UNIFIED)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "%s.unified: %zu entries, at most %d",
                             prefix, c->n_unified, SL_RES_MAX_UNIFIED);
    r->cpu_period = c->cpu_period;
    r->cpu_quota = c->cpu_quota;
    r->cpu_shares = c->cpu_shares;
    r->memory_limit_in_bytes = c->memory_limit_in_bytes;
    r->memory_swap_limit_in_bytes = c->memory_swap_limit_in_bytes;
    r->oom_score_adj = c->oom_score_adj;
    r->cpuset_cpus = c->cpuset_cpus;
    r->cpuset_mems = c->cpuset_mems;
    for (size_t i = 0; i < c->n_hugepage_limits; i++)
        r->hugepage_limits[r->n_hugepage_limits++] =
            (sl_res_hugepage){c->hugepage_limits[i]->page_size, c->hugepage_limits[i]->limit};
    for (size_t i = 0; i < c->n_unified; i++)
        r->unified[r->n_unified++] = (sl_res_kv){c->unified[i]->key, c->unified[i]->value};
    return 0;
}

/* Checks r and fills out with its three forms. */
static int resolve(sl_res *r, const char *prefix, sl_ctr_res *out, sl_error *e)
{
    sl_cg_host h;
    memset(out, 0, sizeof(*out));
    if (sl_cg_probe(&h, e) < 0) {
        e->code = SL_GRPC_INTERNAL;
        return sl_error_wrap(e, "cannot read the host's cgroup setup");
    }
    if (sl_res_check(r, &h, prefix, e) < 0)
        return -1;
    out->rec = sl_res_to_json(r);
    out->oci = sl_res_oci(r, &h);
    out->oom_score_adj = (int)r->oom_score_adj;
    if (!out->rec || !out->oci) {
        sl_ctr_res_fini(out);
        return sl_error_code(e, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    }
    return 0;
}

int sl_cri_res_create(const Runtime__V1__ContainerConfig *c, sl_ctr_res *out, sl_error *e)
{
    sl_res r;
    const char *prefix = "linux.resources";
    if (sl_cri_res_in(c->linux ? c->linux->resources : NULL, prefix, &r, e) < 0)
        return -1;
    return resolve(&r, prefix, out, e);
}

int sl_cri_res_update(const json_t *cur, const Runtime__V1__LinuxContainerResources *upd,
                      sl_ctr_res *out, sl_error *e)
{
    sl_res r, u;
    const char *prefix = "linux";
    sl_res_from_json(cur, &r);
    if (sl_cri_res_in(upd, prefix, &u, e) < 0 || sl_res_merge(&r, &u, prefix, e) < 0)
        return -1;
    return resolve(&r, prefix, out, e);
}

int sl_cri_res_check_only(const Runtime__V1__LinuxContainerResources *c, const char *prefix,
                          sl_error *e)
{
    sl_res r;
    sl_ctr_res out;
    if (!c)
        return 0;
    if (sl_cri_res_in(c, prefix, &r, e) < 0 || resolve(&r, prefix, &out, e) < 0)
        return -1;
    sl_ctr_res_fini(&out);
    return 0;
}

void sl_cri_res_status(const json_t *rec, sl_cri_res_report *st)
{
    sl_res r;
    sl_res_from_json(rec, &r);
    runtime__v1__container_resources__init(&st->res);
    runtime__v1__linux_container_resources__init(&st->linux);
    st->res.linux = &st->linux;
    Runtime__V1__LinuxContainerResources *l = &st->linux;
    l->cpu_period = r.cpu_period;
    l->cpu_quota = r.cpu_quota;
    l->cpu_shares = r.cpu_shares;
    l->memory_limit_in_bytes = r.memory_limit_in_bytes;
    l->memory_swap_limit_in_bytes = r.memory_swap_limit_in_bytes;
    l->oom_score_adj = r.oom_score_adj;
    l->cpuset_cpus = (char *)(r.cpuset_cpus ? r.cpuset_cpus : "");
    l->cpuset_mems = (char *)(r.cpuset_mems ? r.cpuset_mems : "");
    for (size_t i = 0; i < r.n_hugepage_limits; i++) {
        runtime__v1__hugepage_limit__init(&st->hp[i]);
        st->hp[i].page_size = (char *)r.hugepage_limits[i].page_size;
        st->hp[i].limit = r.hugepage_limits[i].limit;
        st->hpp[i] = &st->hp[i];
    }
    l->n_hugepage_limits = r.n_hugepage_limits;
    l->hugepage_limits = st->hpp;
    for (size_t i = 0; i < r.n_unified; i++) {
        runtime__v1__linux_container_resources__unified_entry__init(&st->un[i]);
        st->un[i].key = (char *)r.unified[i].key;
        st->un[i].value = (char *)r.unified[i].value;
        st->unp[i] = &st->un[i];
    }
    l->n_unified = r.n_unified;
    l->unified = st->unp;
}
