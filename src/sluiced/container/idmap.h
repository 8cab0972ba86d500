/* User namespaces and idmapped mounts for pods with their own user
 * namespace (CRI NamespaceMode POD with uids/gids): a user namespace made
 * with one uid and one gid mapping, idmapped clones of directories (an
 * image's layers under the container's overlay, volumes with mappings),
 * and whether the host can do it. */
#ifndef SL_IDMAP_H
#define SL_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys_error.h"

/* One mapping: container ids [container_id, container_id + length) are host
 * ids [host_id, host_id + length). */
typedef struct sl_idmap {
    uint32_t container_id, host_id, length;
} sl_idmap;

/* Writes uid and gid to /proc/PID/uid_map and gid_map (a process that has
 * just made its user namespace). Returns 0 or -1 (*e). */
int sl_idmap_write(pid_t pid, const sl_idmap *uid, const sl_idmap *gid, sl_error *e);

/* A new user namespace with these mappings, as an open fd (O_CLOEXEC), made
 * by a short-lived child. Returns the fd or -1 (*e). */
int sl_userns_open(const sl_idmap *uid, const sl_idmap *gid, sl_error *e);

/* Attaches at dst (an existing directory) a clone of the mount tree at src
 * (only src's own mount unless recursive) whose ids are shifted by the
 * user namespace userns_fd: a file the disk says is owned by id k shows as
 * owned by the host id that the namespace maps k to. Returns 0 or -1 (*e). */
int sl_idmap_mount(const char *src, const char *dst, int userns_fd, bool recursive, sl_error *e);

/* Whether idmapped mounts of directories on path's file system work here
 * (kernel, file system): true, or false with the reason in why. */
bool sl_idmap_supported(const char *path, char *why, size_t why_size);

#endif
