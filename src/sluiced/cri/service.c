/* The runtime.v1 method table and the CRI context. */
#include "cri/service.h"

#include <errno.h>
#include <stdio.h>
#include "cri/events.h"

#include <string.h>

#include "cri/stats.h"
#include "sl_log.h"

#define RT "/runtime.v1.RuntimeService/"
#define IMG "/runtime.v1.ImageService/"
/* A method served by handler h, request type r (protobuf-c lower name). */
#define M(svc, name, r, h)                                                                         \
    {                                                                                              \
        .path = svc #name, .request = &runtime__v1__##r##__descriptor, .handler = h                \
    }
/* A server-streaming method. */
#define MS(svc, name, r, h)                                                                        \
    {                                                                                              \
        .path = svc #name, .request = &runtime__v1__##r##__descriptor, .handler = h,               \
        .server_streaming = true                                                                   \
    }
/* A method of the upstream CRI without a handler yet: UNIMPLEMENTED. */
#define TODO(svc, name)                                                                            \
    {                                                                                              \
        .path = svc #name                                                                          \
    }

static const sl_grpc_method methods[] = {
    M(RT, Version, version_request, sl_cri_version),
    M(RT, RunPodSandbox, run_pod_sandbox_request, sl_cri_run_pod),
    M(RT, StopPodSandbox, stop_pod_sandbox_request, sl_cri_stop_pod),
    M(RT, RemovePodSandbox, remove_pod_sandbox_request, sl_cri_remove_pod),
    M(RT, PodSandboxStatus, pod_sandbox_status_request, sl_cri_pod_status),
    M(RT, ListPodSandbox, list_pod_sandbox_request, sl_cri_list_pods),
    M(RT, CreateContainer, create_container_request, sl_cri_create_container),
    M(RT, StartContainer, start_container_request, sl_cri_start_container),
    M(RT, StopContainer, stop_container_request, sl_cri_stop_container),
    M(RT, RemoveContainer, remove_container_request, sl_cri_remove_container),
    M(RT, ListContainers, list_containers_request, sl_cri_list_containers),
    M(RT, ContainerStatus, container_status_request, sl_cri_container_status),
    M(RT, UpdateContainerResources, update_container_resources_request,
      sl_cri_update_container_resources),
    M(RT, ReopenContainerLog, reopen_container_log_request, sl_cri_reopen_log),
    M(RT, ExecSync, exec_sync_request, sl_cri_exec_sync),
    M(RT, Exec, exec_request, sl_cri_exec),
    M(RT, Attach, attach_request, sl_cri_attach),
    M(RT, PortForward, port_forward_request, sl_cri_port_forward),
    M(RT, ContainerStats, container_stats_request, sl_cri_container_stats),
    M(RT, ListContainerStats, list_container_stats_request, sl_cri_list_container_stats),
    M(RT, PodSandboxStats, pod_sandbox_stats_request, sl_cri_pod_stats),
    M(RT, ListPodSandboxStats, list_pod_sandbox_stats_request, sl_cri_list_pod_stats),
    M(RT, UpdateRuntimeConfig, update_runtime_config_request, sl_cri_update_runtime_config),
    M(RT, Status, status_request, sl_cri_status),
    M(RT, CheckpointContainer, checkpoint_container_request, sl_cri_checkpoint_container),
    MS(RT, GetContainerEvents, get_events_request, sl_cri_container_events),
    M(RT, ListMetricDescriptors, list_metric_descriptors_request, sl_cri_list_metric_descriptors),
    M(RT, ListPodSandboxMetrics, list_pod_sandbox_metrics_request, sl_cri_list_pod_metrics),
    M(RT, RuntimeConfig, runtime_config_request, sl_cri_runtime_config),
    M(IMG, ListImages, list_images_request, sl_cri_list_images),
    M(IMG, ImageStatus, image_status_request, sl_cri_image_status),
    M(IMG, PullImage, pull_image_request, sl_cri_pull_image),
    M(IMG, RemoveImage, remove_image_request, sl_cri_remove_image),
    M(IMG, ImageFsInfo, image_fs_info_request, sl_cri_image_fs_info),
};

const sl_grpc_method *sl_cri_methods(size_t *n)
{
    *n = sizeof(methods) / sizeof(methods[0]);
    return methods;
}

int sl_cri_init(sl_cri *cri, uv_loop_t *loop, const sl_config *cfg, sl_error *e)
{
    memset(cri, 0, sizeof(*cri));
    cri->loop = loop;
    cri->cfg = cfg;
    if (sl_rt_open(&cri->rt, loop, cfg, e) < 0)
        return -1;
    cri->stats = sl_stats_new(loop, cfg, &cri->rt.model, SL_CG_ROOT);
    if (!cri->stats)
        return sl_error_set(e, ENOMEM, "stats");
    if (sl_cri_load_runtime_config(cri) < 0)
        sl_log(SL_LOG_WARN, "the recorded pod CIDR could not be read", NULL);
    return 0;
}

void sl_cri_fini(sl_cri *cri)
{
    cri->stream = NULL;
    sl_stats_free(cri->stats);
    cri->stats = NULL;
    sl_rt_close(&cri->rt);
}
