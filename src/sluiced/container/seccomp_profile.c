#include "container/seccomp_profile.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/oci_caps.h"
#include "container/seccomp_default_data.h"
#include "fsutil.h"

/* Native architecture -> the 32-bit ones its kernel also runs. */
static const char *const companions[][3] = {
    {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"},
    {"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM", NULL},
    {"SCMP_ARCH_S390X", "SCMP_ARCH_S390", NULL},
    {"SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64N32"},
    {"SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64N32"},
};

/* The whole check: keys, values, and a filter libseccomp builds. */
static int check_profile(const json_t *p, int mode, sl_error *e)
{
    scmp_filter_ctx f = sl_seccomp_filter_build(p, mode, e);
    if (!f)
        return -1;
    seccomp_release(f);
    return 0;
}

static json_t *load_text(const char *text, sl_error *e)
{
    json_error_t je;
    json_t *p = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!p)
        sl_error_set(e, 0, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
    return p;
}

json_t *sl_seccomp_parse(const char *text, sl_error *e)
{
    json_t *p = load_text(text, e);
    if (p && check_profile(p, SL_SECCOMP_STRICT, e) < 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}

/* Reads a regular file (never a FIFO or device, which could block the
 * daemon's loop) of at most SL_SECCOMP_MAX_PROFILE_BYTES. */
static char *read_profile(const char *path, sl_error *e)
{
    SL_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        sl_error_set(e, errno, "cannot read \"%s\"", path);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > (off_t)SL_SECCOMP_MAX_PROFILE_BYTES) {
        sl_error_set(e, 0, "cannot read \"%s\": %s", path,
                     S_ISREG(st.st_mode) ? "larger than the profile limit (1 MiB)"
                                         : "not a regular file");
        return NULL;
    }
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
    if (n < 0) {
        sl_error_set(e, text ? errno : ENOMEM, "cannot read \"%s\"", path);
        free(text);
        return NULL;
    }
    text[n] = '\0';
    if (strlen(text) != (size_t)n) {
        sl_error_set(e, 0, "\"%s\": a NUL byte in the file", path);
        free(text);
        return NULL;
    }
    return text;
}

json_t *sl_seccomp_load(const char *path, sl_error *e)
{
    SL_AUTOFREE char *text = read_profile(path, e);
    if (!text)
        return NULL;
    json_t *p = sl_seccomp_parse(text, e);
    if (!p)
        sl_error_wrap(e, "\"%s\"", path);
    return p;
}

/* ---- RuntimeDefault: conditions resolved per container ---- */

/* True when some capability named in list is in bounding. */
static bool any_cap(const json_t *list, uint64_t bounding)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *name = json_string_value(json_array_get(list, i));
        int c = name ? sl_cap_from_name(name) : -1;
        if (c >= 0 && (bounding & ((uint64_t)1 << c)))
            return true;
    }
    return false;
}

static bool arch_listed(const json_t *list, const char *native)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *a = json_string_value(json_array_get(list, i));
        if (a && native && !strcasecmp(a, native + 10))
            return true;
    }
    return false;
}

static bool rule_applies(const json_t *r, uint64_t bounding, const char *native)
{
    const json_t *any = json_object_get(r, "ifAnyCap"), *none = json_object_get(r, "ifNoCap");
    const json_t *arch = json_object_get(r, "ifArch");
    return (!any || any_cap(any, bounding)) && (!none || !any_cap(none, bounding)) &&
           (!arch || arch_listed(arch, native));
}

/* A copy of rule r without our condition keys. */
static json_t *plain_rule(const json_t *r)
{
    json_t *out = json_deep_copy(r);
    for (size_t i = 0; out && sl_seccomp_data_keys[i]; i++)
        json_object_del(out, sl_seccomp_data_keys[i]);
    return out;
}

static json_t *native_arches(const char *native)
{
    json_t *a = json_array();
    for (size_t i = 0; native && i < sizeof(companions) / sizeof(companions[0]); i++) {
        if (strcmp(companions[i][0], native))
            continue;
        for (size_t j = 1; j < 3 && companions[i][j]; j++)
            json_array_append_new(a, json_string(companions[i][j]));
    }
    if (native)
        json_array_insert_new(a, 0, json_string(native));
    return a;
}

json_t *sl_seccomp_resolve_text(const char *text, uint64_t bounding, sl_error *e)
{
    json_t *data = load_text(text, e);
    if (!data || check_profile(data, SL_SECCOMP_DATA, e) < 0) {
        json_decref(data);
        return NULL;
    }
    const char *native = sl_seccomp_native_arch();
    json_t *rules = json_array();
    json_t *all = json_object_get(data, "syscalls");
    for (size_t i = 0; i < json_array_size(all); i++)
        if (rule_applies(json_array_get(all, i), bounding, native))
            json_array_append_new(rules, plain_rule(json_array_get(all, i)));
    json_t *out = json_deep_copy(data);
    json_object_del(out, "comment");
    json_object_set_new(out, "architectures", native_arches(native));
    json_object_set_new(out, "syscalls", rules);
    json_decref(data);
    if (check_profile(out, SL_SECCOMP_DATA, e) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *sl_seccomp_runtime_default(uint64_t bounding, sl_error *e)
{
    json_t *p = sl_seccomp_resolve_text(SL_SECCOMP_DEFAULT_JSON, bounding, e);
    if (!p)
        sl_error_wrap(e, "the compiled-in RuntimeDefault profile");
    return p;
}
