/* ContainerConfig.mounts: the refusals naming mounts[i].<field>, the
 * order, the rootfs propagation, a missing host path created, and the
 * `runc features` parse for recursive read-only mounts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cri/ctr_mounts.h"
#include "fsutil.h"

static const sl_mount_env env_all = {.rro = true, .selinux = false, .idmap = true};

typedef struct cfg {
    Runtime__V1__ContainerConfig c;
    Runtime__V1__Mount m[3];
    Runtime__V1__Mount *mp[3];
} cfg;

static void cfg_init(cfg *x, size_t n)
{
    runtime__v1__container_config__init(&x->c);
    for (size_t i = 0; i < n; i++) {
        runtime__v1__mount__init(&x->m[i]);
        x->m[i].host_path = "/tmp";
        x->m[i].container_path = "/data";
        x->mp[i] = &x->m[i];
    }
    x->c.n_mounts = n;
    x->c.mounts = x->mp;
}

static void refused_in(cfg *x, const sl_mount_env *env, bool userns, int code, const char *text)
{
    sl_error e = {0};
    assert_int_equal(sl_ctr_mounts_check(&x->c, env, userns, &e), -1);
    assert_int_equal(e.code, code);
    if (!strstr(e.msg, text))
        fail_msg("\"%s\" not in \"%s\"", text, e.msg);
}

static void refused(cfg *x, const sl_mount_env *env, int code, const char *text)
{
    refused_in(x, env, false, code, text);
}

static void path_refusals(void **state)
{
    (void)state;
    cfg x;
    cfg_init(&x, 2);
    x.m[1].host_path = "";
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "mounts[1].host_path: empty");
    x.m[1].host_path = "tmp";
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "mounts[1].host_path: \"tmp\" is not absolute");
    x.m[1].host_path = "/tmp";
    x.m[1].container_path = "";
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "mounts[1].container_path: empty");
    x.m[1].container_path = "data";
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "mounts[1].container_path: \"data\"");
}

/* Idmapped mounts, in a pod with a user namespace: one uid and one gid
 * mapping, a real range, private propagation, and a host that can. */
static void mapping_refusals(void **state)
{
    (void)state;
    cfg x;
    Runtime__V1__IDMapping map = RUNTIME__V1__IDMAPPING__INIT, *maps[] = {&map, &map};
    map.host_id = 100000;
    map.length = 65536;
    sl_mount_env no_idmap = env_all;
    no_idmap.idmap = false;
    snprintf(no_idmap.idmap_why, sizeof(no_idmap.idmap_why), "not on this file system");
    cfg_init(&x, 1);
    x.m[0].n_uidmappings = x.m[0].n_gidmappings = 1;
    x.m[0].uidmappings = x.m[0].gidmappings = maps;
    sl_error e = {0};
    assert_int_equal(sl_ctr_mounts_check(&x.c, &env_all, true, &e), 0);
    refused_in(&x, &no_idmap, true, SL_GRPC_UNIMPLEMENTED,
               "mounts[0].uidMappings: no idmapped mounts here: not on this file system");
    x.m[0].n_gidmappings = 0;
    refused_in(&x, &env_all, true, SL_GRPC_INVALID_ARGUMENT,
               "mounts[0].gidMappings: 0 mappings; sluice takes one uid and one gid mapping");
    x.m[0].n_gidmappings = 2;
    refused_in(&x, &env_all, true, SL_GRPC_INVALID_ARGUMENT, "mounts[0].gidMappings: 2 mappings");
    x.m[0].n_gidmappings = 1;
    map.length = 0;
    refused_in(&x, &env_all, true, SL_GRPC_INVALID_ARGUMENT,
               "mounts[0].uidMappings[0]: container id 0, host id 100000, length 0 is not a range");
    map.length = 65536;
    x.m[0].propagation = RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_HOST_TO_CONTAINER;
    refused_in(&x, &env_all, true, SL_GRPC_INVALID_ARGUMENT,
               "mounts[0].propagation: an idmapped mount is a copy");
}

static void field_refusals(void **state)
{
    (void)state;
    cfg x;
    Runtime__V1__IDMapping map = RUNTIME__V1__IDMAPPING__INIT, *maps[] = {&map};
    Runtime__V1__ImageSpec img = RUNTIME__V1__IMAGE_SPEC__INIT;
    cfg_init(&x, 1);
    x.m[0].n_gidmappings = 1;
    x.m[0].gidmappings = maps;
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT,
            "mounts[0].gidMappings: the pod sandbox has no user namespace of its own");
    cfg_init(&x, 1);
    img.image = "busybox";
    x.m[0].image = &img;
    refused(&x, &env_all, SL_GRPC_UNIMPLEMENTED, "mounts[0].image: image volumes");
    cfg_init(&x, 1);
    x.m[0].propagation = 5;
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "mounts[0].propagation: unknown value 5");
    cfg_init(&x, 1);
    x.m[0].selinux_relabel = true; /* nothing to relabel without SELinux */
    sl_error e;
    assert_int_equal(sl_ctr_mounts_check(&x.c, &env_all, false, &e), 0);
    sl_mount_env selinux = {.rro = true, .selinux = true};
    refused(&x, &selinux, SL_GRPC_UNIMPLEMENTED, "mounts[0].selinux_relabel");
}

static void rro_rules(void **state)
{
    (void)state;
    cfg x;
    sl_error e;
    cfg_init(&x, 1);
    x.m[0].recursive_read_only = true;
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "recursive_read_only: needs readonly");
    x.m[0].readonly = true;
    x.m[0].propagation = RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_BIDIRECTIONAL;
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "needs propagation PROPAGATION_PRIVATE");
    x.m[0].propagation = RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_PRIVATE;
    assert_int_equal(sl_ctr_mounts_check(&x.c, &env_all, false, &e), 0);
    sl_mount_env old = {.rro = false};
    refused(&x, &old, SL_GRPC_UNIMPLEMENTED, "no recursive read-only mounts");
}

static void too_many(void **state)
{
    (void)state;
    cfg x;
    cfg_init(&x, 1);
    x.c.n_mounts = SL_CTR_MAX_MOUNTS + 1;
    refused(&x, &env_all, SL_GRPC_INVALID_ARGUMENT, "at most 256");
}

/* Creates what is missing, resolves symlinks, sorts parents first. */
static void prepare_creates_and_sorts(void **state)
{
    (void)state;
    char dir[] = "/tmp/sl-mnt-XXXXXX", missing[128], link[128];
    assert_non_null(mkdtemp(dir));
    snprintf(missing, sizeof(missing), "%s/a/b", dir);
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(symlink(dir, link), 0);
    cfg x;
    cfg_init(&x, 3);
    x.m[0].container_path = "/data/deep/er";
    x.m[0].host_path = missing;
    x.m[1].container_path = "/data";
    x.m[1].host_path = link;
    x.m[2].container_path = "/data/deep";
    x.m[2].readonly = true;
    sl_ctr_mounts out;
    sl_error e;
    assert_int_equal(sl_ctr_mounts_prepare(&x.c, &env_all, NULL, &out, &e), 0);
    struct stat st;
    assert_int_equal(stat(missing, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(out.n, 3);
    assert_string_equal(out.v[0].container_path, "/data");
    assert_string_equal(out.v[0].host_path, dir); /* the symlink resolved */
    assert_string_equal(out.v[1].container_path, "/data/deep");
    assert_true(out.v[1].readonly);
    assert_string_equal(out.v[2].container_path, "/data/deep/er");
    assert_null(out.rootfs_propagation);
    sl_ctr_mounts_fini(&out);
    sl_rm_rf(dir, &e);
}

static void features_parse(void **state)
{
    (void)state;
    assert_true(sl_runtime_features_have_rro("{\"mountOptions\": [\"ro\", \"rro\", \"rw\"]}"));
    assert_false(sl_runtime_features_have_rro("{\"mountOptions\": [\"ro\", \"rw\"]}"));
    assert_false(sl_runtime_features_have_rro("{\"mountOptions\": \"rro\"}"));
    assert_false(sl_runtime_features_have_rro("not json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(path_refusals),    cmocka_unit_test(field_refusals),
        cmocka_unit_test(mapping_refusals), cmocka_unit_test(rro_rules),
        cmocka_unit_test(too_many),         cmocka_unit_test(prepare_creates_and_sorts),
        cmocka_unit_test(features_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
