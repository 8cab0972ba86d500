/* sluice-kube's command line: every bad flag, token source and
 * certificate pair comes back as one sl_error naming the flag (main prints
 * it once, exit 2), and parsing itself prints nothing. */
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

#include "opts.h"

typedef struct fx {
    char dir[64];
    char err_path[128];
    int saved_stderr;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test-kube-opts-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->err_path, sizeof f->err_path, "%s/stderr", f->dir);
    fflush(stderr);
    f->saved_stderr = dup(STDERR_FILENO);
    FILE *err = fopen(f->err_path, "w");
    assert_non_null(err);
    dup2(fileno(err), STDERR_FILENO);
    fclose(err);
    unsetenv(SK_TOKEN_ENV);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    fflush(stderr);
    dup2(f->saved_stderr, STDERR_FILENO);
    close(f->saved_stderr);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static void assert_nothing_printed(const fx *f)
{
    struct stat st;
    fflush(stderr);
    assert_int_equal(stat(f->err_path, &st), 0);
    assert_int_equal(st.st_size, 0);
}

/* Parses the NULL-terminated flags after "sluice-kube". */
static int parse(sk_opts *o, sl_error *e, const char **flags)
{
    char *argv[32] = {"sluice-kube"};
    int argc = 1;
    for (; flags[argc - 1]; argc++)
        argv[argc] = (char *)flags[argc - 1];
    return sk_opts_parse(argc, argv, o, e);
}

static void expect_error(const char **flags, const char *want, int errnum, bool usage)
{
    static sk_opts o;
    sl_error e;
    assert_int_equal(parse(&o, &e, flags), -1);
    assert_string_equal(e.msg, want);
    assert_int_equal(e.errnum, errnum);
    assert_int_equal(o.bad_usage, usage);
}

static void test_defaults(void **state)
{
    fx *f = *state;
    static sk_opts o;
    sl_error e;
    const char *none[] = {NULL};
    assert_int_equal(parse(&o, &e, none), 0);
    assert_string_equal(e.msg, "");
    assert_string_equal(o.cfg.address, SK_DEFAULT_ADDRESS);
    assert_int_equal(o.cfg.port, SK_DEFAULT_PORT);
    assert_string_equal(o.cfg.endpoint, SK_DEFAULT_ENDPOINT);
    assert_string_equal(o.cfg.cert_path, SK_DEFAULT_CERT_DIR "/serving.crt");
    assert_string_equal(o.cfg.key_path, SK_DEFAULT_CERT_DIR "/serving.key");
    assert_null(o.cfg.token);
    assert_false(o.cfg.tls);
    assert_non_null(o.cfg.node_name);
    const char *cert[] = {"--cert", "/etc/x/front.crt", "--port", "0", NULL};
    assert_int_equal(parse(&o, &e, cert), 0);
    assert_string_equal(o.cfg.cert_path, "/etc/x/front.crt");
    assert_string_equal(o.cfg.key_path, "/etc/x/front.key");
    assert_int_equal(o.cfg.port, 0);
    const char *help[] = {"--help", "--no-such-flag", NULL};
    assert_int_equal(parse(&o, &e, help), 0);
    assert_true(o.help);
    assert_nothing_printed(f);
}

static void test_bad_flags(void **state)
{
    fx *f = *state;
    expect_error((const char *[]){"--port", "65536", NULL}, "bad --port 65536", 0, false);
    expect_error((const char *[]){"--port", "8x", NULL}, "bad --port 8x", 0, false);
    expect_error((const char *[]){"--bogus", NULL}, "unrecognized option --bogus", 0, true);
    expect_error((const char *[]){"-x", NULL}, "unrecognized option -x", 0, true);
    expect_error((const char *[]){"--port", NULL}, "option --port needs a value", 0, true);
    expect_error((const char *[]){"--port", "1", "extra", NULL}, "unexpected argument extra", 0,
                 false);
    expect_error((const char *[]){"--runtime-tls-cert-file", "/c.pem", NULL},
                 "--runtime-tls-cert-file and --runtime-tls-key-file go together", 0, false);
    expect_error((const char *[]){"--tls-cert-file", "/c.pem", NULL},
                 "--tls-cert-file and --tls-private-key-file go together, without "
                 "--cert/--cert-dir",
                 0, false);
    expect_error(
        (const char *[]){"--tls-cert-file", "/c.pem", "--tls-private-key-file", "/k.pem",
                         "--cert-dir", "/d", NULL},
        "--tls-cert-file and --tls-private-key-file go together, without --cert/--cert-dir", 0,
        false);
    assert_nothing_printed(f);
}

static void test_token_sources(void **state)
{
    fx *f = *state;
    char missing[128], empty[128], good[128], msg[512];
    snprintf(missing, sizeof missing, "%s/missing", f->dir);
    snprintf(empty, sizeof empty, "%s/empty", f->dir);
    snprintf(good, sizeof good, "%s/good", f->dir);
    FILE *w = fopen(empty, "w");
    fputs("\n", w);
    fclose(w);
    w = fopen(good, "w");
    fputs("s3cret\r\n", w);
    fclose(w);

    snprintf(msg, sizeof msg, "--token-file %s: open %s: No such file or directory", missing,
             missing);
    expect_error((const char *[]){"--token-file", missing, NULL}, msg, ENOENT, false);
    snprintf(msg, sizeof msg, "--token-file %s: not one line of visible characters", empty);
    expect_error((const char *[]){"--token-file", empty, NULL}, msg, 0, false);
    expect_error((const char *[]){"--token-file", good, "--token", "x", NULL},
                 "give --token-file or --token, not both", 0, false);
    expect_error((const char *[]){"--token", "a b", NULL},
                 "the token must be visible ASCII without spaces", 0, false);

    static sk_opts o;
    sl_error e;
    assert_int_equal(parse(&o, &e, (const char *[]){"--token-file", good, NULL}), 0);
    assert_string_equal(o.cfg.token, "s3cret");
    assert_false(o.token_in_argv);
    /* --token works, and main is told to warn that ps shows it */
    assert_int_equal(parse(&o, &e, (const char *[]){"--token", "t0k", NULL}), 0);
    assert_string_equal(o.cfg.token, "t0k");
    assert_true(o.token_in_argv);
    setenv(SK_TOKEN_ENV, "from-env", 1);
    assert_int_equal(parse(&o, &e, (const char *[]){NULL}), 0);
    assert_string_equal(o.cfg.token, "from-env");
    assert_false(o.token_in_argv);
    setenv(SK_TOKEN_ENV, "bad\ttoken", 1);
    expect_error((const char *[]){NULL}, "the token must be visible ASCII without spaces", 0,
                 false);
    unsetenv(SK_TOKEN_ENV);
    assert_nothing_printed(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_sources, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
