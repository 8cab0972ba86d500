/* Capability set arithmetic: names, "ALL", add/drop order, privileged,
 * ambient, and the daemon's bounding set as the limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "container/oci_caps.h"

#define BIT(n) ((uint64_t)1 << (n))
#define CHOWN 0
#define NET_ADMIN 12
#define NET_RAW 13
#define SYS_ADMIN 21
#define SYS_RESOURCE 24
/* This machine's root: every capability 0..40 but CAP_SYS_RESOURCE. */
#define HOST_BND (((BIT(40) << 1) - 1) & ~BIT(SYS_RESOURCE))

static void names(void **state)
{
    (void)state;
    assert_int_equal(sl_cap_from_name("CHOWN"), CHOWN);
    assert_int_equal(sl_cap_from_name("CAP_CHOWN"), CHOWN);
    assert_int_equal(sl_cap_from_name("net_admin"), NET_ADMIN);
    assert_int_equal(sl_cap_from_name("cap_Net_Admin"), NET_ADMIN);
    assert_int_equal(sl_cap_from_name("CHECKPOINT_RESTORE"), 40);
    assert_int_equal(sl_cap_from_name("ALL"), -1);
    assert_int_equal(sl_cap_from_name("CAP_"), -1);
    assert_int_equal(sl_cap_from_name("CAP_CAP_CHOWN"), -1);
    assert_int_equal(sl_cap_from_name(""), -1);
    assert_string_equal(sl_cap_name(SYS_ADMIN), "CAP_SYS_ADMIN");
    assert_null(sl_cap_name(SL_CAP_COUNT));
    assert_null(sl_cap_name(-1));
    /* runc's default: 14 capabilities, 0xa80425fb in /proc/self/status */
    assert_int_equal(sl_caps_default_mask(), 0xa80425fbULL);
}

static sl_caps compute_ok(const sl_caps_request *r, uint64_t bnd)
{
    sl_caps c;
    sl_error e;
    assert_int_equal(sl_caps_compute(r, bnd, &c, &e), 0);
    assert_int_equal(c.bounding, c.effective);
    assert_int_equal(c.bounding, c.permitted);
    return c;
}

static void defaults_add_drop(void **state)
{
    (void)state;
    sl_caps_request none = {0};
    sl_caps c = compute_ok(&none, HOST_BND);
    assert_int_equal(c.effective, 0xa80425fbULL);
    assert_int_equal(c.inheritable, 0); /* CVE-2022-24769 */
    assert_int_equal(c.ambient, 0);

    const char *add[] = {"NET_ADMIN", "CAP_SYS_ADMIN"};
    const char *drop[] = {"chown", "NET_RAW"};
    sl_caps_request r = {.add = add, .n_add = 2, .drop = drop, .n_drop = 2};
    c = compute_ok(&r, HOST_BND);
    assert_int_equal(c.effective, (0xa80425fbULL | BIT(NET_ADMIN) | BIT(SYS_ADMIN)) &
                                      ~(BIT(CHOWN) | BIT(NET_RAW)));

    /* a name both added and dropped ends dropped (drops come last) */
    const char *both[] = {"NET_ADMIN"};
    sl_caps_request r2 = {.add = both, .n_add = 1, .drop = both, .n_drop = 1};
    assert_int_equal(compute_ok(&r2, HOST_BND).effective, 0xa80425fbULL);
}

static void all_in_add_and_drop(void **state)
{
    (void)state;
    const char *all[] = {"ALL"};
    const char *chown_[] = {"CHOWN"};
    sl_caps_request add_all = {.add = all, .n_add = 1};
    assert_int_equal(compute_ok(&add_all, HOST_BND).effective, HOST_BND);
    /* ALL never exceeds what the daemon holds */
    assert_int_equal(compute_ok(&add_all, 0xffULL).effective, 0xffULL);

    sl_caps_request add_all_drop_one = {.add = all, .n_add = 1, .drop = chown_, .n_drop = 1};
    assert_int_equal(compute_ok(&add_all_drop_one, HOST_BND).effective, HOST_BND & ~BIT(CHOWN));

    sl_caps_request drop_all = {.drop = all, .n_drop = 1};
    assert_int_equal(compute_ok(&drop_all, HOST_BND).effective, 0);

    sl_caps_request drop_all_add_one = {.add = chown_, .n_add = 1, .drop = all, .n_drop = 1};
    assert_int_equal(compute_ok(&drop_all_add_one, HOST_BND).effective, BIT(CHOWN));

    const char *lower[] = {"all"};
    sl_caps_request lower_all = {.drop = lower, .n_drop = 1};
    assert_int_equal(compute_ok(&lower_all, HOST_BND).effective, 0);
}

static void privileged_gets_the_daemon_set(void **state)
{
    (void)state;
    const char *all[] = {"ALL"};
    sl_caps_request r = {.drop = all, .n_drop = 1, .privileged = true};
    sl_caps c = compute_ok(&r, HOST_BND);
    assert_int_equal(c.effective, HOST_BND); /* add/drop have no effect, as containerd */
    assert_int_equal(c.inheritable, 0);
    assert_int_equal(c.ambient, 0);
}

static void ambient(void **state)
{
    (void)state;
    const char *amb[] = {"NET_ADMIN"};
    const char *drop[] = {"ALL"};
    sl_caps_request r = {.ambient = amb, .n_ambient = 1, .drop = drop, .n_drop = 1};
    sl_caps c = compute_ok(&r, HOST_BND);
    assert_int_equal(c.ambient, BIT(NET_ADMIN));
    assert_int_equal(c.inheritable, BIT(NET_ADMIN));
    assert_int_equal(c.permitted, BIT(NET_ADMIN));
}

static void refused(void **state)
{
    (void)state;
    sl_caps c;
    sl_error e;
    const char *bogus[] = {"CHOWN", "BOGUS"};
    sl_caps_request r = {.add = bogus, .n_add = 2};
    assert_int_equal(sl_caps_compute(&r, HOST_BND, &c, &e), -1);
    assert_string_equal(e.msg, "add_capabilities: unknown capability \"BOGUS\"");

    sl_caps_request d = {.drop = bogus, .n_drop = 2};
    assert_int_equal(sl_caps_compute(&d, HOST_BND, &c, &e), -1);
    assert_non_null(strstr(e.msg, "drop_capabilities: unknown capability \"BOGUS\""));

    const char *res[] = {"SYS_RESOURCE"};
    sl_caps_request a = {.add = res, .n_add = 1};
    assert_int_equal(sl_caps_compute(&a, HOST_BND, &c, &e), -1);
    assert_int_equal(e.errnum, EPERM);
    assert_non_null(strstr(e.msg, "add_capabilities: CAP_SYS_RESOURCE is not in sluiced's own"));
    /* dropping what the daemon lacks is fine */
    sl_caps_request dr = {.drop = res, .n_drop = 1};
    assert_int_equal(sl_caps_compute(&dr, HOST_BND, &c, &e), 0);

    sl_caps_request amb = {.ambient = res, .n_ambient = 1};
    assert_int_equal(sl_caps_compute(&amb, HOST_BND, &c, &e), -1);
    assert_non_null(strstr(e.msg, "add_ambient_capabilities: CAP_SYS_RESOURCE"));

    const char *all[] = {"ALL"};
    sl_caps_request amb_all = {.ambient = all, .n_ambient = 1};
    assert_int_equal(sl_caps_compute(&amb_all, HOST_BND, &c, &e), -1);
    assert_non_null(strstr(e.msg, "add_ambient_capabilities"));
}

static void status_parsing(void **state)
{
    (void)state;
    uint64_t b = 0;
    assert_int_equal(sl_caps_parse_status("Name:\tx\nCapInh:\t0\nCapBnd:\t000001fffeffffff\n", &b),
                     0);
    assert_int_equal(b, 0x1fffeffffffULL);
    assert_int_equal(sl_caps_parse_status("Name:\tx\nCapEff:\t1\n", &b), -1);
    assert_int_equal(sl_caps_parse_status("Name:\tx\nCapBnd:\tzz\n", &b), -1);
    sl_error e;
    assert_int_equal(sl_caps_read_bounding(&b, &e), 0);
    assert_true(b != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),
        cmocka_unit_test(defaults_add_drop),
        cmocka_unit_test(all_in_add_and_drop),
        cmocka_unit_test(privileged_gets_the_daemon_set),
        cmocka_unit_test(ambient),
        cmocka_unit_test(refused),
        cmocka_unit_test(status_parsing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
