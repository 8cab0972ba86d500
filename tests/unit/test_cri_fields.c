/* Unknown fields in a config are found at any depth, named by path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cri/cri_fields.h"
#include "grpc/api.pb-c.h"
#include "grpc/grpc_status.h"

/* A length-delimited field: tag byte, one-byte length, bytes. */
static size_t ld(uint8_t *out, uint8_t tag, const uint8_t *b, size_t n)
{
    out[0] = tag;
    out[1] = (uint8_t)n;
    memcpy(out + 2, b, n);
    return n + 2;
}

/* ContainerConfig{linux{security_context{privileged: true, <extra>}}}. */
static Runtime__V1__ContainerConfig *config_with(const uint8_t *extra, size_t nextra)
{
    uint8_t sc[32] = {0x10, 0x01}; /* privileged (field 2) = true */
    if (nextra)
        memcpy(sc + 2, extra, nextra);
    uint8_t lin[40], cfg[48];
    size_t nl = ld(lin, 0x12, sc, 2 + nextra); /* LinuxContainerConfig.security_context */
    size_t nc = ld(cfg, 0x7a, lin, nl);        /* ContainerConfig.linux (15) */
    return runtime__v1__container_config__unpack(NULL, nc, cfg);
}

static void known_fields_pass(void **state)
{
    (void)state;
    Runtime__V1__ContainerConfig *c = config_with(NULL, 0);
    assert_non_null(c);
    assert_true(c->linux->security_context->privileged);
    sl_error e = {0};
    assert_int_equal(sl_cri_check_fields(&c->base, "config", &e), 0);
    runtime__v1__container_config__free_unpacked(c, NULL);
}

static void nested_unknown_is_named(void **state)
{
    (void)state;
    const uint8_t field111[] = {0xf8, 0x06, 0x01}; /* varint field 111 = 1 */
    Runtime__V1__ContainerConfig *c = config_with(field111, sizeof(field111));
    assert_non_null(c);
    sl_error e = {0};
    assert_int_equal(sl_cri_check_fields(&c->base, "config", &e), -1);
    assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(e.msg, "config.linux.security_context: field 111 of "
                                  "runtime.v1.LinuxContainerSecurityContext"));
    runtime__v1__container_config__free_unpacked(c, NULL);
}

static void repeated_unknown_is_indexed(void **state)
{
    (void)state;
    /* mounts (7): [ {container_path: "/a"}, {container_path: "/b", field 99} ] */
    const uint8_t m0[] = {0x0a, 0x02, '/', 'a'};
    const uint8_t m1[] = {0x0a, 0x02, '/', 'b', 0x98, 0x06, 0x01};
    uint8_t cfg[32];
    size_t n = ld(cfg, 0x3a, m0, sizeof(m0));
    n += ld(cfg + n, 0x3a, m1, sizeof(m1));
    Runtime__V1__ContainerConfig *c = runtime__v1__container_config__unpack(NULL, n, cfg);
    assert_non_null(c);
    assert_int_equal(c->n_mounts, 2);
    sl_error e = {0};
    assert_int_equal(sl_cri_check_fields(&c->base, "config", &e), -1);
    assert_non_null(strstr(e.msg, "config.mounts[1]: field 99 of runtime.v1.Mount"));
    runtime__v1__container_config__free_unpacked(c, NULL);
}

static void top_level_unknown(void **state)
{
    (void)state;
    const uint8_t cfg[] = {0xa0, 0x01, 0x01}; /* field 20 varint */
    Runtime__V1__ContainerConfig *c = runtime__v1__container_config__unpack(NULL, 3, cfg);
    assert_non_null(c);
    sl_error e = {0};
    assert_int_equal(sl_cri_check_fields(&c->base, "config", &e), -1);
    assert_non_null(strstr(e.msg, "config: field 20 of runtime.v1.ContainerConfig"));
    runtime__v1__container_config__free_unpacked(c, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_fields_pass),
        cmocka_unit_test(nested_unknown_is_named),
        cmocka_unit_test(repeated_unknown_is_indexed),
        cmocka_unit_test(top_level_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
