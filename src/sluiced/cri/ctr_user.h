/* The user a container's first process runs as: uid, gid and additional
 * groups from the CRI security context, the image's USER and the image's
 * /etc/passwd and /etc/group, resolved as containerd does. */
#ifndef SL_CTR_USER_H
#define SL_CTR_USER_H

#include <stddef.h>
#include <stdint.h>

#include "grpc/api.pb-c.h"
#include "sys_error.h"

/* Supplemental groups of one container (the kernel allows 65536). */
#define SL_CTR_MAX_GROUPS 1024
/* Bytes of the image's /etc/passwd and /etc/group that are read. */
#define SL_CTR_MAX_ETC_FILE (1u << 20)

typedef struct sl_ctr_user {
    uint32_t uid, gid;
    uint32_t *gids; /* additional groups, sorted, the primary gid among them */
    size_t ngids;
} sl_ctr_user;

/* Resolves the user of a container:
 * - run_as_username: looked up in <rootfs>/etc/passwd (a number is a uid);
 *   run_as_user: that uid; otherwise the image's USER ("uid", "name",
 *   "uid:gid", "name:group"); otherwise root;
 * - gid: run_as_group, else the group of the USER string, else the user's
 *   /etc/passwd group, else 0;
 * - groups (supplemental_groups_policy Merge, the default): the primary
 *   gid, the groups of /etc/group that list the user, and
 *   supplemental_groups; Strict: the primary gid and supplemental_groups.
 * sc may be NULL. Errors carry SL_GRPC_INVALID_ARGUMENT and name the field
 * ("linux.security_context.run_as_group: ..."). Returns 0 or -1 (*e). */
int sl_ctr_user_resolve(const Runtime__V1__LinuxContainerSecurityContext *sc,
                        const char *image_user, const char *rootfs, sl_ctr_user *out, sl_error *e);
void sl_ctr_user_fini(sl_ctr_user *u);

/* Checks an id the CRI gives as int64 (0..4294967294). */
int sl_ctr_id_check(const char *field, int64_t id, sl_error *e);

#endif
