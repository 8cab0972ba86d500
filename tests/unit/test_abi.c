/* The size rule of the public structs (sluice/common.h, util/abi.h): a
 * caller built with an older, smaller struct gets the defaults for the
 * fields it does not have; a size below the first release's is refused; a
 * newer caller's unknown fields are refused unless unset. The same for the
 * requests (sluice/runtime.h, sl_stream_request). And sl_server_start
 * keeps libuv's reason for a failed start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
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

/* ---- the requests ---- */

/* The first version's sizes (0.3.0): each request through its last field. */
#define EXEC_0_3 SL_ABI_SIZE_THROUGH(sl_exec_request, err)
#define ATTACH_0_3 SL_ABI_SIZE_THROUGH(sl_attach_request, err)
#define PF_0_3 SL_ABI_SIZE_THROUGH(sl_portforward_request, nports)
#define AT_U offsetof(sl_stream_request, u)

static const char *const CMD[] = {"sh", "-c", "true"};
static const uint16_t PORTS[] = {80, 8080};

static sl_server *new_server(uv_loop_t *loop)
{
    sl_runtime_ops ops = {.struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
                          .exec_start = exec_start,
                          .attach_start = attach_start,
                          .portforward_connect = pf_connect};
    sl_runtime rt = {.ops = &ops};
    sl_server_config c;
    sl_server_config_init(&c);
    c.port = 0;
    sl_server *s = NULL;
    assert_int_equal(sl_server_new(loop, &c, &rt, &s), SL_OK);
    return s;
}

static sl_stream_request exec_request(void)
{
    sl_stream_request r = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                           .kind = SL_STREAM_EXEC};
    r.u.exec = (sl_exec_request){.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                                 .container_id = "c",
                                 .cmd = CMD,
                                 .ncmd = 3,
                                 .in = true,
                                 .out = true};
    return r;
}

/* A struct_size below the first version's (0: never set) is SL_ERR_INVAL
 * with the reason, at every entry: the issuing calls (before any state
 * check: the server is not even started), the copy, the adoption (whose
 * fd is then closed). */
static void request_too_small_is_refused(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    sl_server *s = new_server(&loop);
    char *url = NULL;
    const char *why = NULL;
    sl_exec_request e = {.container_id = "c", .cmd = CMD, .ncmd = 3, .out = true};
    sl_attach_request a = {.container_id = "c", .out = true};
    sl_portforward_request p = {.pod_sandbox_id = "p", .ports = PORTS, .nports = 2};
    const size_t small[] = {0, sizeof(size_t), EXEC_0_3 - 1};
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
        e.struct_size = small[i];
        why = NULL;
        assert_int_equal(sl_server_get_exec(s, &e, &url, &why), SL_ERR_INVAL);
        assert_string_equal(why, "struct_size below this library's first version");
        assert_null(url);
    }
    a.struct_size = ATTACH_0_3 - 1;
    assert_int_equal(sl_server_get_attach(s, &a, &url, &why), SL_ERR_INVAL);
    assert_string_equal(why, "struct_size below this library's first version");
    p.struct_size = PF_0_3 - 1;
    assert_int_equal(sl_server_get_portforward(s, &p, &url, &why), SL_ERR_INVAL);
    assert_int_equal(sl_server_get_exec(s, NULL, &url, &why), SL_ERR_INVAL);
    /* the sizes right: past the size rule, on to the state check */
    e.struct_size = sizeof(e);
    assert_int_equal(sl_server_get_exec(s, &e, &url, &why), SL_ERR_STATE);

    sl_stream_request r = exec_request(), *c = NULL;
    r.struct_size = 0; /* the outer size not set */
    assert_int_equal(sl_stream_request_copy(&r, &c), SL_ERR_INVAL);
    r = exec_request();
    r.u.exec.struct_size = 0; /* the member's not set */
    assert_int_equal(sl_stream_request_copy(&r, &c), SL_ERR_INVAL);
    r.u.exec.struct_size = EXEC_0_3 - 1;
    assert_int_equal(sl_stream_request_copy(&r, &c), SL_ERR_INVAL);
    r = exec_request();
    r.struct_size = AT_U + EXEC_0_3 - 1; /* a member that does not fit its struct */
    assert_int_equal(sl_stream_request_copy(&r, &c), SL_ERR_INVAL);
    assert_null(c);

    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    r = exec_request();
    r.u.exec.struct_size = 0;
    const char head[] = "GET /exec/x HTTP/1.1\r\n\r\n";
    assert_int_equal(sl_server_adopt(s, sv[1], (const uint8_t *)head, sizeof(head) - 1, &r, NULL),
                     SL_ERR_INVAL);
    char b;
    assert_int_equal(read(sv[0], &b, 1), 0); /* closed, nothing written */
    close(sv[0]);
    close_and_free(&loop, s);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A caller's struct of which only the first `size` bytes are its own:
 * the rest holds garbage the library must not read. */
typedef union {
    sl_stream_request r;
    uint8_t bytes[sizeof(sl_stream_request)];
} older;

static void make_older(older *o, const sl_stream_request *full, size_t member)
{
    memset(o, 0xA5, sizeof(*o));
    memcpy(o, full, AT_U + member);
    o->r.struct_size = AT_U + member;
    memcpy(&o->r.u, &member, sizeof(member)); /* the member's struct_size */
}

/* Every byte of the library's member past the caller's size holds its
 * default, 0. */
static void assert_defaults_past(const sl_stream_request *c, size_t member, size_t size)
{
    const uint8_t *m = (const uint8_t *)&c->u;
    for (size_t i = member; i < size; i++)
        assert_int_equal(m[i], 0);
}

/* An older caller: its requests end where its header's did (at the first
 * version's last field, 0.3.0). The library reads none of the bytes past
 * the caller's struct_size (garbage there does not show up), gives every
 * field beyond it its default, and the copy carries the library's sizes.
 * In 0.3.0 what lies past is tail padding; a field added later is covered
 * the same way. */
static void older_request_gets_defaults(void **state)
{
    (void)state;
    older o;
    sl_stream_request *c = NULL;
    sl_stream_request full = exec_request();
    make_older(&o, &full, EXEC_0_3);
    assert_int_equal(sl_stream_request_copy(&o.r, &c), SL_OK);
    assert_int_equal(c->struct_size, sizeof(sl_stream_request));
    assert_int_equal(c->u.exec.struct_size, sizeof(sl_exec_request));
    assert_string_equal(c->u.exec.container_id, "c");
    assert_int_equal(c->u.exec.ncmd, 3);
    assert_string_equal(c->u.exec.cmd[2], "true");
    assert_true(c->u.exec.in && c->u.exec.out && !c->u.exec.tty && !c->u.exec.err);
    assert_defaults_past(c, EXEC_0_3, sizeof(sl_exec_request));
    sl_stream_request_free(c);

    full = (sl_stream_request){.struct_size = sizeof(full), .kind = SL_STREAM_ATTACH};
    full.u.attach = (sl_attach_request){
        .struct_size = sizeof(sl_attach_request), .container_id = "a", .tty = true, .in = true};
    make_older(&o, &full, ATTACH_0_3);
    assert_int_equal(sl_stream_request_copy(&o.r, &c), SL_OK);
    assert_int_equal(c->u.attach.struct_size, sizeof(sl_attach_request));
    assert_string_equal(c->u.attach.container_id, "a");
    assert_true(c->u.attach.tty && c->u.attach.in && !c->u.attach.out && !c->u.attach.err);
    assert_defaults_past(c, ATTACH_0_3, sizeof(sl_attach_request));
    sl_stream_request_free(c);

    full = (sl_stream_request){.struct_size = sizeof(full), .kind = SL_STREAM_PORTFORWARD};
    full.u.pf = (sl_portforward_request){.struct_size = sizeof(sl_portforward_request),
                                         .pod_sandbox_id = "p",
                                         .ports = PORTS,
                                         .nports = 2};
    make_older(&o, &full, PF_0_3);
    assert_int_equal(sl_stream_request_copy(&o.r, &c), SL_OK);
    assert_int_equal(c->u.pf.struct_size, sizeof(sl_portforward_request));
    assert_int_equal(c->u.pf.ports[1], 8080);
    assert_defaults_past(c, PF_0_3, sizeof(sl_portforward_request));
    sl_stream_request_free(c);

    /* each request alone, issued by a started server */
    uv_loop_t loop;
    uv_loop_init(&loop);
    sl_server *s = new_server(&loop);
    assert_int_equal(sl_server_start(s), SL_OK);
    char *url = NULL;
    const char *why = NULL;
    full = exec_request();
    make_older(&o, &full, EXEC_0_3);
    assert_int_equal(sl_server_get_exec(s, &o.r.u.exec, &url, &why), SL_OK);
    free(url);
    sl_attach_request a = {.container_id = "c", .out = true};
    memset((uint8_t *)&a + ATTACH_0_3, 0xA5, sizeof(a) - ATTACH_0_3);
    a.struct_size = ATTACH_0_3;
    assert_int_equal(sl_server_get_attach(s, &a, &url, &why), SL_OK);
    free(url);
    sl_portforward_request p = {.struct_size = PF_0_3, .pod_sandbox_id = "p"};
    assert_int_equal(sl_server_get_portforward(s, &p, &url, &why), SL_OK);
    free(url);
    assert_int_equal(sl_server_pending_tokens(s), 3);
    close_and_free(&loop, s);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A newer caller: a field this library does not know, unset, is accepted
 * and the copy has the library's (smaller) size; set, it is refused. */
static void newer_request_unknown_field(void **state)
{
    (void)state;
    struct {
        sl_stream_request r;
        uint64_t newer; /* stands for a field a newer header added to the member */
    } big;
    memset(&big, 0, sizeof(big));
    big.r = exec_request();
    big.r.struct_size = sizeof(big);
    big.r.u.exec.struct_size = sizeof(big) - AT_U;
    sl_stream_request *c = NULL;
    assert_int_equal(sl_stream_request_copy(&big.r, &c), SL_OK);
    assert_int_equal(c->u.exec.struct_size, sizeof(sl_exec_request));
    sl_stream_request_free(c);
    big.newer = 1;
    c = NULL;
    assert_int_equal(sl_stream_request_copy(&big.r, &c), SL_ERR_UNSUPPORTED);
    assert_null(c);

    uv_loop_t loop;
    uv_loop_init(&loop);
    sl_server *s = new_server(&loop);
    char *url = NULL;
    const char *why = NULL;
    assert_int_equal(sl_server_get_exec(s, &big.r.u.exec, &url, &why), SL_ERR_UNSUPPORTED);
    assert_string_equal(why, "the request sets a field this library does not know");
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(sl_server_adopt(s, sv[1], NULL, 0, &big.r, NULL), SL_ERR_UNSUPPORTED);
    close(sv[0]);
    close_and_free(&loop, s);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A copy of a copy: equal fields, owned storage, the library's sizes. */
static void request_copy_round_trip(void **state)
{
    (void)state;
    sl_stream_request kinds[3] = {
        exec_request(),
        {.struct_size = SL_STRUCT_SIZE(sl_stream_request), .kind = SL_STREAM_ATTACH},
        {.struct_size = SL_STRUCT_SIZE(sl_stream_request), .kind = SL_STREAM_PORTFORWARD}};
    kinds[1].u.attach = (sl_attach_request){.struct_size = SL_STRUCT_SIZE(sl_attach_request),
                                            .container_id = "a",
                                            .tty = true,
                                            .in = true,
                                            .out = true};
    kinds[2].u.pf = (sl_portforward_request){.struct_size = SL_STRUCT_SIZE(sl_portforward_request),
                                             .pod_sandbox_id = "p",
                                             .ports = PORTS,
                                             .nports = 2};
    for (int k = 0; k < 3; k++) {
        sl_stream_request *c1 = NULL, *c2 = NULL;
        assert_int_equal(sl_stream_request_copy(&kinds[k], &c1), SL_OK);
        assert_int_equal(sl_stream_request_copy(c1, &c2), SL_OK);
        assert_int_equal(c2->struct_size, sizeof(sl_stream_request));
        assert_int_equal(c2->kind, kinds[k].kind);
        if (k == 0) {
            assert_int_equal(c2->u.exec.struct_size, sizeof(sl_exec_request));
            assert_string_equal(c2->u.exec.container_id, "c");
            assert_int_equal(c2->u.exec.ncmd, 3);
            for (size_t i = 0; i < 3; i++) {
                assert_string_equal(c2->u.exec.cmd[i], CMD[i]);
                assert_ptr_not_equal(c2->u.exec.cmd[i], c1->u.exec.cmd[i]);
            }
            assert_true(c2->u.exec.in && c2->u.exec.out && !c2->u.exec.tty && !c2->u.exec.err);
        } else if (k == 1) {
            assert_int_equal(c2->u.attach.struct_size, sizeof(sl_attach_request));
            assert_string_equal(c2->u.attach.container_id, "a");
            assert_ptr_not_equal(c2->u.attach.container_id, c1->u.attach.container_id);
            assert_true(c2->u.attach.tty && c2->u.attach.in && c2->u.attach.out &&
                        !c2->u.attach.err);
        } else {
            assert_int_equal(c2->u.pf.struct_size, sizeof(sl_portforward_request));
            assert_string_equal(c2->u.pf.pod_sandbox_id, "p");
            assert_int_equal(c2->u.pf.nports, 2);
            assert_memory_equal(c2->u.pf.ports, PORTS, sizeof(PORTS));
            assert_ptr_not_equal(c2->u.pf.ports, c1->u.pf.ports);
        }
        sl_stream_request_free(c1);
        sl_stream_request_free(c2);
    }
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
        cmocka_unit_test(request_too_small_is_refused),
        cmocka_unit_test(older_request_gets_defaults),
        cmocka_unit_test(newer_request_unknown_field),
        cmocka_unit_test(request_copy_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
