/* Fields a request carries that this build of sluiced does not know.
 *
 * protobuf-c keeps a field it has no declaration for in the message's
 * unknown_fields and decodes the rest: a config from a newer kubelet would
 * then run with a setting silently dropped. Pod and container configs go
 * through this check, so such a field is refused by its number and path
 * instead. */
#ifndef SL_CRI_FIELDS_H
#define SL_CRI_FIELDS_H

#include <protobuf-c/protobuf-c.h>

#include "sys_error.h"

/* How deep configs nest (ContainerConfig.linux.security_context.seccomp is
 * 4); deeper messages are not walked and are refused. */
#define SL_CRI_FIELDS_MAX_DEPTH 16

/* Returns 0 when msg and every message inside it (repeated and map fields
 * too) has only declared fields. Otherwise -1 with *e set to
 * INVALID_ARGUMENT naming the first unknown field, e.g.
 * "config.linux.security_context: field 42 of runtime.v1.
 * LinuxContainerSecurityContext is not known to sluiced (CRI runtime.v1
 * as of 1.32); refusing rather than ignoring it". path names msg ("config"). */
int sl_cri_check_fields(const ProtobufCMessage *msg, const char *path, sl_error *e);

#endif
