#include "container/oci_caps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fsutil.h"

/* Index = capability number (linux/capability.h). */
static const char *const cap_names[SL_CAP_COUNT] = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
};

static const char *const default_caps[] = {
    "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",     "CAP_MKNOD",
    "CAP_NET_RAW", "CAP_SETGID",       "CAP_SETUID",           "CAP_SETFCAP",    "CAP_SETPCAP",
    "CAP_KILL",    "CAP_AUDIT_WRITE",  "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
};

#define BIT(n) ((uint64_t)1 << (n))
#define ALL_KNOWN ((BIT(SL_CAP_COUNT - 1) << 1) - 1)

int sl_cap_from_name(const char *name)
{
    const char *bare = strncasecmp(name, "CAP_", 4) ? name : name + 4;
    for (int i = 0; i < SL_CAP_COUNT; i++)
        if (!strcasecmp(bare, cap_names[i] + 4))
            return i;
    return -1;
}

const char *sl_cap_name(int cap)
{
    return cap >= 0 && cap < SL_CAP_COUNT ? cap_names[cap] : NULL;
}

uint64_t sl_caps_default_mask(void)
{
    uint64_t m = 0;
    for (size_t i = 0; i < sizeof(default_caps) / sizeof(default_caps[0]); i++)
        m |= BIT(sl_cap_from_name(default_caps[i]));
    return m;
}

static bool has_all(const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcasecmp(v[i], "ALL"))
            return true;
    return false;
}

/* The mask of the names in v ("ALL" skipped), or -1 with *e. */
static int names_mask(const char *field, const char *const *v, size_t n, uint64_t limit,
                      uint64_t *mask, sl_error *e)
{
    *mask = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcasecmp(v[i], "ALL"))
            continue;
        int c = sl_cap_from_name(v[i]);
        if (c < 0)
            return sl_error_set(e, 0, "%s: unknown capability \"%s\"", field, v[i]);
        if (!(limit & BIT(c)))
            return sl_error_set(e, EPERM,
                                "%s: %s is not in sluiced's own bounding set, so no container "
                                "can have it",
                                field, cap_names[c]);
        *mask |= BIT(c);
    }
    return 0;
}

int sl_caps_compute(const sl_caps_request *req, uint64_t daemon_bounding, sl_caps *out, sl_error *e)
{
    uint64_t limit = daemon_bounding & ALL_KNOWN;
    uint64_t add, drop, amb;
    if (names_mask("add_capabilities", req->add, req->n_add, limit, &add, e) < 0 ||
        names_mask("drop_capabilities", req->drop, req->n_drop, ALL_KNOWN, &drop, e) < 0 ||
        names_mask("add_ambient_capabilities", req->ambient, req->n_ambient, limit, &amb, e) < 0)
        return -1;
    if (has_all(req->ambient, req->n_ambient))
        return sl_error_set(e, 0, "add_ambient_capabilities: \"ALL\" is not allowed here");
    uint64_t set = sl_caps_default_mask() & limit;
    if (req->privileged) {
        set = limit;
    } else {
        if (has_all(req->add, req->n_add))
            set = limit;
        if (has_all(req->drop, req->n_drop))
            set = 0;
        set = (set | add) & ~drop;
    }
    *out = (sl_caps){.bounding = set | amb,
                     .effective = set | amb,
                     .permitted = set | amb,
                     .inheritable = amb,
                     .ambient = amb};
    return 0;
}

int sl_caps_parse_status(const char *status_text, uint64_t *bounding)
{
    const char *p = strstr(status_text, "\nCapBnd:");
    if (!p)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p + 8, &end, 16);
    if (errno || end == p + 8)
        return -1;
    *bounding = (uint64_t)v;
    return 0;
}

int sl_caps_read_bounding(uint64_t *bounding, sl_error *e)
{
    SL_AUTOFREE char *text = NULL;
    if (sl_read_file("/proc/self/status", 1 << 16, &text, NULL, e) < 0)
        return -1;
    if (sl_caps_parse_status(text, bounding) < 0)
        return sl_error_set(e, 0, "no CapBnd line in /proc/self/status");
    return 0;
}
