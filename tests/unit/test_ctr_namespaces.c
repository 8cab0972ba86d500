/* NamespaceOption of pods and containers: the modes sluice applies, what
 * each resolves to, and the refusals naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cri/ctr_namespaces.h"

#define POD RUNTIME__V1__NAMESPACE_MODE__POD
#define CONTAINER RUNTIME__V1__NAMESPACE_MODE__CONTAINER
#define NODE RUNTIME__V1__NAMESPACE_MODE__NODE
#define TARGET RUNTIME__V1__NAMESPACE_MODE__TARGET

typedef struct pod_cfg {
    Runtime__V1__PodSandboxConfig c;
    Runtime__V1__LinuxPodSandboxConfig l;
    Runtime__V1__LinuxSandboxSecurityContext sc;
    Runtime__V1__NamespaceOption o;
    Runtime__V1__UserNamespace u;
} pod_cfg;

static void pod_init(pod_cfg *p, int net, int pid, int ipc)
{
    runtime__v1__pod_sandbox_config__init(&p->c);
    runtime__v1__linux_pod_sandbox_config__init(&p->l);
    runtime__v1__linux_sandbox_security_context__init(&p->sc);
    runtime__v1__namespace_option__init(&p->o);
    runtime__v1__user_namespace__init(&p->u);
    p->o.network = net;
    p->o.pid = pid;
    p->o.ipc = ipc;
    p->sc.namespace_options = &p->o;
    p->l.security_context = &p->sc;
    p->c.linux = &p->l;
}

typedef struct ctr_cfg {
    Runtime__V1__ContainerConfig c;
    Runtime__V1__LinuxContainerConfig l;
    Runtime__V1__LinuxContainerSecurityContext sc;
    Runtime__V1__NamespaceOption o;
} ctr_cfg;

static void ctr_init(ctr_cfg *p, int net, int pid, int ipc)
{
    runtime__v1__container_config__init(&p->c);
    runtime__v1__linux_container_config__init(&p->l);
    runtime__v1__linux_container_security_context__init(&p->sc);
    runtime__v1__namespace_option__init(&p->o);
    p->o.network = net;
    p->o.pid = pid;
    p->o.ipc = ipc;
    p->sc.namespace_options = &p->o;
    p->l.security_context = &p->sc;
    p->c.linux = &p->l;
}

static void pod_defaults_are_pod(void **state)
{
    (void)state;
    Runtime__V1__PodSandboxConfig c = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
    sl_pod_ns_modes m;
    sl_error e;
    assert_int_equal(sl_ns_pod_modes(&c, &m, &e), 0);
    assert_false(m.host_network);
    assert_false(m.host_ipc);
    assert_int_equal(m.pid, POD);
}

static void pod_modes(void **state)
{
    (void)state;
    pod_cfg p;
    sl_pod_ns_modes m;
    sl_error e;
    pod_init(&p, NODE, NODE, NODE);
    assert_int_equal(sl_ns_pod_modes(&p.c, &m, &e), 0);
    assert_true(m.host_network && m.host_ipc);
    assert_int_equal(m.pid, NODE);
    pod_init(&p, POD, CONTAINER, POD);
    assert_int_equal(sl_ns_pod_modes(&p.c, &m, &e), 0);
    assert_int_equal(m.pid, CONTAINER);
}

static void expect_pod_refused(pod_cfg *p, int code, const char *text)
{
    sl_pod_ns_modes m;
    sl_error e = {0};
    assert_int_equal(sl_ns_pod_modes(&p->c, &m, &e), -1);
    assert_int_equal(e.code, code);
    if (!strstr(e.msg, text))
        fail_msg("\"%s\" not in \"%s\"", text, e.msg);
}

static void pod_refusals(void **state)
{
    (void)state;
    pod_cfg p;
    pod_init(&p, POD, POD, CONTAINER);
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "namespace_options.ipc: CONTAINER (1)");
    pod_init(&p, TARGET, POD, POD);
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "namespace_options.network: TARGET");
    pod_init(&p, POD, TARGET, POD);
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "namespace_options.pid: TARGET");
    pod_init(&p, POD, 9, POD);
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "namespace_options.pid: UNKNOWN (9)");
    pod_init(&p, POD, POD, POD);
    p.o.target_id = "abc";
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "namespace_options.target_id");
}

static void pod_userns(void **state)
{
    (void)state;
    pod_cfg p;
    sl_pod_ns_modes m;
    sl_error e;
    pod_init(&p, POD, POD, POD);
    p.o.userns_options = &p.u;
    p.u.mode = NODE;
    assert_int_equal(sl_ns_pod_modes(&p.c, &m, &e), 0);
    assert_false(m.userns.on);
    p.u.mode = CONTAINER;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "userns_options.mode: CONTAINER");
    p.u.mode = TARGET;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "userns_options.mode: TARGET");
    Runtime__V1__IDMapping map = RUNTIME__V1__IDMAPPING__INIT, two = RUNTIME__V1__IDMAPPING__INIT;
    Runtime__V1__IDMapping *maps[] = {&map, &two};
    map.host_id = 1000;
    map.length = 100000;
    p.u.mode = NODE;
    p.u.n_gids = 1;
    p.u.gids = maps;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "mappings need mode POD");
    /* POD: one mapping each, from container id 0, not of the host's root */
    p.u.mode = POD;
    p.u.n_uids = 1;
    p.u.uids = maps;
    assert_int_equal(sl_ns_pod_modes(&p.c, &m, &e), 0);
    assert_true(m.userns.on);
    assert_int_equal(m.userns.uid.host_id, 1000);
    assert_int_equal(m.userns.gid.length, 100000);
    p.u.n_uids = 0;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "userns_options.uids: 0 mappings");
    p.u.n_uids = 2;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "userns_options.uids: 2 mappings");
    p.u.n_uids = 1;
    map.container_id = 1;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "container id 0 is not mapped");
    map.container_id = 0;
    map.host_id = 0;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "(host id 0)");
    map.host_id = 4294967000u;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "are not a range");
    map.host_id = 1000;
    p.o.network = NODE;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "cannot use the host's network namespace");
    p.o.network = POD;
    p.o.pid = NODE;
    expect_pod_refused(&p, SL_GRPC_INVALID_ARGUMENT, "cannot use the host's PID namespace");
}

static sl_ctr_ns_plan plan_of(ctr_cfg *c, const sl_pod_ns_modes *pod)
{
    sl_ctr_ns_plan plan;
    sl_error e;
    if (sl_ns_ctr_plan(&c->c, pod, &plan, &e) < 0)
        fail_msg("%s", e.msg);
    return plan;
}

/* A container's POD follows the pod: shared, the host's, or its own. */
static void ctr_pid_follows_pod(void **state)
{
    (void)state;
    ctr_cfg c;
    ctr_init(&c, POD, POD, POD);
    sl_pod_ns_modes shared = {.pid = POD}, own = {.pid = CONTAINER}, host = {.pid = NODE};
    assert_int_equal(plan_of(&c, &shared).pid, SL_PIDNS_POD);
    assert_int_equal(plan_of(&c, &own).pid, SL_PIDNS_OWN);
    assert_int_equal(plan_of(&c, &host).pid, SL_PIDNS_HOST);
    ctr_init(&c, POD, CONTAINER, POD);
    assert_int_equal(plan_of(&c, &shared).pid, SL_PIDNS_OWN);
    ctr_init(&c, POD, NODE, POD);
    assert_int_equal(plan_of(&c, &own).pid, SL_PIDNS_HOST);
    ctr_init(&c, POD, TARGET, POD);
    c.o.target_id = "t1";
    sl_ctr_ns_plan p = plan_of(&c, &own);
    assert_int_equal(p.pid, SL_PIDNS_TARGET);
    assert_string_equal(p.target_id, "t1");
}

static void ctr_net_ipc(void **state)
{
    (void)state;
    ctr_cfg c;
    sl_pod_ns_modes pod = {.pid = POD},
                    hostpod = {.host_network = true, .host_ipc = true, .pid = POD};
    ctr_init(&c, POD, POD, POD);
    sl_ctr_ns_plan p = plan_of(&c, &pod);
    assert_false(p.host_network || p.host_ipc);
    p = plan_of(&c, &hostpod); /* the pod's is the host's */
    assert_true(p.host_network && p.host_ipc);
    ctr_init(&c, NODE, POD, NODE);
    p = plan_of(&c, &pod);
    assert_true(p.host_network && p.host_ipc);
    Runtime__V1__ContainerConfig none = RUNTIME__V1__CONTAINER_CONFIG__INIT;
    sl_error e;
    assert_int_equal(sl_ns_ctr_plan(&none, &pod, &p, &e), 0);
    assert_int_equal(p.pid, SL_PIDNS_POD);
}

static void expect_ctr_refused_in(ctr_cfg *c, const sl_pod_ns_modes *pod, int code,
                                  const char *text)
{
    sl_ctr_ns_plan p;
    sl_error e = {0};
    assert_int_equal(sl_ns_ctr_plan(&c->c, pod, &p, &e), -1);
    assert_int_equal(e.code, code);
    if (!strstr(e.msg, text))
        fail_msg("\"%s\" not in \"%s\"", text, e.msg);
}

static void expect_ctr_refused(ctr_cfg *c, int code, const char *text)
{
    sl_pod_ns_modes pod = {.pid = POD};
    expect_ctr_refused_in(c, &pod, code, text);
}

static void ctr_refusals(void **state)
{
    (void)state;
    ctr_cfg c;
    ctr_init(&c, POD, POD, CONTAINER);
    expect_ctr_refused(&c, SL_GRPC_INVALID_ARGUMENT, "namespace_options.ipc: CONTAINER");
    ctr_init(&c, CONTAINER, POD, POD);
    expect_ctr_refused(&c, SL_GRPC_INVALID_ARGUMENT, "namespace_options.network: CONTAINER");
    ctr_init(&c, POD, TARGET, POD);
    expect_ctr_refused(&c, SL_GRPC_INVALID_ARGUMENT, "target_id: pid mode TARGET needs");
    ctr_init(&c, POD, CONTAINER, POD);
    c.o.target_id = "t1";
    expect_ctr_refused(&c, SL_GRPC_INVALID_ARGUMENT, "target_id: set, but pid is CONTAINER");
    ctr_init(&c, POD, 7, POD);
    expect_ctr_refused(&c, SL_GRPC_INVALID_ARGUMENT, "namespace_options.pid: UNKNOWN (7)");
}

/* A container is in its pod's user namespace: its options, if any, must
 * say the same; none means the pod's. */
static void ctr_userns(void **state)
{
    (void)state;
    ctr_cfg c;
    Runtime__V1__IDMapping map = RUNTIME__V1__IDMAPPING__INIT;
    map.host_id = 100000;
    map.length = 65536;
    Runtime__V1__IDMapping *maps[] = {&map};
    Runtime__V1__UserNamespace u = RUNTIME__V1__USER_NAMESPACE__INIT;
    u.n_uids = u.n_gids = 1;
    u.uids = u.gids = maps; /* mode POD */
    sl_pod_ns_modes host = {.pid = POD};
    sl_pod_ns_modes own = {.pid = POD, .userns = {true, {0, 100000, 65536}, {0, 100000, 65536}}};
    ctr_init(&c, POD, POD, POD);
    c.o.userns_options = &u;
    expect_ctr_refused_in(&c, &host, SL_GRPC_INVALID_ARGUMENT,
                          "userns_options: POD, but the pod sandbox uses the host's");
    assert_true(plan_of(&c, &own).userns);
    c.o.userns_options = NULL; /* none: the pod's */
    assert_true(plan_of(&c, &own).userns);
    assert_false(plan_of(&c, &host).userns);
    c.o.userns_options = &u;
    map.host_id = 200000;
    expect_ctr_refused_in(&c, &own, SL_GRPC_INVALID_ARGUMENT,
                          "the mappings differ from the pod sandbox's (uids 0 100000 65536");
    u.mode = NODE;
    u.n_uids = u.n_gids = 0;
    expect_ctr_refused_in(&c, &own, SL_GRPC_INVALID_ARGUMENT,
                          "userns_options: NODE, but the pod sandbox has a user namespace");
    c.o.userns_options = NULL;
    ctr_init(&c, NODE, POD, POD);
    expect_ctr_refused_in(&c, &own, SL_GRPC_INVALID_ARGUMENT,
                          "cannot use the host's network namespace");
}

static void record_round_trip(void **state)
{
    (void)state;
    sl_pod_ns_modes in = {.host_network = true, .pid = NODE}, out;
    json_t *rec = json_object();
    sl_ns_pod_modes_save(&in, rec);
    sl_ns_pod_modes_load(rec, &out);
    assert_true(out.host_network);
    assert_false(out.host_ipc);
    assert_int_equal(out.pid, NODE);
    assert_false(out.userns.on);
    sl_pod_ns_modes ns = {.pid = POD, .userns = {true, {0, 1000, 100000}, {0, 2000, 65536}}};
    json_t *rec2 = json_object();
    sl_ns_pod_modes_save(&ns, rec2);
    sl_ns_pod_modes_load(rec2, &out);
    assert_true(out.userns.on); /* field by field: the struct has padding */
    assert_int_equal(out.userns.uid.container_id, 0);
    assert_int_equal(out.userns.uid.host_id, 1000);
    assert_int_equal(out.userns.uid.length, 100000);
    assert_int_equal(out.userns.gid.host_id, 2000);
    assert_int_equal(out.userns.gid.length, 65536);
    json_decref(rec2);
    json_object_del(rec, "pid_mode"); /* a record of an older version */
    sl_ns_pod_modes_load(rec, &out);
    assert_int_equal(out.pid, CONTAINER);
    json_decref(rec);
    assert_string_equal(sl_ns_mode_name(TARGET), "TARGET");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod_defaults_are_pod), cmocka_unit_test(pod_modes),
        cmocka_unit_test(pod_refusals),         cmocka_unit_test(pod_userns),
        cmocka_unit_test(ctr_pid_follows_pod),  cmocka_unit_test(ctr_net_ipc),
        cmocka_unit_test(ctr_refusals),         cmocka_unit_test(ctr_userns),
        cmocka_unit_test(record_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
