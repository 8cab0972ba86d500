/* Pods whose start was cut: sluiced ended (SIGKILL, a crash, a power cut
 * of the daemon alone) while a RunPodSandbox was under way, after the run
 * directory existed and before the pod was recorded. Nobody will ever
 * name such a pod — the kubelet got no id and asks again — so what its
 * start made would stay for good: the pinned namespaces, the CNI
 * allocation (an address of the node's range), the pod monitor and its
 * reaper. RunPodSandbox notes in the run directory what it needs undone
 * (the request, then the CNI result); the next sluiced undoes it at start. */
#ifndef SL_CRI_POD_SWEEP_H
#define SL_CRI_POD_SWEEP_H

#include "cri/rt.h"

/* Files in <run-dir>/pods/<id> during a pod's start. */
#define SL_POD_START_CONFIG "start-config.pb" /* the RunPodSandbox config, packed */
#define SL_POD_START_CNI "start-cni.json"     /* the CNI ADD result, once there */

/* Records the request's config in run_dir before the network is set up
 * (any thread). Returns 0 or -1 (*e). */
int sl_pod_start_note_config(const char *run_dir, const Runtime__V1__PodSandboxConfig *c,
                             sl_error *e);
/* Records the CNI ADD result in run_dir. Returns 0 or -1 (*e). */
int sl_pod_start_note_cni(const char *run_dir, const char *result, sl_error *e);

/* Undoes every pod start that was cut: each directory of rt->pods_run_dir
 * whose pod the model does not know. Its monitor (verified by its command
 * line) and any CNI plugin still running for it are killed, CNI DEL runs
 * (on rt->loop, with the recorded result when there is one), then the
 * namespaces are released and the directory removed; each pod is logged.
 * Call once, after the model is loaded and before calls are served. */
void sl_pod_sweep_cut_starts(sl_rt *rt);

#endif
