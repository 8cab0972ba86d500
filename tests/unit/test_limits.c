/* The streaming limits table (sluice/limits.h) against what it feeds:
 * every numeric field of sl_server_config is in it, its defaults are
 * sl_server_config_init's, and each limit is a sluiced key, a sluice-hostd
 * flag (with its default in --help), a row of both tables of
 * docs/configuration.md, and (session limits) a field of the monitor
 * hand-off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "config/config.h"
#include "mon_proto.h"
#include "mon_session.h"
#include "sluice/limits.h"
#include "sluice/server.h"

typedef struct limit {
    const char *field, *key, *flag, *arg;
    size_t off, size;
    uint64_t def, min, max;
    int scope;
} limit;

#define LIMIT_ROW(field, key, flag, arg, def, min, max, scope, help)                               \
    {#field,                                                                                       \
     key,                                                                                          \
     flag,                                                                                         \
     arg,                                                                                          \
     offsetof(sl_server_config, field),                                                            \
     sizeof(((sl_server_config *)0)->field),                                                       \
     def,                                                                                          \
     min,                                                                                          \
     max,                                                                                          \
     scope},
static const limit limits[] = {SL_SERVER_LIMITS(LIMIT_ROW)};
#undef LIMIT_ROW
#define NLIMITS (sizeof(limits) / sizeof(limits[0]))

static uint64_t get(const void *base, const limit *l)
{
    const char *p = (const char *)base + l->off;
    return l->size == 8 ? *(const uint64_t *)(const void *)p : *(const uint32_t *)(const void *)p;
}

typedef struct span {
    size_t off, size;
} span;

static int by_off(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The table and the non-limit fields together tile sl_server_config: a
 * field added to the struct and not to the table leaves a hole. */
static void test_table_covers_struct(void **state)
{
    (void)state;
    span s[NLIMITS + 5] = {
        {offsetof(sl_server_config, struct_size), sizeof(size_t)},
        {offsetof(sl_server_config, address), sizeof(char *)},
        {offsetof(sl_server_config, port), sizeof(uint16_t)},
        {offsetof(sl_server_config, base_path), sizeof(char *)},
        {offsetof(sl_server_config, advertise_host), sizeof(char *)},
    };
    for (size_t i = 0; i < NLIMITS; i++) {
        assert_true(limits[i].size == 4 || limits[i].size == 8);
        s[5 + i] = (span){limits[i].off, limits[i].size};
    }
    qsort(s, NLIMITS + 5, sizeof(s[0]), by_off);
    assert_int_equal(s[0].off, 0);
    size_t end = 0;
    for (size_t i = 0; i < NLIMITS + 5; i++) {
        if (s[i].off < end)
            fail_msg("a field at %zu is listed twice", s[i].off);
        if (s[i].off - end >= s[i].size) /* more than alignment padding */
            fail_msg("bytes %zu..%zu of sl_server_config are in no table row", end, s[i].off);
        end = s[i].off + s[i].size;
    }
    if (sizeof(sl_server_config) - end >= sizeof(uint64_t))
        fail_msg("bytes %zu..%zu of sl_server_config are in no table row", end,
                 sizeof(sl_server_config));
}

static void test_defaults_and_ranges(void **state)
{
    (void)state;
    sl_server_config c;
    sl_server_config_init(&c);
    for (size_t i = 0; i < NLIMITS; i++) {
        const limit *l = &limits[i];
        if (get(&c, l) != l->def)
            fail_msg("%s: sl_server_config_init sets %" PRIu64 ", the table says %" PRIu64,
                     l->field, get(&c, l), l->def);
        assert_true(l->min <= l->def && l->def <= l->max);
        assert_true(l->size == 8 || l->max <= UINT32_MAX);
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(l->key, limits[j].key);
            assert_string_not_equal(l->flag, limits[j].flag);
        }
    }
}

static void expect_refused(sl_config *c, const limit *l, uint64_t v)
{
    char text[32];
    snprintf(text, sizeof(text), "%" PRIu64, v);
    sl_error e;
    if (sl_config_set(c, l->key, text, &e) == 0)
        fail_msg("sluiced took %s = %s", l->key, text);
    if (!strstr(e.msg, l->key))
        fail_msg("the error \"%s\" does not name %s", e.msg, l->key);
}

/* Every limit is a sluiced key: its default, its range, a bad value
 * refused by name, a good one stored in the field sl_server_new gets. */
static void test_sluiced_keys(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLIMITS; i++) {
        const limit *l = &limits[i];
        sl_config c;
        sl_error e;
        sl_config_init(&c);
        assert_int_equal(get(&c.stream, l), l->def);
        const uint64_t good[] = {l->min, l->max};
        for (size_t j = 0; j < 2; j++) {
            char text[32];
            snprintf(text, sizeof(text), "%" PRIu64, good[j]);
            if (sl_config_set(&c, l->key, text, &e) != 0)
                fail_msg("%s = %s: %s", l->key, text, e.msg);
            assert_int_equal(get(&c.stream, l), good[j]);
        }
        if (l->min > 0)
            expect_refused(&c, l, l->min - 1);
        if (l->max < UINT64_MAX)
            expect_refused(&c, l, l->max + 1);
        sl_config_fini(&c);
    }
}

static char *run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 65536, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t n;
    while ((n = fread(out + len, 1, cap - 1 - len, p)) > 0)
        len += n;
    out[len] = '\0';
    *status = pclose(p);
    return out;
}

/* sluice-hostd --help shows every limit with its placeholder and default;
 * a value out of range is refused naming the flag, exit 2. */
static void test_hostd_flags(void **state)
{
    (void)state;
    const char *hostd = getenv("SLUICE_HOSTD");
    assert_non_null(hostd);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' --help", hostd);
    int st;
    char *help = run(cmd, &st);
    assert_int_equal(WEXITSTATUS(st), 0);
    for (size_t i = 0; i < NLIMITS; i++) {
        const limit *l = &limits[i];
        char want[128], def[64];
        snprintf(want, sizeof(want), "\n  --%s %s ", l->flag, l->arg);
        const char *line = strstr(help, want);
        if (!line)
            fail_msg("sluice-hostd --help lacks \"%s\"", want + 1);
        snprintf(def, sizeof(def), "(default %" PRIu64 ")", l->def);
        const char *d = strstr(line, def);
        size_t gap = d ? (size_t)(d - line) : 0;
        if (!d || memchr(line + 1, '\n', gap - 1)) /* on the flag's own line */
            fail_msg("sluice-hostd --help: --%s lacks %s", l->flag, def);
        if (l->max < UINT64_MAX) {
            snprintf(cmd, sizeof(cmd), "'%s' --%s %" PRIu64 " 2>&1", hostd, l->flag, l->max + 1);
            char *err = run(cmd, &st);
            assert_int_equal(WEXITSTATUS(st), 2);
            snprintf(want, sizeof(want), "--%s", l->flag);
            if (!strstr(err, want))
                fail_msg("\"%s\" does not name %s", err, want);
            free(err);
        }
    }
    free(help);
}

static char *read_doc(void)
{
    const char *path = getenv("SLUICE_CONFIGURATION_MD");
    assert_non_null(path);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s", path);
    char *text = calloc(1, 1 << 20);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    assert_true(n > 0);
    return text;
}

/* A table row "| `a` | `b` | DEFAULT..." whose default cell starts with
 * the number and no more digits. */
static void expect_row(const char *doc, const char *a, const char *b, uint64_t def)
{
    char row[256];
    int n = snprintf(row, sizeof(row), "\n| `%s` | `%s` | %" PRIu64, a, b, def);
    const char *p = strstr(doc, row);
    if (!p)
        fail_msg("docs/configuration.md has no row \"%s...\" (missing, or another default)",
                 row + 1);
    char next = p[n];
    if (next >= '0' && next <= '9')
        fail_msg("docs/configuration.md: row \"%s\" shows another default", row + 1);
}

static void test_docs_rows(void **state)
{
    (void)state;
    char *doc = read_doc();
    for (size_t i = 0; i < NLIMITS; i++) {
        const limit *l = &limits[i];
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s", l->flag);
        expect_row(doc, l->field, flag, l->def);   /* the sl_server_config table */
        expect_row(doc, l->key, l->field, l->def); /* sluiced's keys */
    }
    free(doc);
}

/* The session limits travel to the monitor with each hand-off. */
static void test_handoff_carries_session_limits(void **state)
{
    (void)state;
    sl_mon_session_limits in, out;
    memset(&in, 0, sizeof(in));
    in.pf_connect_timeout_ms = 1;
    in.exec_max_concurrent = 1;
    in.exec_stdin_pipe_size = SL_MON_EXEC_STDIN_PIPE_SIZE_MIN;
    sl_server_config_init(&in.stream);
    for (size_t i = 0; i < NLIMITS; i++) {
        const limit *l = &limits[i];
        uint64_t v = l->min + (l->max > l->min ? 1 : 0); /* not the default */
        if (v == l->def)
            v = l->max;
        char *p = (char *)&in.stream + l->off;
        if (l->size == 8)
            *(uint64_t *)(void *)p = v;
        else
            *(uint32_t *)(void *)p = (uint32_t)v;
    }
    json_t *j = sl_mon_session_limits_json(&in);
    assert_non_null(j);
    const char *why = NULL;
    if (sl_mon_session_limits_parse(j, &out, &why) != 0)
        fail_msg("the monitor refused the limits: %s", why);
    json_decref(j);
    for (size_t i = 0; i < NLIMITS; i++) {
        const limit *l = &limits[i];
        bool carried = l->scope == SL_LIMIT_SESSION || !strcmp(l->field, "max_sessions");
        uint64_t want = carried ? get(&in.stream, l) : l->def;
        if (get(&out.stream, l) != want)
            fail_msg("%s: the monitor got %" PRIu64 ", want %" PRIu64, l->field,
                     get(&out.stream, l), want);
    }
    /* a value out of range is refused */
    j = json_pack("{s:I}", "spdy_initial_window", (json_int_t)1000);
    assert_int_equal(sl_mon_session_limits_parse(j, &out, &why), -1);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_covers_struct),
        cmocka_unit_test(test_defaults_and_ranges),
        cmocka_unit_test(test_sluiced_keys),
        cmocka_unit_test(test_hostd_flags),
        cmocka_unit_test(test_docs_rows),
        cmocka_unit_test(test_handoff_carries_session_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
