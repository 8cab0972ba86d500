/* sluicectl's config file (config.c): "key: value" lines apply where no
 * flag set the key; every error comes back as an sl_error naming the file
 * and line (or the file and its errno), nothing printed; the rewrite keeps
 * comments and order, and refuses to clobber a file it cannot read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

typedef struct fx {
    char dir[64], path[96];
    ctl c;
    sl_error e;
    bool set[CTL_NKEYS];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_ctl_config.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/sluicectl.yaml", f->dir);
    f->c.timeout_ms = CTL_DEFAULT_TIMEOUT_MS;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const fx *f, const char *text)
{
    FILE *o = fopen(f->path, "w");
    assert_non_null(o);
    fputs(text, o);
    assert_int_equal(fclose(o), 0);
}

static char *read_back(const fx *f)
{
    static char buf[4096];
    FILE *i = fopen(f->path, "r");
    assert_non_null(i);
    size_t n = fread(buf, 1, sizeof buf - 1, i);
    buf[n] = '\0';
    fclose(i);
    return buf;
}

static void test_load_applies_unflagged_keys(void **state)
{
    fx *f = *state;
    write_file(f, "# sluicectl\n---\nruntime-endpoint: \"unix:///x.sock\" # mine\n"
                  "timeout: 1m30s\ndebug: yes\n\nimport-dir: /imp\n");
    f->set[CTL_KEY_IMPORT] = true; /* a flag set it: the file does not override */
    assert_int_equal(ctl_config_load(&f->c, f->path, true, f->set, &f->e), 0);
    assert_string_equal(f->c.runtime_endpoint, "unix:///x.sock");
    assert_int_equal(f->c.timeout_ms, 90000);
    assert_true(f->c.debug);
    assert_null(f->c.import_dir);
}

static void test_missing_file(void **state)
{
    fx *f = *state;
    assert_int_equal(ctl_config_load(&f->c, f->path, false, f->set, &f->e), 1);
    assert_int_equal(ctl_config_load(&f->c, f->path, true, f->set, &f->e), -1);
    assert_int_equal(f->e.errnum, ENOENT);
    char want[256];
    snprintf(want, sizeof want, "config file %s: %s", f->path, strerror(ENOENT));
    assert_string_equal(f->e.msg, want);
}

/* Each bad file and the text its error must hold (after "FILE:"). */
static void test_errors_name_the_line(void **state)
{
    fx *f = *state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"debug: true\nno colon here\n", ":2: expected \"key: value\", got \"no colon here\""},
        {"timeout: 2s\nendpoint: x\n", ":2: unknown key \"endpoint\" (known: runtime-endpoint"},
        {"runtime-endpoint: \"unix:///x\n", ":1: unterminated quote (or text after it) in the "
                                            "value of runtime-endpoint"},
        {"debug: maybe\n", ":1: debug must be true or false, not \"maybe\""},
        {"timeout: 0s\n", ":1: timeout \"0s\" is not a duration such as 2s, 500ms or 1m"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(f, cases[i].text);
        sl_error_clear(&f->e);
        assert_int_equal(ctl_config_load(&f->c, f->path, true, f->set, &f->e), -1);
        assert_int_equal(f->e.errnum, 0);
        assert_non_null(strstr(f->e.msg, f->path));
        assert_non_null(strstr(f->e.msg, cases[i].want));
    }
}

static void test_unreadable_keeps_errno(void **state)
{
    fx *f = *state;
    char vals[CTL_NKEYS][CTL_CONFIG_MAX_VALUE];
    assert_int_equal(mkdir(f->path, 0755), 0); /* a directory: EISDIR, not "empty" */
    assert_int_equal(ctl_config_read(f->path, vals, &f->e), -1);
    assert_int_equal(f->e.errnum, EISDIR);
    assert_non_null(strstr(f->e.msg, f->path));
    const char *newv[CTL_NKEYS] = {[CTL_KEY_DEBUG] = "true"};
    assert_int_equal(ctl_config_write(f->path, newv, &f->e), -1);
    assert_int_not_equal(f->e.errnum, 0);
    assert_non_null(strstr(f->e.msg, f->path));
    rmdir(f->path);
}

static void test_too_long(void **state)
{
    fx *f = *state;
    char *big = malloc(CTL_CONFIG_MAX_VALUE + 300);
    memset(big, 'x', CTL_CONFIG_MAX_VALUE + 298);
    memcpy(big, "import-dir: ", 12);
    strcpy(big + CTL_CONFIG_MAX_VALUE + 298, "\n");
    write_file(f, big);
    free(big);
    assert_int_equal(ctl_config_load(&f->c, f->path, true, f->set, &f->e), -1);
    assert_non_null(strstr(f->e.msg, ":1: line or file too long"));
    char val[CTL_CONFIG_MAX_VALUE + 1];
    memset(val, 'v', CTL_CONFIG_MAX_VALUE);
    val[CTL_CONFIG_MAX_VALUE] = '\0';
    assert_int_equal(ctl_config_check(CTL_KEY_IMPORT, val, "--set", &f->e), -1);
    assert_string_equal(f->e.msg, "--set: import-dir value longer than 4095 bytes");
}

static void test_write_keeps_the_rest(void **state)
{
    fx *f = *state;
    write_file(f, "# top\ntimeout: 5s # slow host\ndebug: false\n");
    const char *newv[CTL_NKEYS] = {[CTL_KEY_TIMEOUT] = "10s", [CTL_KEY_IMPORT] = "/a b "};
    assert_int_equal(ctl_config_write(f->path, newv, &f->e), 0);
    assert_string_equal(read_back(f), "# top\ntimeout: 10s # slow host\ndebug: false\n"
                                      "import-dir: \"/a b \"\n");
    char vals[CTL_NKEYS][CTL_CONFIG_MAX_VALUE];
    assert_int_equal(ctl_config_read(f->path, vals, &f->e), 0);
    assert_string_equal(vals[CTL_KEY_IMPORT], "/a b ");
    assert_string_equal(vals[CTL_KEY_NOPULL_RUN], "false"); /* the default */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_applies_unflagged_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_the_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_keeps_errno, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_long, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_keeps_the_rest, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
