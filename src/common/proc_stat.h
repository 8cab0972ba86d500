/* /proc/PID/stat, the one parser for sluiced and sluice-mon. */
#ifndef SL_PROC_STAT_H
#define SL_PROC_STAT_H

#include <sys/types.h>

/* The state letter (field 3) and the start time (field 22, clock ticks
 * after boot: with the pid, names one process for good) of pid; either
 * pointer may be NULL. Returns 0, or -1 when the process is gone or the
 * file does not parse. */
int sl_proc_stat(pid_t pid, char *state, unsigned long long *start);

#endif
