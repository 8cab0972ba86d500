/* A pod monitor that died is replaced by a new one (sluice-mon --adopt)
 * that takes over the containers still running: sluiced keeps duplicates
 * of every container's output fds (the monitor's `stdio` reply), so their
 * pipes never lose their last reader and what the containers write while
 * no monitor runs waits in them; the new monitor gets the fds back with
 * each container's init (`adopt`), appends to the same CRI logs and
 * serves the pod again. At most monitor-restart-max monitors are started
 * per pod and minute; beyond that the pod stays NOTREADY (mon_death.h). */
#ifndef SL_CRI_MON_ADOPT_H
#define SL_CRI_MON_ADOPT_H

#include <stdbool.h>
#include <stdint.h>

#include "cri/rt.h"

/* Asks the pod's monitor for duplicates of c's output fds, unless sluiced
 * holds them or asked already. */
void sl_mon_stdio_fetch(sl_rt *rt, sl_pod *p, sl_ctr *c);
/* The same for every container of p that is created or running (after
 * sluiced connected to its monitor). */
void sl_mon_stdio_fetch_pod(sl_rt *rt, sl_pod *p);
/* Closes sluiced's duplicates of c's output fds (it exited). */
void sl_mon_stdio_release(sl_ctr *c);

/* The restart limit: true (and counted) when fewer than max monitors were
 * started in the SL_MON_RESTART_WINDOW_MS that *window_ms (0: none yet)
 * began; a window that has passed starts again at now_ms. Pure. */
bool sl_mon_restart_take(uint64_t *window_ms, uint32_t *count, uint64_t now_ms, uint32_t max);
/* Whether p may get a new monitor now (monitor-restart-max per pod and
 * minute; counted as started). Logs when it may not. */
bool sl_mon_adopt_allowed(sl_rt *rt, sl_pod *p);
/* p's monitor died while the pod was ready: starts a monitor that adopts
 * its running containers. When that cannot start (now or later) it gives
 * up (below). */
void sl_mon_adopt_start(sl_rt *rt, sl_pod *p);
/* No monitor will adopt p's containers: sluiced lets go of their output
 * fds (a writer meets a pipe without reader, EPIPE, rather than one nobody
 * reads) and records the pod not ready. */
void sl_mon_adopt_give_up(sl_rt *rt, sl_pod *p);

#endif
