/* The CRI services of sluiced: the context every handler gets, the method
 * table of runtime.v1 RuntimeService and ImageService, and the handlers,
 * one file per area:
 *
 *   runtime_info.c        Version, Status
 *   runtime_pods.c        pod sandboxes
 *   runtime_containers.c  containers
 *   runtime_streaming.c   Exec, Attach, PortForward, ExecSync
 *   runtime_stats.c       container and pod stats (sampled by stats.c)
 *   runtime_metrics.c     ListMetricDescriptors, ListPodSandboxMetrics
 *   runtime_config.c      RuntimeConfig, UpdateRuntimeConfig, CheckpointContainer
 *   image_service.c       ImageService
 *   stream_runtime.c      sluiced_runtime(): the libsluice runtime backend
 *
 * Adding a method: write the handler (sl_grpc_handler signature; arg is the
 * sl_cri *), declare it below, and put it in the table in service.c. A
 * table entry without a handler answers UNIMPLEMENTED. */
#ifndef SL_CRI_SERVICE_H
#define SL_CRI_SERVICE_H

#include <stddef.h>
#include <uv.h>

#include "config/config.h"
#include "grpc/api.pb-c.h"
#include "grpc/grpc_call.h"
#include "sluice/runtime.h"
#include "sluice/server.h"
#include "sys_error.h"
#include "cri/rt.h"

/* VersionResponse fields. version is the CRI "API version" of the runtime,
 * as containerd and CRI-O report it. */
#define SL_CRI_VERSION "0.1.0"
#define SL_CRI_RUNTIME_NAME "sluice"
#define SL_CRI_API_VERSION "v1"

/* The longest pod CIDR kept (UpdateRuntimeConfig): two CIDRs. */
#define SL_CRI_POD_CIDR_MAX 128

/* Status condition texts when no CNI network config exists. */
#define SL_CRI_NETWORK_NOT_READY_REASON "NetworkPluginNotReady"

/* Everything the handlers share. Modules add their state here. */
typedef struct sl_cri {
    uv_loop_t *loop;
    const sl_config *cfg;
    sl_server *stream; /* streaming server: URLs for Exec/Attach/PortForward */
    sl_rt rt;          /* pods, containers, images, monitors */
    /* stats sampling (cri/stats.h) */
    struct sl_stats *stats;
    /* the pod CIDR from UpdateRuntimeConfig, "" until one is sent */
    char pod_cidr[SL_CRI_POD_CIDR_MAX + 1];
} sl_cri;

/* Sets up the context (cfg and loop are borrowed). The streaming server is
 * set by the caller once created. Returns 0 or -1 (*e). */
int sl_cri_init(sl_cri *cri, uv_loop_t *loop, const sl_config *cfg, sl_error *e);
void sl_cri_fini(sl_cri *cri);

/* The method table: every upstream runtime.v1 method, with its request
 * descriptor and handler where sluice has one. Static; *n gets the count. */
const sl_grpc_method *sl_cri_methods(size_t *n);

/* runtime_info.c */
void sl_cri_version(sl_grpc_call *call, void *cri);
void sl_cri_status(sl_grpc_call *call, void *cri);
/* True when dir holds a CNI network config (*.conf, *.conflist, *.json). */
bool sl_cri_cni_config_present(const char *dir);

/* runtime_pods.c, runtime_pods_query.c */
void sl_cri_run_pod(sl_grpc_call *call, void *cri);
void sl_cri_stop_pod(sl_grpc_call *call, void *cri);
void sl_cri_remove_pod(sl_grpc_call *call, void *cri);
void sl_cri_pod_status(sl_grpc_call *call, void *cri);
void sl_cri_list_pods(sl_grpc_call *call, void *cri);
/* runtime_containers.c, runtime_containers_query.c */
void sl_cri_create_container(sl_grpc_call *call, void *cri);
void sl_cri_start_container(sl_grpc_call *call, void *cri);
void sl_cri_stop_container(sl_grpc_call *call, void *cri);
void sl_cri_remove_container(sl_grpc_call *call, void *cri);
void sl_cri_list_containers(sl_grpc_call *call, void *cri);
void sl_cri_container_status(sl_grpc_call *call, void *cri);
void sl_cri_reopen_log(sl_grpc_call *call, void *cri);
/* runtime_update.c */
void sl_cri_update_container_resources(sl_grpc_call *call, void *cri);
/* runtime_streaming.c */
void sl_cri_exec_sync(sl_grpc_call *call, void *cri);
void sl_cri_exec(sl_grpc_call *call, void *cri);
void sl_cri_attach(sl_grpc_call *call, void *cri);
void sl_cri_port_forward(sl_grpc_call *call, void *cri);
/* runtime_stats.c */
void sl_cri_container_stats(sl_grpc_call *call, void *cri);
void sl_cri_list_container_stats(sl_grpc_call *call, void *cri);
void sl_cri_pod_stats(sl_grpc_call *call, void *cri);
void sl_cri_list_pod_stats(sl_grpc_call *call, void *cri);
/* runtime_metrics.c */
void sl_cri_list_metric_descriptors(sl_grpc_call *call, void *cri);
void sl_cri_list_pod_metrics(sl_grpc_call *call, void *cri);
/* runtime_config.c */
void sl_cri_runtime_config(sl_grpc_call *call, void *cri);
void sl_cri_update_runtime_config(sl_grpc_call *call, void *cri);
void sl_cri_checkpoint_container(sl_grpc_call *call, void *cri);
/* True for "" or one or two comma-separated CIDRs (IPv4 or IPv6). */
bool sl_cri_valid_pod_cidr(const char *s);
/* Reads the pod CIDR a previous run recorded. Returns 0 or -1. */
int sl_cri_load_runtime_config(sl_cri *cri);
/* image_service.c */
void sl_cri_list_images(sl_grpc_call *call, void *cri);
void sl_cri_image_status(sl_grpc_call *call, void *cri);
void sl_cri_pull_image(sl_grpc_call *call, void *cri);
void sl_cri_remove_image(sl_grpc_call *call, void *cri);
void sl_cri_image_fs_info(sl_grpc_call *call, void *cri);

/* The runtime backend of the streaming server (stream_runtime.c). */
const sl_runtime *sluiced_runtime(sl_cri *cri);

#endif
