/* The OCI LinuxSeccomp profile compiled with libseccomp as runc compiles
 * it (see seccomp_filter.h). */
#include "seccomp_filter.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The errno a rule may return: what fits an errno (MAX_ERRNO). */
#define MAX_ERRNO_RET 4095
/* Arguments of a system call. */
#define MAX_ARGS 6

typedef struct name_val {
    const char *name;
    uint32_t val;
} name_val;

static const name_val ops[] = {
    {"SCMP_CMP_NE", SCMP_CMP_NE},
    {"SCMP_CMP_LT", SCMP_CMP_LT},
    {"SCMP_CMP_LE", SCMP_CMP_LE},
    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
    {"SCMP_CMP_GE", SCMP_CMP_GE},
    {"SCMP_CMP_GT", SCMP_CMP_GT},
    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
};

/* The architectures runc 1.1 accepts; libseccomp names after "SCMP_ARCH_". */
static const char *const arches[] = {
    "SCMP_ARCH_X86",
    "SCMP_ARCH_X86_64",
    "SCMP_ARCH_X32",
    "SCMP_ARCH_ARM",
    "SCMP_ARCH_AARCH64",
    "SCMP_ARCH_MIPS",
    "SCMP_ARCH_MIPS64",
    "SCMP_ARCH_MIPS64N32",
    "SCMP_ARCH_MIPSEL",
    "SCMP_ARCH_MIPSEL64",
    "SCMP_ARCH_MIPSEL64N32",
    "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",
    "SCMP_ARCH_PPC64LE",
    "SCMP_ARCH_S390",
    "SCMP_ARCH_S390X",
    NULL,
};

static const char *const top_keys[] = {"defaultAction", "defaultErrnoRet", "architectures",
                                       "flags",         "listenerPath",    "listenerMetadata",
                                       "syscalls",      "comment",         NULL};
static const char *const rule_keys[] = {"names",    "action",  "errnoRet", "args", "comment",
                                        "ifAnyCap", "ifNoCap", "ifArch",   NULL};
static const char *const arg_keys[] = {"index", "value", "valueTwo", "op", NULL};
/* Keys only the RuntimeDefault data may use. */
const char *const sl_seccomp_data_keys[] = {"comment", "ifAnyCap", "ifNoCap", "ifArch", NULL};

static bool in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return true;
    return false;
}

/* "syscalls[2]: <msg>" from the prefix "syscalls[2]." ("" at the top). */
static int object_error(sl_error *e, const char *where, const char *msg, const char *arg)
{
    int n = (int)strlen(where);
    return sl_error_set(e, 0, "%.*s%s%s%s%s", n ? n - 1 : 0, where, n ? ": " : "", msg,
                        arg ? arg : "", arg ? "\"" : "");
}

static int check_keys(const json_t *obj, const char *const *allowed, int mode, const char *where,
                      sl_error *e)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!in_list(allowed, key) ||
            (mode == SL_SECCOMP_STRICT && in_list(sl_seccomp_data_keys, key)))
            return object_error(e, where, "unknown key \"", key);
    }
    return 0;
}

/* libseccomp's architecture token for "SCMP_ARCH_X86_64", or 0. */
static uint32_t arch_token(const char *name)
{
    if (!in_list(arches, name))
        return 0;
    char lower[32];
    size_t i = 0;
    for (const char *p = name + 10; *p && i + 1 < sizeof(lower); p++)
        lower[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    lower[i] = '\0';
    return seccomp_arch_resolve_name(lower);
}

/* "SCMP_ARCH_X86_64" for the running kernel's architecture, or NULL. */
const char *sl_seccomp_native_arch(void)
{
    uint32_t native = seccomp_arch_native();
    for (size_t i = 0; arches[i]; i++)
        if (arch_token(arches[i]) == native)
            return arches[i];
    return NULL;
}

/* An optional unsigned JSON integer at most max (default def). */
static int get_uint(const json_t *obj, const char *key, uint64_t max, uint64_t def,
                    const char *where, uint64_t *out, sl_error *e)
{
    const json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
        return sl_error_set(e, 0, "%s%s: an integer 0..%llu is expected", where, key,
                            (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* The libseccomp action of an OCI action name with its errnoRet. */
static int parse_action(const json_t *obj, const char *key, const char *ret_key, const char *where,
                        uint32_t *act, sl_error *e)
{
    const char *name = json_string_value(json_object_get(obj, key));
    uint64_t ret;
    if (!name)
        return sl_error_set(e, 0, "%s%s: a string is expected", where, key);
    if (get_uint(obj, ret_key, MAX_ERRNO_RET, EPERM, where, &ret, e) < 0)
        return -1;
    static const name_val simple[] = {
        {"SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD},
        {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD},
        {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS},
        {"SCMP_ACT_TRAP", SCMP_ACT_TRAP},
        {"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW},
        {"SCMP_ACT_LOG", SCMP_ACT_LOG},
    };
    for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++)
        if (!strcmp(name, simple[i].name))
            return *act = simple[i].val, 0;
    if (!strcmp(name, "SCMP_ACT_ERRNO"))
        return *act = SCMP_ACT_ERRNO((uint32_t)ret), 0;
    if (!strcmp(name, "SCMP_ACT_TRACE"))
        return *act = SCMP_ACT_TRACE((uint32_t)ret), 0;
    if (!strcmp(name, "SCMP_ACT_NOTIFY"))
        return sl_error_set(e, 0, "%s%s: SCMP_ACT_NOTIFY is not supported (no seccomp agent)",
                            where, key);
    return sl_error_set(e, 0, "%s%s: unknown action \"%s\"", where, key, name);
}

static int parse_arg(const json_t *a, const char *where, struct scmp_arg_cmp *cmp, sl_error *e)
{
    uint64_t index, value, two;
    if (!json_is_object(a))
        return object_error(e, where, "an object is expected", NULL);
    if (check_keys(a, arg_keys, SL_SECCOMP_STRICT, where, e) < 0 ||
        get_uint(a, "index", MAX_ARGS - 1, MAX_ARGS, where, &index, e) < 0 ||
        get_uint(a, "value", UINT64_MAX, 0, where, &value, e) < 0 ||
        get_uint(a, "valueTwo", UINT64_MAX, 0, where, &two, e) < 0)
        return -1;
    if (index == MAX_ARGS)
        return sl_error_set(e, 0, "%sindex: required", where);
    const char *op = json_string_value(json_object_get(a, "op"));
    for (size_t i = 0; op && i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (!strcmp(op, ops[i].name)) {
            *cmp =
                (struct scmp_arg_cmp){(unsigned)index, (enum scmp_compare)ops[i].val, value, two};
            return 0;
        }
    }
    return sl_error_set(e, 0, "%sop: unknown operator \"%s\"", where, op ? op : "(none)");
}

/* Arguments of a rule; *n set. */
static int parse_args(const json_t *rule, const char *where, struct scmp_arg_cmp *cmps, size_t *n,
                      sl_error *e)
{
    const json_t *args = json_object_get(rule, "args");
    *n = 0;
    if (!args || json_is_null(args))
        return 0;
    if (!json_is_array(args) || json_array_size(args) > MAX_ARGS)
        return sl_error_set(e, 0, "%sargs: an array of at most %d conditions is expected", where,
                            MAX_ARGS);
    for (size_t i = 0; i < json_array_size(args); i++) {
        char w[96];
        snprintf(w, sizeof(w), "%sargs[%zu].", where, i);
        if (parse_arg(json_array_get(args, i), w, &cmps[i], e) < 0)
            return -1;
    }
    *n = json_array_size(args);
    return 0;
}

/* Adds one call as runc does: conditions on the same argument become
 * separate rules (an OR), otherwise one rule with all of them. */
static int add_call(scmp_filter_ctx f, uint32_t act, int nr, const struct scmp_arg_cmp *cmps,
                    size_t n)
{
    bool repeated = false;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            repeated |= cmps[i].arg == cmps[j].arg;
    if (!repeated)
        return seccomp_rule_add_array(f, act, nr, (unsigned)n, cmps);
    for (size_t i = 0; i < n; i++) {
        int r = seccomp_rule_add_array(f, act, nr, 1, &cmps[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int add_rule(scmp_filter_ctx f, const json_t *rule, size_t idx, uint32_t def, int mode,
                    sl_error *e)
{
    char where[48];
    snprintf(where, sizeof(where), "syscalls[%zu].", idx);
    uint32_t act;
    struct scmp_arg_cmp cmps[MAX_ARGS];
    size_t ncmp;
    const json_t *names = json_object_get(rule, "names");
    if (!json_is_object(rule))
        return sl_error_set(e, 0, "syscalls[%zu]: an object is expected", idx);
    if (check_keys(rule, rule_keys, mode, where, e) < 0 ||
        parse_action(rule, "action", "errnoRet", where, &act, e) < 0 ||
        parse_args(rule, where, cmps, &ncmp, e) < 0)
        return -1;
    if (!json_is_array(names) || json_array_size(names) == 0 ||
        json_array_size(names) > SL_SECCOMP_MAX_NAMES)
        return sl_error_set(e, 0, "%snames: a non-empty array (at most %u) is expected", where,
                            SL_SECCOMP_MAX_NAMES);
    for (size_t i = 0; i < json_array_size(names); i++) {
        const char *name = json_string_value(json_array_get(names, i));
        int nr = name && *name ? seccomp_syscall_resolve_name(name) : __NR_SCMP_ERROR;
        if (nr == __NR_SCMP_ERROR && mode == SL_SECCOMP_DATA && name && *name)
            continue;
        if (nr == __NR_SCMP_ERROR)
            return sl_error_set(e, 0, "%snames[%zu]: unknown system call \"%s\"", where, i,
                                name ? name : "(not a string)");
        int r = act == def ? 0 : add_call(f, act, nr, cmps, ncmp);
        if (r < 0)
            return sl_error_set(e, -r, "%snames[%zu]: libseccomp refuses the rule for \"%s\"",
                                where, i, name);
    }
    return 0;
}

static int add_arches(scmp_filter_ctx f, const json_t *list, sl_error *e)
{
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list))
        return sl_error_set(e, 0, "architectures: an array is expected");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *name = json_string_value(json_array_get(list, i));
        uint32_t tok = name ? arch_token(name) : 0;
        if (!tok)
            return sl_error_set(e, 0, "architectures[%zu]: unknown architecture \"%s\"", i,
                                name ? name : "(not a string)");
        int r = seccomp_arch_add(f, tok);
        if (r < 0 && r != -EEXIST)
            return sl_error_set(e, -r, "architectures[%zu]: libseccomp refuses \"%s\"", i, name);
    }
    return 0;
}

/* Refuses what runc 1.1 cannot do from a CRI profile. */
static int check_unsupported(const json_t *p, sl_error *e)
{
    const json_t *flags = json_object_get(p, "flags");
    if (flags && !json_is_null(flags) && (!json_is_array(flags) || json_array_size(flags)))
        return sl_error_set(e, 0, "flags: not supported (runc 1.1 refuses seccomp flags)");
    const char *keys[] = {"listenerPath", "listenerMetadata"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(p, keys[i]);
        if (v && !json_is_null(v) && (!json_is_string(v) || *json_string_value(v)))
            return sl_error_set(e, 0, "%s: not supported (no seccomp agent)", keys[i]);
    }
    return 0;
}

scmp_filter_ctx sl_seccomp_filter_build(const json_t *p, int mode, sl_error *e)
{
    uint32_t def;
    if (!json_is_object(p))
        return sl_error_set(e, 0, "a JSON object is expected"), NULL;
    if (check_keys(p, top_keys, mode, "", e) < 0 || check_unsupported(p, e) < 0 ||
        parse_action(p, "defaultAction", "defaultErrnoRet", "", &def, e) < 0)
        return NULL;
    const json_t *rules = json_object_get(p, "syscalls");
    if (rules && !json_is_null(rules) &&
        (!json_is_array(rules) || json_array_size(rules) > SL_SECCOMP_MAX_RULES))
        return sl_error_set(e, 0, "syscalls: an array of at most %u rules is expected",
                            SL_SECCOMP_MAX_RULES),
               NULL;
    scmp_filter_ctx f = seccomp_init(def);
    if (!f)
        return sl_error_set(e, ENOMEM, "libseccomp cannot create a filter"), NULL;
    int rc = add_arches(f, json_object_get(p, "architectures"), e);
    for (size_t i = 0; rc == 0 && i < json_array_size(rules); i++)
        rc = add_rule(f, json_array_get(rules, i), i, def, mode, e);
    if (rc < 0) {
        seccomp_release(f);
        return NULL;
    }
    return f;
}
