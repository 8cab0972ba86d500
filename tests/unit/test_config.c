/* sluiced configuration: defaults, flags, JSON file, precedence, errors
 * that name the key, --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"

static void expect_error(int rc, const sl_error *e, const char *part)
{
    assert_int_equal(rc, -1);
    if (!strstr(e->msg, part))
        fail_msg("error \"%s\" lacks \"%s\"", e->msg, part);
}

static void test_defaults(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    assert_string_equal(c.listen, "unix:///run/sluice/sluice.sock");
    assert_string_equal(c.socket_path, "/run/sluice/sluice.sock");
    assert_string_equal(c.stream_address, "127.0.0.1");
    assert_int_equal(c.stream_port, 10010);
    assert_string_equal(c.stream_base_path, "/");
    assert_string_equal(c.stream_advertise, "");
    assert_int_equal(c.token_ttl_ms, 60000);
    assert_int_equal(c.max_pending_tokens, 1000);
    assert_int_equal(c.idle_timeout_ms, 4ull * 3600 * 1000);
    assert_int_equal(c.max_recv_message, 16u * 1024 * 1024);
    assert_int_equal(c.max_grpc_streams, 100);
    assert_int_equal(c.keepalive_idle_ms, 30000);
    assert_int_equal(c.keepalive_interval_ms, 10000);
    assert_int_equal(c.keepalive_count, 3);
    assert_int_equal(c.tty_size_wait_ms, 100);
    assert_int_equal(c.attach_backlog, 4u * 1024 * 1024);
    assert_int_equal(c.max_grpc_connections, 4096);
    assert_int_equal(c.grpc_idle_timeout_ms, 300000);
    assert_int_equal(c.max_grpc_stream_backlog, 1024 * 1024);
    assert_int_equal(c.max_event_subscribers, 32);
    assert_string_equal(c.state_dir, "/var/lib/sluice");
    assert_string_equal(c.run_dir, "/run/sluice");
    assert_string_equal(c.cni_conf_dir, "/etc/cni/net.d");
    assert_string_equal(c.cni_bin_dir, "/opt/cni/bin:/usr/lib/cni");
    assert_string_equal(c.runtime_path, "runc");
    assert_null(c.image_dir);
    assert_int_equal(sl_config_finish(&c, &e), 0);
    assert_string_equal(c.image_dir, "/var/lib/sluice/images");
    assert_string_equal(c.import_dir, "/var/lib/sluice/import");
    sl_config_fini(&c);
}

static void test_set_values(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    assert_int_equal(sl_config_set(&c, "stream-port", "0", &e), 0);
    assert_int_equal(c.stream_port, 0);
    assert_int_equal(sl_config_set(&c, "stream-port", "65535", &e), 0);
    assert_int_equal(c.stream_port, 65535);
    assert_int_equal(sl_config_set(&c, "idle-timeout-ms", "18446744073709551615", &e), 0);
    assert_int_equal(c.idle_timeout_ms, UINT64_MAX);
    assert_int_equal(sl_config_set(&c, "listen", "unix:/tmp/x.sock", &e), 0);
    assert_string_equal(c.socket_path, "/tmp/x.sock");
    assert_int_equal(sl_config_set(&c, "listen", "unix:///tmp/y.sock", &e), 0);
    assert_string_equal(c.socket_path, "/tmp/y.sock");
    assert_string_equal(c.listen, "unix:///tmp/y.sock");
    assert_int_equal(sl_config_set(&c, "stream-advertise", "", &e), 0);
    assert_int_equal(sl_config_set(&c, "stream-advertise", "node1:10010", &e), 0);
    assert_string_equal(c.stream_advertise, "node1:10010");
    assert_int_equal(sl_config_set(&c, "runtime-path", "/usr/bin/crun", &e), 0);
    assert_string_equal(c.runtime_path, "/usr/bin/crun");
    assert_int_equal(sl_config_set(&c, "stream-base-path", "/cri/", &e), 0);
    assert_string_equal(c.stream_base_path, "/cri/");
    assert_int_equal(sl_config_set(&c, "keepalive-idle-ms", "0", &e), 0); /* off */
    assert_int_equal(c.keepalive_idle_ms, 0);
    assert_int_equal(sl_config_set(&c, "tty-size-wait-ms", "0", &e), 0); /* start at once */
    assert_int_equal(c.tty_size_wait_ms, 0);
    sl_config_fini(&c);
}

static void test_set_errors(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    expect_error(sl_config_set(&c, "no-such-key", "1", &e), &e, "\"no-such-key\"");
    expect_error(sl_config_set(&c, "stream-port", "abc", &e), &e, "stream-port");
    expect_error(sl_config_set(&c, "stream-port", "-1", &e), &e, "not an unsigned integer");
    expect_error(sl_config_set(&c, "stream-port", "1x", &e), &e, "stream-port");
    expect_error(sl_config_set(&c, "stream-port", "", &e), &e, "stream-port");
    expect_error(sl_config_set(&c, "stream-port", " 1", &e), &e, "stream-port");
    expect_error(sl_config_set(&c, "stream-port", "65536", &e), &e, "out of range (0..65535)");
    expect_error(sl_config_set(&c, "idle-timeout-ms", "18446744073709551616", &e), &e,
                 "idle-timeout-ms");
    expect_error(sl_config_set(&c, "token-ttl-ms", "0", &e), &e, "token-ttl-ms");
    expect_error(sl_config_set(&c, "token-ttl-ms", "4294967296", &e), &e, "out of range");
    expect_error(sl_config_set(&c, "max-recv-message", "100", &e), &e, "max-recv-message");
    expect_error(sl_config_set(&c, "keepalive-count", "0", &e), &e, "keepalive-count");
    expect_error(sl_config_set(&c, "keepalive-count", "128", &e), &e, "out of range (1..127)");
    expect_error(sl_config_set(&c, "keepalive-interval-ms", "0", &e), &e, "keepalive-interval-ms");
    expect_error(sl_config_set(&c, "tty-size-wait-ms", "60001", &e), &e, "out of range (0..60000)");
    expect_error(sl_config_set(&c, "attach-backlog", "65535", &e), &e, "attach-backlog");
    expect_error(sl_config_set(&c, "attach-backlog", "1073741825", &e), &e, "out of range");
    expect_error(sl_config_set(&c, "state-dir", "relative/dir", &e), &e, "state-dir");
    expect_error(sl_config_set(&c, "state-dir", "", &e), &e, "must not be empty");
    expect_error(sl_config_set(&c, "runtime-path", "", &e), &e, "runtime-path");
    expect_error(sl_config_set(&c, "stream-base-path", "cri", &e), &e, "stream-base-path");
    expect_error(sl_config_set(&c, "listen", "tcp://127.0.0.1:1", &e), &e, "listen");
    expect_error(sl_config_set(&c, "listen", "unix://rel.sock", &e), &e, "listen");
    expect_error(sl_config_set(&c, "listen", "/abs/without/scheme", &e), &e, "listen");
    char lng[200] = "unix:///";
    memset(lng + 8, 'a', 150);
    lng[158] = '\0';
    expect_error(sl_config_set(&c, "listen", lng, &e), &e, "socket path longer than");
    /* Values are untouched by failed sets. */
    assert_int_equal(c.stream_port, 10010);
    assert_string_equal(c.state_dir, "/var/lib/sluice");
    assert_string_equal(c.socket_path, "/run/sluice/sluice.sock");
    sl_config_fini(&c);
}

static int load(sl_config *c, const char *json, sl_error *e)
{
    return sl_config_load_json(c, json, strlen(json), "test.json", e);
}

static void test_json(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    assert_int_equal(load(&c,
                          "{\"listen\": \"unix:///tmp/a.sock\", \"stream-port\": 0,"
                          " \"state-dir\": \"/srv/sluice\", \"idle-timeout-ms\": 5000,"
                          " \"max-recv-message\": 1048576, \"cni-conf-dir\": \"/x/net.d\"}",
                          &e),
                     0);
    assert_string_equal(c.socket_path, "/tmp/a.sock");
    assert_int_equal(c.stream_port, 0);
    assert_int_equal(c.idle_timeout_ms, 5000);
    assert_int_equal(c.max_recv_message, 1048576);
    assert_string_equal(c.cni_conf_dir, "/x/net.d");
    assert_int_equal(load(&c, "{}", &e), 0);
    assert_int_equal(sl_config_finish(&c, &e), 0);
    assert_string_equal(c.image_dir, "/srv/sluice/images");
    sl_config_fini(&c);
}

static void test_json_errors(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    expect_error(load(&c, "{\"bogus\": 1}", &e), &e,
                 "test.json: unknown configuration key \"bogus\"");
    expect_error(load(&c, "{\"stream-port\": \"10010\"}", &e), &e, "test.json: stream-port");
    expect_error(load(&c, "{\"stream-port\": -5}", &e), &e, "stream-port");
    expect_error(load(&c, "{\"stream-port\": 1.5}", &e), &e, "stream-port");
    expect_error(load(&c, "{\"stream-port\": 70000}", &e), &e,
                 "stream-port: 70000 is out of range");
    expect_error(load(&c, "{\"state-dir\": 5}", &e), &e, "state-dir: expected a string");
    expect_error(load(&c, "{\"state-dir\": null}", &e), &e, "state-dir");
    expect_error(load(&c, "{\"state-dir\": \"rel\"}", &e), &e, "state-dir");
    /* jansson refuses NUL inside strings (no JSON_ALLOW_NUL). */
    expect_error(load(&c, "{\"run-dir\": \"/a\\u0000b\"}", &e), &e, "test.json:1:");
    expect_error(load(&c, "{\"run-dir\": \"/a\", \"run-dir\": \"/b\"}", &e), &e, "test.json");
    expect_error(load(&c, "[1, 2]", &e), &e, "must be a JSON object");
    expect_error(load(&c, "{\"listen\": \n", &e), &e, "test.json:");
    expect_error(load(&c, "{\"config\": \"/x\"}", &e), &e, "\"config\"");
    sl_config_fini(&c);
}

static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/sluice-test-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static int parse(sl_config *c, sl_error *e, int argc, const char **argv)
{
    return sl_config_parse_args(c, argc, (char **)argv, e);
}

/* Flags override the file wherever they stand. */
static void test_args_precedence(void **state)
{
    (void)state;
    char *file = write_temp("{\"stream-port\": 1234, \"state-dir\": \"/from/file\","
                            " \"runtime-path\": \"crun\"}");
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    const char *argv[] = {"sluiced", "--stream-port=99", "--config",
                          file,      "--state-dir",      "/from/flag"};
    assert_int_equal(parse(&c, &e, 6, argv), SL_CONFIG_RUN);
    assert_int_equal(c.stream_port, 99);
    assert_string_equal(c.state_dir, "/from/flag");
    assert_string_equal(c.runtime_path, "crun"); /* from the file */
    assert_string_equal(c.config_file, file);
    assert_string_equal(c.image_dir, "/from/flag/images");
    sl_config_fini(&c);
    unlink(file);
    free(file);
}

static void test_args_errors(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    const char *a1[] = {"sluiced", "--no-such=1"};
    expect_error(parse(&c, &e, 2, a1), &e, "unknown option --no-such");
    const char *a2[] = {"sluiced", "--stream-port"};
    expect_error(parse(&c, &e, 2, a2), &e, "--stream-port needs a value");
    const char *a3[] = {"sluiced", "positional"};
    expect_error(parse(&c, &e, 2, a3), &e, "unexpected argument \"positional\"");
    const char *a4[] = {"sluiced", "--stream-port", "x"};
    expect_error(parse(&c, &e, 3, a4), &e, "--stream-port");
    const char *a5[] = {"sluiced", "--config", "/nonexistent/sluiced.json"};
    expect_error(parse(&c, &e, 3, a5), &e, "/nonexistent/sluiced.json");
    char *bad = write_temp("{\"max-sessions\": \"many\"}");
    const char *a6[] = {"sluiced", "--config", bad};
    expect_error(parse(&c, &e, 3, a6), &e, "max-sessions");
    assert_non_null(strstr(e.msg, bad));
    unlink(bad);
    free(bad);
    const char *a7[] = {"sluiced", "-x"};
    expect_error(parse(&c, &e, 2, a7), &e, "-x");
    sl_config_fini(&c);
}

/* <run-dir>/pods/<64 hex>/mon.sock must fit sun_path (107 bytes): a run
 * dir of 28 bytes does, 29 does not; trailing slashes do not count. */
static void test_run_dir_fits_the_monitor_socket(void **state)
{
    (void)state;
    const char *fits[] = {"/run/sluice", "/tmp/01234567890123456789012",
                          "/tmp/01234567890123456789012//"};
    for (size_t i = 0; i < 3; i++) {
        sl_config c;
        sl_error e;
        sl_config_init(&c);
        const char *argv[] = {"sluiced", "--run-dir", fits[i]};
        assert_int_equal(parse(&c, &e, 3, argv), SL_CONFIG_RUN);
        sl_config_fini(&c);
    }
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    const char *argv[] = {"sluiced", "--run-dir", "/tmp/012345678901234567890123"};
    expect_error(parse(&c, &e, 3, argv), &e,
                 "run-dir: \"/tmp/012345678901234567890123\" is 29 bytes, at most 28 fit");
    assert_non_null(strstr(e.msg, "/mon.sock must fit a unix socket path (107 bytes)"));
    sl_config_fini(&c);
}

static void test_args_help_version(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    const char *h1[] = {"sluiced", "--stream-port", "bad", "--help"};
    assert_int_equal(parse(&c, &e, 4, h1), SL_CONFIG_HELP);
    const char *h2[] = {"sluiced", "-h"};
    assert_int_equal(parse(&c, &e, 2, h2), SL_CONFIG_HELP);
    const char *v[] = {"sluiced", "--version"};
    assert_int_equal(parse(&c, &e, 2, v), SL_CONFIG_VERSION);
    const char *none[] = {"sluiced"};
    assert_int_equal(parse(&c, &e, 1, none), SL_CONFIG_RUN);
    sl_config_fini(&c);
}

static void test_usage_lists_every_key(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sl_config_usage(f, "sluiced");
    fclose(f);
    static const char *const want[] = {
        "--config FILE",
        "--listen URI",
        "unix:///run/sluice/sluice.sock",
        "--stream-port N",
        "10010",
        "--max-recv-message BYTES",
        "16777216",
        "--image-dir DIR",
        "STATE-DIR/images",
        "--import-dir DIR",
        "--cni-conf-dir DIR",
        "/etc/cni/net.d",
        "--runtime-path PATH",
        "--idle-timeout-ms MS",
        "14400000",
        "--max-grpc-connections",
        "4096",
        "--grpc-idle-timeout-ms MS",
        "300000",
        "--max-grpc-stream-backlog BYTES",
        "--max-event-subscribers N",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(text, want[i]))
            fail_msg("--help lacks \"%s\"", want[i]);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_set_values),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_args_precedence),
        cmocka_unit_test(test_args_errors),
        cmocka_unit_test(test_run_dir_fits_the_monitor_socket),
        cmocka_unit_test(test_args_help_version),
        cmocka_unit_test(test_usage_lists_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
