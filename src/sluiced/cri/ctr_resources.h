/* A container's CRI LinuxContainerResources through its life: checked and
 * resolved at CreateContainer (the OCI linux.resources and oomScoreAdj,
 * and the record kept with the container), merged at
 * UpdateContainerResources, reported by ContainerStatus.resources. The
 * host is probed on each call, so a cpu brought online later counts. */
#ifndef SL_CTR_RESOURCES_H
#define SL_CTR_RESOURCES_H

#include <jansson.h>

#include "container/oci_resources.h"
#include "grpc/api.pb-c.h"
#include "sys_error.h"

/* What a container gets: the record form (see sl_res_to_json), the OCI
 * linux.resources members, and process.oomScoreAdj. */
typedef struct sl_ctr_res {
    json_t *rec;
    json_t *oci;
    int oom_score_adj;
} sl_ctr_res;

void sl_ctr_res_fini(sl_ctr_res *r);

/* Fills r from c (strings borrowed from c; a NULL c is the empty set).
 * Returns 0, or -1 (*e, INVALID_ARGUMENT naming "<prefix>.<field>") when
 * a list is longer than sluiced keeps. */
int sl_cri_res_in(const Runtime__V1__LinuxContainerResources *c, const char *prefix, sl_res *r,
                  sl_error *e);

/* CreateContainer: config.linux.resources checked against the host.
 * Returns 0 with *out, or -1 (*e with the gRPC code). */
int sl_cri_res_create(const Runtime__V1__ContainerConfig *c, sl_ctr_res *out, sl_error *e);

/* UpdateContainerResources: cur (the container's record form, may be
 * NULL) with upd merged in (field names "linux.<field>"). Returns 0 with
 * *out, or -1 (*e with the gRPC code). */
int sl_cri_res_update(const json_t *cur, const Runtime__V1__LinuxContainerResources *upd,
                      sl_ctr_res *out, sl_error *e);

/* Checks pod-level resources (linux.resources, linux.overhead) the same
 * way; they are informational (see docs/compatibility.md). 0 or -1 (*e). */
int sl_cri_res_check_only(const Runtime__V1__LinuxContainerResources *c, const char *prefix,
                          sl_error *e);

/* ContainerStatus.resources from the record form (strings borrowed from
 * rec, which must outlive the reply). */
typedef struct sl_cri_res_report {
    Runtime__V1__ContainerResources res;
    Runtime__V1__LinuxContainerResources linux;
    Runtime__V1__HugepageLimit hp[SL_RES_MAX_HUGEPAGES];
    Runtime__V1__HugepageLimit *hpp[SL_RES_MAX_HUGEPAGES];
    Runtime__V1__LinuxContainerResources__UnifiedEntry un[SL_RES_MAX_UNIFIED];
    Runtime__V1__LinuxContainerResources__UnifiedEntry *unp[SL_RES_MAX_UNIFIED];
} sl_cri_res_report;

void sl_cri_res_status(const json_t *rec, sl_cri_res_report *st);

#endif
