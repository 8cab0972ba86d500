/* The runtime state of sluiced behind the CRI handlers: pods, containers,
 * images, pod monitors, and the streaming sessions running through them. */
#ifndef SL_CRI_RT_H
#define SL_CRI_RT_H

#include <stdbool.h>
#include <uv.h>

#include "config/config.h"
#include "cri/ctr_mounts.h"
#include "cri/events.h"
#include "cri/model.h"
#include "cri/sess_stats.h"
#include "image/image_store.h"
#include "sluice/runtime.h"
#include "sys_error.h"

typedef struct sl_stream_sess sl_stream_sess; /* stream_runtime.c */
struct sl_pidwatch;                           /* mon_death.c */
typedef struct sl_net_release sl_net_release; /* pod_net.c */
typedef struct sl_imgq sl_imgq;               /* image_jobs.c */

typedef struct sl_rt {
    uv_loop_t *loop;
    const sl_config *cfg;
    sl_model model;
    sl_image_store *images;
    sl_imgq *imgq;            /* imports and deletions off the loop */
    char *mon_path;           /* the sluice-mon executable */
    char *pods_run_dir;       /* <run-dir>/pods */
    sl_runtime stream_rt;     /* the libsluice runtime backend */
    sl_stream_sess *sessions; /* live exec/attach sessions */
    bool detached;            /* shutting down: no new monitor connections */
    sl_events events;         /* GetContainerEvents subscribers */
    /* monitors, and containers whose monitor died */
    struct sl_pidwatch *watches;
    /* CNI DELs in flight (pod_net.c) */
    sl_net_release *net_releases;
    /* what mounts can do (`runc features`, probed at start) */
    sl_mount_probe mount_probe;
    /* CRI log bytes and records the monitors reported dropped since this
     * sluiced started (/metrics) */
    uint64_t log_dropped_bytes, log_dropped_records;
    /* streaming sessions counted for /metrics (sess_stats.h) */
    sl_sess_stats sess_stats;
} sl_rt;

/* Opens the image store, loads pods and containers, reconnects to the pod
 * monitors that still run. Returns 0 or -1 (*e). */
int sl_rt_open(sl_rt *rt, uv_loop_t *loop, const sl_config *cfg, sl_error *e);
void sl_rt_close(sl_rt *rt);
/* Queues the imports due at start, once the CRI socket is up: the
 * tarballs of the import directory that are new or changed, and the
 * --import file unless imported before (fatal(arg, e) when it fails). */
void sl_rt_start_imports(sl_rt *rt, void (*fatal)(void *arg, const sl_error *e), void *arg);
/* Ends the event subscriptions (UNAVAILABLE), cancels the running image
 * import and closes the connections to the pod monitors (they and their
 * containers keep running), for shutdown. */
void sl_rt_detach(sl_rt *rt);

/* The pod's monitor connection, reconnecting once if it was lost; NULL
 * with *e when the monitor is gone. */
sl_monc *sl_rt_pod_mon(sl_rt *rt, sl_pod *p, sl_error *e);
/* The pod's run directory (<run-dir>/pods/<id>), malloc'd. */
char *sl_rt_pod_run_dir(const sl_rt *rt, const char *pod_id);

/* Events from a pod monitor (exited, exec_exited, attach_ended). */
void sl_rt_mon_event(void *pod, const json_t *event);

/* stream_runtime.c: the libsluice backend and its event hooks. */
void sl_rt_stream_init(sl_rt *rt);
void sl_rt_stream_event(sl_rt *rt, sl_pod *pod, const json_t *event);

#endif
