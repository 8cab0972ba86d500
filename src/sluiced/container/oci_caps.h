/* Linux capability sets of a container, as the CRI asks for them and as
 * runc applies them: names with or without the CAP_ prefix, "ALL" in add
 * and drop, ambient capabilities, and never more than the daemon's own
 * bounding set (runc fails with EPERM at start otherwise). Pure set
 * arithmetic on 64-bit masks (bit n = capability n); no I/O except
 * sl_caps_read_bounding. */
#ifndef SL_OCI_CAPS_H
#define SL_OCI_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys_error.h"

/* Capabilities this build knows by name: 0 (CHOWN) .. 40 (CHECKPOINT_RESTORE). */
#define SL_CAP_COUNT 41

typedef struct sl_caps {
    uint64_t bounding, effective, permitted, inheritable, ambient;
} sl_caps;

/* What the CRI capability fields ask for. Names are as the kubelet passes
 * them ("NET_ADMIN", "CAP_NET_ADMIN", "net_admin", "ALL"). */
typedef struct sl_caps_request {
    const char *const *add;
    size_t n_add;
    const char *const *drop;
    size_t n_drop;
    const char *const *ambient;
    size_t n_ambient;
    bool privileged;
} sl_caps_request;

/* The 14 capabilities runc and the CRI runtimes grant by default. */
uint64_t sl_caps_default_mask(void);

/* Capability number of name (case-insensitive, optional CAP_ prefix), or
 * -1 when unknown. "ALL" is not a capability here. */
int sl_cap_from_name(const char *name);
/* "CAP_CHOWN" for 0; NULL outside 0..SL_CAP_COUNT-1. */
const char *sl_cap_name(int cap);

/* Computes the five sets the way containerd does (default set; add "ALL";
 * drop "ALL"; named adds; named drops; privileged: every capability the
 * daemon holds, add/drop ignored; inheritable left empty since
 * CVE-2022-24769), plus ambient: each ambient capability also goes into
 * bounding, permitted, effective and inheritable, as the kernel requires.
 * daemon_bounding limits "ALL" and privileged. Returns 0, or -1 with *e
 * naming the field ("add_capabilities", "drop_capabilities",
 * "add_ambient_capabilities") and the bad value: an unknown name, or a
 * capability outside daemon_bounding (EPERM). */
int sl_caps_compute(const sl_caps_request *req, uint64_t daemon_bounding, sl_caps *out,
                    sl_error *e);

/* Parses the CapBnd line of a /proc/<pid>/status text. Returns 0 or -1. */
int sl_caps_parse_status(const char *status_text, uint64_t *bounding);
/* The calling process's bounding set, from /proc/self/status. Returns 0 or
 * -1 (*e). */
int sl_caps_read_bounding(uint64_t *bounding, sl_error *e);

#endif
