/* The runtime.v1 method table and the CRI context. */
#include "cri/service.h"

#include <string.h>

#define RT "/runtime.v1.RuntimeService/"
#define IMG "/runtime.v1.ImageService/"
/* A method served by handler h, request type r (protobuf-c lower name). */
#define M(svc, name, r, h)                                                                         \
    {                                                                                              \
        svc #name, &runtime__v1__##r##__descriptor, h                                              \
    }
/* A method of the upstream CRI without a handler yet: UNIMPLEMENTED. */
#define TODO(svc, name)                                                                            \
    {                                                                                              \
        svc #name, NULL, NULL                                                                      \
    }

static const sl_grpc_method methods[] = {
    M(RT, Version, version_request, sl_cri_version),
    M(RT, RunPodSandbox, run_pod_sandbox_request, NULL),
    M(RT, StopPodSandbox, stop_pod_sandbox_request, NULL),
    M(RT, RemovePodSandbox, remove_pod_sandbox_request, NULL),
    M(RT, PodSandboxStatus, pod_sandbox_status_request, NULL),
    M(RT, ListPodSandbox, list_pod_sandbox_request, NULL),
    M(RT, CreateContainer, create_container_request, NULL),
    M(RT, StartContainer, start_container_request, NULL),
    M(RT, StopContainer, stop_container_request, NULL),
    M(RT, RemoveContainer, remove_container_request, NULL),
    M(RT, ListContainers, list_containers_request, NULL),
    M(RT, ContainerStatus, container_status_request, NULL),
    TODO(RT, UpdateContainerResources),
    M(RT, ReopenContainerLog, reopen_container_log_request, NULL),
    M(RT, ExecSync, exec_sync_request, NULL),
    M(RT, Exec, exec_request, NULL),
    M(RT, Attach, attach_request, NULL),
    M(RT, PortForward, port_forward_request, NULL),
    TODO(RT, ContainerStats),
    TODO(RT, ListContainerStats),
    TODO(RT, PodSandboxStats),
    TODO(RT, ListPodSandboxStats),
    M(RT, UpdateRuntimeConfig, update_runtime_config_request, NULL),
    M(RT, Status, status_request, sl_cri_status),
    TODO(RT, CheckpointContainer),
    TODO(RT, GetContainerEvents), /* server streaming */
    TODO(RT, ListMetricDescriptors),
    TODO(RT, ListPodSandboxMetrics),
    TODO(RT, RuntimeConfig),
    M(IMG, ListImages, list_images_request, NULL),
    M(IMG, ImageStatus, image_status_request, NULL),
    M(IMG, PullImage, pull_image_request, NULL),
    M(IMG, RemoveImage, remove_image_request, NULL),
    M(IMG, ImageFsInfo, image_fs_info_request, NULL),
};

const sl_grpc_method *sl_cri_methods(size_t *n)
{
    *n = sizeof(methods) / sizeof(methods[0]);
    return methods;
}

int sl_cri_init(sl_cri *cri, uv_loop_t *loop, const sl_config *cfg, sl_error *e)
{
    (void)e;
    memset(cri, 0, sizeof(*cri));
    cri->loop = loop;
    cri->cfg = cfg;
    return 0;
}

void sl_cri_fini(sl_cri *cri)
{
    cri->stream = NULL;
}
