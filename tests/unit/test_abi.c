/* The size rule of the public structs (sluice/common.h, util/abi.h): a
 * caller built with an older, smaller struct gets the defaults for the
 * fields it does not have; a size below the first release's is refused; a
 * newer caller's unknown fields are refused unless unset. And
 * sl_server_start keeps libuv's reason for a failed start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "util/abi.h"
#include "sluice/client.h"
#include "sluice/server.h"

/* A caller built when tty_size_wait_ms did not exist yet: its struct ends
 * at max_connections (simulated by its struct_size; the bytes beyond hold
 * garbage the library must not read). */
static void older_caller_gets_defaults(void **state)
{
    (void)state;
    sl_server_config old, got;
    memset(&old, 0xA5, sizeof(old));
    old.struct_size = SL_ABI_SIZE_THROUGH(sl_server_config, max_connections);
    old.address = "::1";
    old.max_connections = 7;
    sl_server_config_init(&got);
    assert_int_equal(sl_abi_copy(&got, sizeof(got), &old, old.struct_size), SL_OK);
    assert_string_equal(got.address, "::1");
    assert_int_equal(got.max_connections, 7);
    assert_int_equal(got.tty_size_wait_ms, SL_DEFAULT_TTY_SIZE_WAIT_MS); /* the default */
    assert_int_equal(got.struct_size, sizeof(sl_server_config));

    /* a vtable: a callback past the caller's size is NULL, not garbage */
    sl_runtime_ops oldops, ops;
    memset(&oldops, 0xA5, sizeof(oldops));
    oldops.struct_size = SL_ABI_SIZE_THROUGH(sl_runtime_ops, portforward_cancel);
    memset(&ops, 0, sizeof(ops));
    assert_int_equal(sl_abi_copy(&ops, sizeof(ops), &oldops, oldops.struct_size), SL_OK);
    assert_null(ops.attach_stdin_eof);
    assert_non_null(ops.portforward_cancel);
}

static void too_small_or_unknown_is_refused(void **state)
{
    (void)state;
    sl_server_config c, got;
    sl_server_config_init(&c);
    c.struct_size = SL_ABI_SIZE_THROUGH(sl_server_config, max_connections);
    assert_int_equal(sl_abi_copy(&got, sizeof(got), &c, sizeof(c)), SL_ERR_INVAL);
    assert_int_equal(sl_abi_copy(&got, sizeof(got), NULL, sizeof(c)), SL_ERR_INVAL);
    /* a newer caller: its extra field unset is fine, set is refused */
    struct {
        sl_server_config c;
        uint64_t newer;
    } big;
    memset(&big, 0, sizeof(big));
    sl_server_config_init(&big.c);
    big.c.struct_size = sizeof(big);
    assert_int_equal(sl_abi_copy(&got, sizeof(got), &big, sizeof(c)), SL_OK);
    assert_int_equal(got.struct_size, sizeof(got));
    big.newer = 1;
    assert_int_equal(sl_abi_copy(&got, sizeof(got), &big, sizeof(c)), SL_ERR_UNSUPPORTED);
}

static void exec_start(void *rt, sl_proc *p, const sl_exec_request *r, const sl_term_size *t)
{
    (void)rt, (void)p, (void)r, (void)t;
}
static void attach_start(void *rt, sl_proc *p, const sl_attach_request *r, const sl_term_size *t)
{
    (void)rt, (void)p, (void)r, (void)t;
}
static void pf_connect(void *rt, sl_pfconn *c, const char *id, uint16_t port)
{
    (void)rt, (void)c, (void)id, (void)port;
}

static void closed(sl_server *s, void *arg)
{
    (void)s;
    *(bool *)arg = true;
}

static void close_and_free(uv_loop_t *loop, sl_server *s)
{
    bool done = false;
    sl_server_close(s, closed, &done);
    while (!done)
        uv_run(loop, UV_RUN_ONCE);
    sl_server_free(s);
}

/* Through the public API: a config or vtable without struct_size (a
 * caller that did not use _init) or too small is SL_ERR_INVAL. */
static void public_api_checks_sizes(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    sl_runtime_ops ops = {.struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
                          .exec_start = exec_start,
                          .attach_start = attach_start,
                          .portforward_connect = pf_connect};
    sl_runtime rt = {.ops = &ops};
    sl_server_config c;
    sl_server *s = NULL;
    sl_server_config_init(&c);
    c.port = 0;
    c.struct_size = 0;
    assert_int_equal(sl_server_new(&loop, &c, &rt, &s), SL_ERR_INVAL);
    c.struct_size = SL_ABI_SIZE_THROUGH(sl_server_config, max_connections);
    assert_int_equal(sl_server_new(&loop, &c, &rt, &s), SL_ERR_INVAL);
    c.struct_size = sizeof(c);
    ops.struct_size = SL_ABI_SIZE_THROUGH(sl_runtime_ops, portforward_cancel);
    assert_int_equal(sl_server_new(&loop, &c, &rt, &s), SL_ERR_INVAL);
    ops.struct_size = sizeof(ops);
    ops.portforward_connect = NULL; /* required */
    assert_int_equal(sl_server_new(&loop, &c, &rt, &s), SL_ERR_INVAL);
    assert_null(s);
    ops.portforward_connect = pf_connect;
    assert_int_equal(sl_server_new(&loop, &c, &rt, &s), SL_OK);
    close_and_free(&loop, s);

    sl_client_exec_opts o;
    sl_client_exec_opts_init(&o);
    o.url = "http://127.0.0.1:1/exec/x";
    o.stdout_fd = 1;
    sl_client_exec_cb cb = {.struct_size = SL_ABI_SIZE_THROUGH(sl_client_exec_cb, on_exit)};
    sl_client_exec *x = NULL;
    assert_int_equal(sl_client_exec_new(&loop, &o, &cb, NULL, &x), SL_ERR_INVAL);
    o.struct_size = SL_ABI_SIZE_THROUGH(sl_client_exec_opts, output_high_water);
    cb.struct_size = sizeof(cb);
    assert_int_equal(sl_client_exec_new(&loop, &o, &cb, NULL, &x), SL_ERR_INVAL);
    sl_client_pf_opts po;
    sl_client_pf_opts_init(&po);
    sl_client_pf_cb pcb = {.struct_size = 0};
    sl_client_pf *pf = NULL;
    assert_int_equal(sl_client_pf_new(&loop, &po, &pcb, NULL, &pf), SL_ERR_INVAL);
    assert_null(x);
    assert_null(pf);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A port in use: SL_ERR_SYS, errno EADDRINUSE, and the message names the
 * cause; the failed server is then closed and freed like any other. */
static void failed_start_keeps_the_cause(void **state)
{
    (void)state;
    int busy = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(busy, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(busy, 1), 0);
    assert_int_equal(getsockname(busy, (struct sockaddr *)&a, &len), 0);

    uv_loop_t loop;
    uv_loop_init(&loop);
    sl_runtime_ops ops = {.struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
                          .exec_start = exec_start,
                          .attach_start = attach_start,
                          .portforward_connect = pf_connect};
    sl_runtime rt = {.ops = &ops};
    sl_server_config c;
    sl_server_config_init(&c);
    c.port = ntohs(a.sin_port);
    sl_server *s = NULL;
    assert_int_equal(sl_server_new(&loop, &c, &rt, &s), SL_OK);
    assert_string_equal(sl_server_errmsg(s), "");
    errno = 0;
    assert_int_equal(sl_server_start(s), SL_ERR_SYS);
    assert_int_equal(errno, EADDRINUSE);
    assert_non_null(strstr(sl_server_errmsg(s), "address already in use"));
    assert_int_equal(sl_server_start(s), SL_ERR_STATE);
    close_and_free(&loop, s);
    assert_int_equal(uv_loop_close(&loop), 0);
    close(busy);

    /* not an address literal: SL_ERR_INVAL, named */
    uv_loop_init(&loop);
    c.address = "localhost";
    assert_int_equal(sl_server_new(&loop, &c, &rt, &s), SL_OK);
    assert_int_equal(sl_server_start(s), SL_ERR_INVAL);
    assert_non_null(strstr(sl_server_errmsg(s), "address"));
    close_and_free(&loop, s);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(older_caller_gets_defaults),
        cmocka_unit_test(too_small_or_unknown_is_refused),
        cmocka_unit_test(public_api_checks_sizes),
        cmocka_unit_test(failed_start_keeps_the_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
