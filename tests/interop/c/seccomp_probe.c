/* Calls each system call the RuntimeDefault seccomp profiles block, with
 * arguments the kernel would reject with a distinctive error (EFAULT,
 * EINVAL, EBADF, ...) when the call gets through, and prints
 * "name errno-name" per call: EPERM then means the filter (or a missing
 * capability) stopped it. Built static by security.test.mjs and run inside
 * containers; it changes nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct probe {
    const char *name;
    long nr;
    long a[6];
};

static const struct probe probes[] = {
    {"keyctl", SYS_keyctl, {-1}},                       /* bad operation: EOPNOTSUPP */
    {"add_key", SYS_add_key, {0}},                      /* NULL type: EFAULT */
    {"request_key", SYS_request_key, {0}},              /* NULL type: EFAULT */
    {"mount", SYS_mount, {0}},                          /* NULL target: EFAULT */
    {"umount2", SYS_umount2, {0, 0x7fff0000}},          /* bad flags: EINVAL */
    {"unshare", SYS_unshare, {0x1000000000L}},          /* bad flag: EINVAL */
    {"setns", SYS_setns, {-1}},                         /* bad fd: EBADF */
    {"ptrace", SYS_ptrace, {12, 0x3fffffff}},           /* no such pid: ESRCH */
    {"kexec_load", SYS_kexec_load, {0}},                /* CAP_SYS_BOOT first */
    {"bpf", SYS_bpf, {-1}},                             /* capability or EINVAL */
    {"perf_event_open", SYS_perf_event_open, {0}},      /* NULL attr: EFAULT */
    {"open_by_handle_at", SYS_open_by_handle_at, {-1}}, /* CAP_DAC_READ_SEARCH first */
    {"reboot", SYS_reboot, {0}},                        /* CAP_SYS_BOOT first */
    {"swapon", SYS_swapon, {0}},                        /* CAP_SYS_ADMIN first */
    {"init_module", SYS_init_module, {0}},              /* CAP_SYS_MODULE first */
    {"finit_module", SYS_finit_module, {-1}},           /* CAP_SYS_MODULE first */
    {"delete_module", SYS_delete_module, {0}},          /* CAP_SYS_MODULE first */
    {"getpid", SYS_getpid, {0}},                        /* allowed everywhere: OK */
};

int main(void)
{
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        const struct probe *p = &probes[i];
        errno = 0;
        long r = syscall(p->nr, p->a[0], p->a[1], p->a[2], p->a[3], p->a[4], p->a[5]);
        printf("%s %s\n", p->name, r >= 0 ? "OK" : strerrorname_np(errno));
    }
    return 0;
}
