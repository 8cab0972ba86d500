/* Seccomp profiles for the OCI spec (linux.seccomp, which runc compiles
 * and loads): a Localhost profile file in the OCI LinuxSeccomp JSON
 * format, and sluice's RuntimeDefault profile (data/seccomp/
 * runtime-default.json, compiled in; docs/seccomp.md). Every profile is
 * compiled here with libseccomp exactly as runc will compile it, so a bad
 * profile fails at CreateContainer with a message naming the bad part,
 * not at runc start. */
#ifndef SL_SECCOMP_PROFILE_H
#define SL_SECCOMP_PROFILE_H

#include <jansson.h>
#include <stdint.h>

#include "seccomp_filter.h"
#include "sys_error.h"

/* Bytes of one profile file. */
#define SL_SECCOMP_MAX_PROFILE_BYTES (1u << 20)

/* Parses an OCI LinuxSeccomp JSON text and checks it: known keys only,
 * known actions, operators and architectures, system call names libseccomp
 * knows, argument indexes 0..5, and a filter libseccomp can build.
 * SCMP_ACT_NOTIFY, listenerPath and flags are refused (runc 1.1 here
 * cannot use them through the CRI). Returns the object for linux.seccomp
 * (new reference) or NULL with *e saying what is wrong ("syscalls[2].
 * names[0]: unknown system call \"foo\""). */
json_t *sl_seccomp_parse(const char *text, sl_error *e);

/* Reads path (at most SL_SECCOMP_MAX_PROFILE_BYTES) and parses it.
 * Errors say `cannot read "<path>": <reason>` or `"<path>": <problem>`. */
json_t *sl_seccomp_load(const char *path, sl_error *e);

/* The RuntimeDefault profile for a container whose bounding set is
 * bounding (bit n = capability n): the rules whose capability and
 * architecture conditions hold, with the native architecture and its
 * 32-bit companions. Returns a new reference or NULL with *e. */
json_t *sl_seccomp_runtime_default(uint64_t bounding, sl_error *e);

/* Same from a profile text in the RuntimeDefault data format (for tests
 * and for the compiled-in data). */
json_t *sl_seccomp_resolve_text(const char *text, uint64_t bounding, sl_error *e);

#endif
