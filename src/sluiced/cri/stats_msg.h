/* CRI stats messages built from the samples of a stats job (cri/stats.h).
 * Every message of one answer lives in one sl_stats_msgs, freed after the
 * reply; strings and metadata are borrowed from the model objects. */
#ifndef SL_CRI_STATS_MSG_H
#define SL_CRI_STATS_MSG_H

#include <stddef.h>

#include "cri/stats.h"
#include "grpc/api.pb-c.h"

typedef struct sl_stats_msgs sl_stats_msgs;

/* Room for n samples. NULL on ENOMEM. */
sl_stats_msgs *sl_stats_msgs_new(size_t n);
void sl_stats_msgs_free(sl_stats_msgs *m);

/* The ContainerStats of sample i (a container), for c. Its CPU rate comes
 * from (and updates) s. NULL on ENOMEM. */
Runtime__V1__ContainerStats *sl_stats_msg_ctr(sl_stats_msgs *m, size_t i, sl_stats *s,
                                              const sl_sample *v, const sl_ctr *c);
/* The PodSandboxStats of sample i (a pod), for p, with the given container
 * stats (borrowed; nprocs_ctrs is their process count, used when the pod
 * has no cgroup). NULL on ENOMEM. */
Runtime__V1__PodSandboxStats *sl_stats_msg_pod(sl_stats_msgs *m, size_t i, sl_stats *s,
                                               const sl_sample *v, const sl_pod *p,
                                               Runtime__V1__ContainerStats **ctrs, size_t nctrs,
                                               uint64_t nprocs_ctrs);

#endif
