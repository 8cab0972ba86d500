/* An OCI LinuxSeccomp profile (linux.seccomp of a config.json) compiled
 * with libseccomp the way runc 1.1 compiles it: sluiced checks every
 * profile with it at CreateContainer, and sluice-mon's native exec path
 * loads the filter it builds (mon_nexec.c). */
#ifndef SL_SECCOMP_FILTER_H
#define SL_SECCOMP_FILTER_H

#include <jansson.h>
#include <seccomp.h>

#include "sys_error.h"

/* Rules of one profile, and system call names of one rule. */
#define SL_SECCOMP_MAX_RULES 4096u
#define SL_SECCOMP_MAX_NAMES 4096u

/* Modes: strict for a profile from a user; data for the RuntimeDefault
 * data and what it resolves to, which may carry our condition keys and
 * name calls this libseccomp does not know yet (runc skips those too). */
enum { SL_SECCOMP_STRICT = 0, SL_SECCOMP_DATA = 1 };

/* The keys only the RuntimeDefault data may use (NULL-terminated). */
extern const char *const sl_seccomp_data_keys[];

/* The filter of profile p: known keys only, known actions, operators and
 * architectures, system call names libseccomp knows (data mode: unknown
 * ones skipped), argument indexes 0..5. SCMP_ACT_NOTIFY, listenerPath and
 * flags are refused. NULL with *e naming the bad part ("syscalls[2].
 * names[0]: unknown system call \"foo\""); else seccomp_release it. */
scmp_filter_ctx sl_seccomp_filter_build(const json_t *p, int mode, sl_error *e);

/* "SCMP_ARCH_X86_64" for the running kernel's architecture, or NULL. */
const char *sl_seccomp_native_arch(void);

#endif
