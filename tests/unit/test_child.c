/* Child processes on a libuv loop: input, output, exit status, the
 * deadline (the whole process group killed and reaped), the output bound,
 * a child that cannot start, and a loop that keeps running meanwhile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc/child.h"

typedef struct seen {
    int calls;
    sl_child_result r;
    char out[4096];
    uint64_t at_ms; /* loop time of the callback */
} seen;

static void done(void *arg, const sl_child_result *r)
{
    seen *s = arg;
    s->calls++;
    s->r = *r;
    snprintf(s->out, sizeof(s->out), "%s", r->output);
    s->r.output = s->out;
    s->at_ms = uv_now(uv_default_loop());
}

static int run(const sl_child_opts *o, seen *s)
{
    memset(s, 0, sizeof(*s));
    sl_error e;
    int rc = sl_child_start(uv_default_loop(), o, done, s, NULL, &e);
    if (rc == 0)
        uv_run(uv_default_loop(), UV_RUN_DEFAULT);
    else
        s->r.error = e;
    return rc;
}

static void input_output_status(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "cat; echo err >&2; exit 3", NULL};
    sl_child_opts o = {.what = "cat",
                       .file = "/bin/sh",
                       .argv = argv,
                       .input = "hello\n",
                       .input_len = 6,
                       .max_output = 1024,
                       .merge_stderr = true,
                       .timeout_ms = 10000,
                       .timeout_key = "t"};
    seen s;
    assert_int_equal(run(&o, &s), 0);
    assert_int_equal(s.calls, 1);
    assert_true(s.r.ran);
    assert_false(s.r.timed_out);
    assert_int_equal(s.r.exit_status, 3);
    assert_int_equal(s.r.term_signal, 0);
    assert_string_equal(s.out, "hello\nerr\n");
    assert_string_equal(s.r.error.msg, "");
    char buf[64];
    assert_string_equal(sl_child_status_text(&s.r, buf, sizeof(buf)), "exited with status 3");
}

static void large_input_is_written_whole(void **state)
{
    (void)state;
    size_t n = 1 << 20; /* many times a pipe buffer */
    char *in = malloc(n);
    memset(in, 'x', n);
    char *argv[] = {"sh", "-c", "wc -c", NULL};
    sl_child_opts o = {.what = "wc",
                       .file = "/bin/sh",
                       .argv = argv,
                       .input = in,
                       .input_len = n,
                       .max_output = 64};
    seen s;
    assert_int_equal(run(&o, &s), 0);
    free(in);
    assert_int_equal(s.r.exit_status, 0);
    assert_int_equal(atol(s.out), (long)n);
}

/* True while a process of group pgid runs (zombies do not count: init
 * may take its time to reap the orphans). */
static bool group_runs(pid_t pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    bool found = false;
    while (d && !found && (de = readdir(d))) {
        char path[300], text[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        char *close_paren = strrchr(text, ')');
        char st;
        int ppid, grp;
        if (close_paren && sscanf(close_paren + 1, " %c %d %d", &st, &ppid, &grp) == 3 &&
            grp == pgid && st != 'Z')
            found = true;
    }
    if (d)
        closedir(d);
    return found;
}

static bool group_gone(pid_t pgid)
{
    for (int i = 0; i < 100; i++) {
        if (!group_runs(pgid))
            return true;
        usleep(10000);
    }
    return false;
}

/* A child and its grandchild (which keeps stdout open) both die at the
 * deadline; the error names what ran, the timeout and its key. */
static void timeout_kills_the_group(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "sleep 30 & sleep 30", NULL};
    sl_child_opts o = {.what = "CNI plugin hang (ADD)",
                       .file = "/bin/sh",
                       .argv = argv,
                       .max_output = 64,
                       .timeout_ms = 300,
                       .timeout_key = "cni-plugin-timeout-ms"};
    seen s;
    uint64_t t0 = uv_now(uv_default_loop());
    assert_int_equal(run(&o, &s), 0);
    assert_int_equal(s.calls, 1);
    assert_true(s.r.timed_out);
    assert_int_equal(s.r.term_signal, SIGKILL);
    assert_true(s.at_ms - t0 >= 300 && s.at_ms - t0 < 5000);
    assert_string_equal(s.r.error.msg, "CNI plugin hang (ADD) did not finish within 300 ms "
                                       "(cni-plugin-timeout-ms): killed");
    assert_int_equal(s.r.error.errnum, ETIMEDOUT);
    assert_true(group_gone(s.r.pid));
}

static void too_much_output_is_killed(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "yes", NULL};
    sl_child_opts o = {
        .what = "yes", .file = "/bin/sh", .argv = argv, .max_output = 1000, .timeout_ms = 10000};
    seen s;
    assert_int_equal(run(&o, &s), 0);
    assert_true(s.r.too_much);
    assert_int_equal(strlen(s.out), 1000);
    assert_non_null(strstr(s.r.error.msg, "yes printed more than 1000 bytes: killed"));
}

static void missing_program_fails_at_once(void **state)
{
    (void)state;
    char *argv[] = {"nope", NULL};
    sl_child_opts o = {
        .what = "CNI plugin nope", .file = "/nonexistent/nope", .argv = argv, .max_output = 64};
    seen s;
    assert_int_equal(run(&o, &s), -1);
    assert_int_equal(s.calls, 0);
    assert_int_equal(s.r.error.errnum, ENOENT);
    assert_non_null(strstr(s.r.error.msg, "cannot run CNI plugin nope (/nonexistent/nope)"));
    /* nothing stays open on the loop */
    assert_int_equal(uv_run(uv_default_loop(), UV_RUN_NOWAIT), 0);
}

static void kill_ends_it(void **state)
{
    (void)state;
    char *argv[] = {"sleep", "30", NULL};
    sl_child_opts o = {.what = "sleeper", .file = "sleep", .argv = argv, .max_output = 64};
    seen s = {0};
    sl_child *c;
    sl_error e;
    assert_int_equal(sl_child_start(uv_default_loop(), &o, done, &s, &c, &e), 0);
    sl_child_kill(c);
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.r.error.msg, "sleeper: killed");
}

/* The loop runs other work while children run: a timer fires on time. */
typedef struct ticker {
    int ticks;
    uint64_t worst; /* largest lateness, ms */
    uint64_t due;
} ticker;

static void tick_cb(uv_timer_t *t)
{
    ticker *k = t->data;
    uint64_t now = uv_now(t->loop);
    if (now > k->due && now - k->due > k->worst)
        k->worst = now - k->due;
    k->due = now + 10;
    if (++k->ticks == 40)
        uv_close((uv_handle_t *)t, NULL);
}

static void loop_keeps_running(void **state)
{
    (void)state;
    uv_loop_t *loop = uv_default_loop();
    char *argv[] = {"sleep", "0.3", NULL};
    sl_child_opts o = {.what = "sleeper", .file = "sleep", .argv = argv, .max_output = 64};
    seen s = {0};
    sl_error e;
    assert_int_equal(sl_child_start(loop, &o, done, &s, NULL, &e), 0);
    uv_timer_t t;
    ticker k = {0, 0, uv_now(loop) + 10};
    uv_timer_init(loop, &t);
    t.data = &k;
    uv_timer_start(&t, tick_cb, 10, 10);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(s.calls, 1);
    assert_int_equal(k.ticks, 40);
    assert_true(k.worst < 200); /* a loaded machine, but never the child's 300 ms */
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as sluiced */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(input_output_status),
        cmocka_unit_test(large_input_is_written_whole),
        cmocka_unit_test(timeout_kills_the_group),
        cmocka_unit_test(too_much_output_is_killed),
        cmocka_unit_test(missing_program_fails_at_once),
        cmocka_unit_test(kill_ends_it),
        cmocka_unit_test(loop_keeps_running),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    uv_loop_close(uv_default_loop());
    return rc;
}
