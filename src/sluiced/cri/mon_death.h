/* A pod monitor that dies (SIGKILL, a crash) takes the reader of its
 * containers' output with it; their reaper is its parent, sluice-reaper,
 * which outlives it and records each status it reaps in
 * <run-dir>/exits/<pid>. sluiced watches each monitor's process through a
 * pidfd, so it knows within a loop iteration; it then reports the truth:
 * the pod is not ready, a container whose process is verified alive (runc's
 * record of its init: pid and start time) stays running and is watched
 * until it exits, and then has the exit code the reaper recorded (255 when
 * there is no record: a monitor started without a reaper). Stop and remove
 * of such containers kill them with the OCI runtime directly, unless a new
 * monitor adopted them (mon_adopt.h). */
#ifndef SL_CRI_MON_DEATH_H
#define SL_CRI_MON_DEATH_H

#include "cri/rt.h"

/* Exit code of a container whose monitor died before it when no reaper
 * recorded its status (unknown). */
#define SL_MON_DEATH_EXIT_CODE 255
/* Exit code of one sluiced killed after its monitor died (SIGKILL). */
#define SL_MON_DEATH_KILLED_CODE 137
/* The reaper's records (sluice-mon's MON_EXITS_DIR), and how long one is
 * awaited after the process ended: it writes it once it reaped it. */
#define SL_MON_EXITS_DIR "exits"
#define SL_MON_EXIT_RECORD_WAIT_MS 2000
#define SL_MON_EXIT_RECORD_STEP_MS 20

/* Starts watching p's monitor (its pid from the pod record) once it is
 * connected; a monitor already gone is handled at once. */
void sl_mon_watch_pod(sl_rt *rt, sl_pod *p);
/* For a pod whose monitor cannot be reached (at start): handles it as dead
 * when its process is gone; a pod recorded as such is handled again (its
 * containers may still run). */
void sl_mon_check_gone(sl_rt *rt, sl_pod *p);
/* Stops every watch (shutdown), or those of one pod (its monitor is being
 * shut down on purpose). */
void sl_mon_watch_close_all(sl_rt *rt);
void sl_mon_unwatch(sl_rt *rt, const char *pod_id);

/* c's init as runc recorded it, verified alive (same start time, not a
 * zombie): its pid and start time in clock ticks. */
bool sl_mon_ctr_init(const sl_rt *rt, const sl_ctr *c, pid_t *pid, unsigned long long *start);
/* Stops watching c's init (a new monitor adopted it). */
void sl_mon_unwatch_ctr(sl_rt *rt, const sl_ctr *c);
/* A running container of a pod whose monitor died is watched while its
 * init lives, else reported exited (what mon_died does for each). */
void sl_mon_reconcile_ctr(sl_rt *rt, sl_ctr *c);

typedef void (*sl_mon_kill_fn)(void *arg);
/* Kills and deletes container c of a pod whose monitor died (`runtime
 * delete --force`, off the loop), records it exited (137) when it ran, then
 * calls done. Returns 0, or -1 when nothing was started (done not called). */
int sl_mon_kill_orphan(sl_rt *rt, sl_pod *p, sl_ctr *c, sl_mon_kill_fn done, void *arg);

#endif
