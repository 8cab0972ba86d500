/* Moving a process out of its starter's cgroup: sluice-mon leaves
 * sluiced's cgroup at start (--cgroup), so a service manager that stops
 * sluiced's cgroup (systemd's KillMode=control-group or mixed) leaves the
 * pod monitors and their containers alone. */
#ifndef SL_CGROUP_MOVE_H
#define SL_CGROUP_MOVE_H

#include <stddef.h>

#include "sys_error.h"

/* Hierarchies handled at once (v1 controllers, named ones, v2). */
#define SL_CG_MOVE_MAX_HIERARCHIES 32
/* Bytes of /proc/self/mountinfo read. */
#define SL_CG_MOVE_MOUNTINFO_MAX (4 * 1024 * 1024)

/* Moves the calling process into the cgroup path (absolute, as the
 * hierarchies are seen here) in every hierarchy /proc/self/cgroup lists:
 * each v1 one (controllers, and named ones such as name=systemd) and the
 * v2 one. Missing directories are created (0755); in a v1 cpuset
 * hierarchy a new level gets its parent's cpuset.cpus and cpuset.mems,
 * without which no task may join. A hierarchy that is not mounted here is
 * skipped. Returns how many hierarchies it joined, or -1 (*e naming the
 * hierarchy and the file). */
int sl_cg_move_self(const char *path, sl_error *e);

/* The text of a v1 line's controller list ("cpu,cpuacct") up to its
 * first ',' into out; "" for the v2 line. Pure, for tests. Returns 0 or
 * -1 when it does not fit. */
int sl_cg_first_controller(const char *list, size_t len, char *out, size_t cap);

#endif
