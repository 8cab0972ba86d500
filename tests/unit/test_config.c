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

static int load_json(sl_config *c, const char *json, sl_error *e)
{
    return sl_config_load_json(c, json, strlen(json), "test.json", e);
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
    assert_int_equal(c.stream.token_ttl_ms, 60000);
    assert_int_equal(c.stream.max_pending_tokens, 1000);
    assert_int_equal(c.stream.idle_timeout_ms, 4ull * 3600 * 1000);
    assert_int_equal(c.max_recv_message, 16u * 1024 * 1024);
    assert_int_equal(c.max_grpc_streams, 100);
    assert_int_equal(c.stream.keepalive_idle_ms, 30000);
    assert_int_equal(c.stream.keepalive_interval_ms, 10000);
    assert_int_equal(c.stream.keepalive_count, 3);
    assert_int_equal(c.stream.tty_size_wait_ms, 100);
    assert_int_equal(c.attach_backlog, 4u * 1024 * 1024);
    assert_int_equal(c.exec_max_concurrent, 4);
    assert_int_equal(c.exec_queue_max, 1024);
    assert_int_equal(c.exec_stdin_pipe_size, 512 * 1024);
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
    assert_int_equal(c.log_level, SL_LOG_INFO);
    assert_string_equal(c.admin_listen, ""); /* off */
    assert_string_equal(c.monitor_cgroup, "/sluice/monitors");
    assert_string_equal(c.default_config + strlen(c.default_config) - 20, "/sluice/sluiced.json");
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
    assert_int_equal(c.stream.idle_timeout_ms, UINT64_MAX);
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
    assert_int_equal(c.stream.keepalive_idle_ms, 0);
    assert_int_equal(sl_config_set(&c, "tty-size-wait-ms", "0", &e), 0); /* start at once */
    assert_int_equal(c.stream.tty_size_wait_ms, 0);
    assert_int_equal(sl_config_set(&c, "log-level", "debug", &e), 0);
    assert_int_equal(c.log_level, SL_LOG_DEBUG);
    assert_int_equal(sl_config_set(&c, "log-level", "warning", &e), 0);
    assert_int_equal(c.log_level, SL_LOG_WARN);
    sl_config_fini(&c);
}

/* admin-listen: a bare port is loopback; an address literal otherwise. */
static void test_admin_listen(void **state)
{
    (void)state;
    static const struct {
        const char *in, *addr;
        uint32_t port;
    } ok[] = {{"10011", "127.0.0.1", 10011},
              {"0", "127.0.0.1", 0},
              {"0.0.0.0:9100", "0.0.0.0", 9100},
              {"[::1]:9", "::1", 9},
              {"192.168.1.2:65535", "192.168.1.2", 65535},
              {"", "", 0}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        sl_config c;
        sl_error e;
        sl_config_init(&c);
        assert_int_equal(sl_config_set(&c, "admin-listen", ok[i].in, &e), 0);
        assert_string_equal(c.admin_listen, ok[i].in);
        assert_string_equal(c.admin_address, ok[i].addr);
        assert_int_equal(c.admin_port, ok[i].port);
        sl_config_fini(&c);
    }
    static const char *const bad[] = {"x",       "65536", "1.2.3.4:70000", "::1:9", "[::1]",
                                      "host:10", ":10",   "1.2.3.4:",      "[]:1",  "1.2.3.4: 1"};
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_error(sl_config_set(&c, "admin-listen", bad[i], &e), &e, "admin-listen");
    assert_string_equal(c.admin_listen, "");
    sl_config_fini(&c);
}

static void test_log_level_and_cgroup_errors(void **state)
{
    (void)state;
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    expect_error(sl_config_set(&c, "log-level", "verbose", &e), &e,
                 "\"verbose\" is not one of error, warn, info, debug");
    expect_error(sl_config_set(&c, "log-level", "", &e), &e, "log-level");
    static const char *const bad[] = {"rel",    "/a/../b", "/a/", "//a",
                                      "/a/./b", "/a/..",   "/",   "/a b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_error(sl_config_set(&c, "monitor-cgroup", bad[i], &e), &e, "monitor-cgroup");
    assert_int_equal(sl_config_set(&c, "monitor-cgroup", "", &e), 0); /* stay */
    assert_string_equal(c.monitor_cgroup, "");
    assert_int_equal(sl_config_set(&c, "monitor-cgroup", "/system.slice/mon", &e), 0);
    assert_string_equal(c.monitor_cgroup, "/system.slice/mon");
    assert_int_equal(load_json(&c, "{\"log-level\": \"error\"}", &e), 0);
    assert_int_equal(c.log_level, SL_LOG_ERROR);
    expect_error(load_json(&c, "{\"log-level\": 1}", &e), &e, "expected a string");
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
    assert_int_equal(c.stream.idle_timeout_ms, 5000);
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

/* Parses argv as sluiced does, without the machine's default file. */
static int parse(sl_config *c, sl_error *e, int argc, const char **argv)
{
    c->default_config = "/nonexistent/sluice/sluiced.json";
    return sl_config_parse_args(c, argc, (char **)argv, e);
}

/* The default file is read when it exists and --config is absent; flags
 * still win; --config "" reads none; a missing --config file is an error. */
static void test_default_config_file(void **state)
{
    (void)state;
    char *file = write_temp("{\"stream-port\": 1234, \"log-level\": \"debug\"}");
    sl_config c;
    sl_error e;
    sl_config_init(&c);
    c.default_config = file;
    const char *a1[] = {"sluiced", "--stream-port", "99"};
    assert_int_equal(sl_config_parse_args(&c, 3, (char **)a1, &e), SL_CONFIG_RUN);
    assert_int_equal(c.stream_port, 99);
    assert_int_equal(c.log_level, SL_LOG_DEBUG);
    assert_string_equal(c.config_file, file);
    sl_config_fini(&c);
    sl_config_init(&c);
    c.default_config = file;
    const char *a2[] = {"sluiced", "--config", ""};
    assert_int_equal(sl_config_parse_args(&c, 3, (char **)a2, &e), SL_CONFIG_RUN);
    assert_int_equal(c.stream_port, 10010);
    assert_null(c.config_file);
    sl_config_fini(&c);
    sl_config_init(&c);
    c.default_config = "/nonexistent/sluiced.json"; /* absent: fine */
    const char *a3[] = {"sluiced"};
    assert_int_equal(sl_config_parse_args(&c, 1, (char **)a3, &e), SL_CONFIG_RUN);
    assert_null(c.config_file);
    const char *a4[] = {"sluiced", "--config=/nonexistent/sluiced.json"};
    expect_error(sl_config_parse_args(&c, 2, (char **)a4, &e), &e, "/nonexistent/sluiced.json");
    sl_config_fini(&c);
    unlink(file);
    free(file);
}

typedef struct change {
    char key[64], was[64], now[64];
    bool applied;
} change;

static void record_change(void *arg, const char *key, const char *was, const char *now,
                          bool applied)
{
    change *ch = arg;
    while (ch->key[0])
        ch++;
    snprintf(ch->key, sizeof(ch->key), "%s", key);
    snprintf(ch->was, sizeof(ch->was), "%s", was);
    snprintf(ch->now, sizeof(ch->now), "%s", now);
    ch->applied = applied;
}

/* A reload copies the live keys and reports the others unapplied. */
static void test_reload(void **state)
{
    (void)state;
    sl_config run, fresh;
    sl_error e;
    sl_config_init(&run);
    sl_config_init(&fresh);
    assert_int_equal(load_json(&fresh,
                               "{\"log-level\": \"warn\", \"max-grpc-connections\": 7,"
                               " \"grpc-idle-timeout-ms\": 0, \"stats-cpu-window-ms\": 5,"
                               " \"state-dir\": \"/elsewhere\", \"stream-port\": 1}",
                               &e),
                     0);
    change ch[16] = {0};
    assert_int_equal(sl_config_reload(&run, &fresh, record_change, ch), 4);
    assert_int_equal(run.log_level, SL_LOG_WARN);
    assert_int_equal(run.max_grpc_connections, 7);
    assert_int_equal(run.grpc_idle_timeout_ms, 0);
    assert_int_equal(run.stats_cpu_window_ms, 5);
    assert_string_equal(run.state_dir, "/var/lib/sluice"); /* needs a restart */
    assert_int_equal(run.stream_port, 10010);
    assert_string_equal(ch[0].key, "log-level");
    assert_string_equal(ch[0].was, "info");
    assert_string_equal(ch[0].now, "warn");
    assert_true(ch[0].applied);
    size_t n = 0, unapplied = 0;
    for (; ch[n].key[0]; n++)
        if (!ch[n].applied) {
            unapplied++;
            assert_true(!strcmp(ch[n].key, "state-dir") || !strcmp(ch[n].key, "stream-port"));
        }
    assert_int_equal(n, 6);
    assert_int_equal(unapplied, 2);
    /* the same again: nothing changes, nothing is reported */
    memset(ch, 0, sizeof(ch));
    sl_config_init(&run);
    assert_int_equal(sl_config_reload(&run, &run, record_change, ch), 0);
    assert_string_equal(ch[0].key, "");
    sl_config_fini(&run);
    sl_config_fini(&fresh);
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
        "--log-level LEVEL",
        "(default \"info\"; SIGHUP reloads it)",
        "--admin-listen [ADDR:]PORT",
        "--monitor-cgroup PATH",
        "\"/sluice/monitors\"",
        "--import FILE",
        "(default none)",
        "--config \"\" reads none",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(text, want[i]))
            fail_msg("--help lacks \"%s\"", want[i]);
    /* --import has no default file (it once showed STATE-DIR/import) */
    const char *imp = strstr(text, "--import FILE");
    assert_non_null(imp);
    const char *next = strstr(imp + 1, "\n  --");
    assert_non_null(next);
    char entry[512];
    snprintf(entry, sizeof(entry), "%.*s", (int)(next - imp), imp);
    assert_non_null(strstr(entry, "(default none)"));
    assert_null(strstr(entry, "STATE-DIR"));
    free(text);
}

/* The man pages' lists: every key, as a flag or a JSON key with its type. */
static void test_usage_markdown(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sl_config_usage_markdown(f, false);
    fclose(f);
    assert_non_null(strstr(text, "**--listen** *URI*\n:   CRI gRPC endpoint (unix socket). "
                                 "Default: `unix:///run/sluice/sluice.sock`.\n"));
    assert_non_null(strstr(text, "**--import** *FILE*\n:   an OCI-layout or docker-archive "
                                 "tarball to import at start. Default: none.\n"));
    assert_non_null(strstr(text, "**--admin-listen** *[ADDR:]PORT*"));
    assert_non_null(strstr(text, "Default: empty.")); /* admin-listen, stream-advertise */
    assert_non_null(strstr(text, "Default: `info`. A SIGHUP applies a new value."));
    free(text);
    f = open_memstream(&text, &len);
    sl_config_usage_markdown(f, true);
    fclose(f);
    assert_non_null(strstr(text, "**stream-port** (integer)\n"));
    assert_non_null(strstr(text, "**state-dir** (string)\n"));
    assert_null(strstr(text, "**--"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_set_values),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_admin_listen),
        cmocka_unit_test(test_log_level_and_cgroup_errors),
        cmocka_unit_test(test_default_config_file),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_usage_markdown),
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
