/* What sluiced records per CRI call: ids for the log line, counts by
 * method and code, the latency histogram, and the Prometheus text of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/calls.h"
#include "admin/prom.h"
#include "cri/service.h"
#include "sl_log.h"

static void test_ids(void **state)
{
    (void)state;
    Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
    md.name = "web";
    md.namespace_ = "prod";
    Runtime__V1__PodSandboxConfig cfg = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
    cfg.metadata = &md;
    Runtime__V1__RunPodSandboxRequest run = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
    run.config = &cfg;
    Runtime__V1__RunPodSandboxResponse ran = RUNTIME__V1__RUN_POD_SANDBOX_RESPONSE__INIT;
    ran.pod_sandbox_id = "p1";
    const char *kv[16];
    size_t n = sl_calls_ids(&run.base, &ran.base, kv, 8);
    assert_int_equal(n, 3);
    assert_string_equal(kv[0], "name");
    assert_string_equal(kv[1], "web");
    assert_string_equal(kv[2], "namespace");
    assert_string_equal(kv[3], "prod");
    assert_string_equal(kv[4], "pod");
    assert_string_equal(kv[5], "p1");

    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = "busybox";
    Runtime__V1__PullImageRequest pull = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
    pull.image = &spec;
    Runtime__V1__PullImageResponse pulled = RUNTIME__V1__PULL_IMAGE_RESPONSE__INIT;
    pulled.image_ref = "sha256:ab";
    n = sl_calls_ids(&pull.base, &pulled.base, kv, 8);
    assert_int_equal(n, 2);
    assert_string_equal(kv[1], "busybox");
    assert_string_equal(kv[3], "sha256:ab");

    Runtime__V1__StopContainerRequest stop = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
    stop.container_id = "c1";
    n = sl_calls_ids(&stop.base, NULL, kv, 8);
    assert_int_equal(n, 1);
    assert_string_equal(kv[0], "container");
    /* empty ids are left out; no request at all is fine */
    stop.container_id = "";
    assert_int_equal(sl_calls_ids(&stop.base, NULL, kv, 8), 0);
    assert_int_equal(sl_calls_ids(NULL, NULL, kv, 8), 0);
    /* max bounds the pairs */
    stop.container_id = "c1";
    assert_int_equal(sl_calls_ids(&run.base, &ran.base, kv, 1), 1);
}

static char *metrics_text(const sl_calls *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sl_calls_write_metrics(c, f);
    fclose(f);
    return text;
}

static void end(sl_calls *c, const sl_grpc_method *m, const char *path, int code, uint64_t ns)
{
    sl_grpc_call_end e = {
        .path = path, .method = m, .code = code, .message = "", .duration_ns = ns};
    sl_calls_on_end(&e, c);
}

static void test_counts_and_histogram(void **state)
{
    (void)state;
    size_t n;
    const sl_grpc_method *methods = sl_cri_methods(&n);
    const sl_grpc_method *version =
        sl_grpc_method_find(methods, n, "/runtime.v1.RuntimeService/Version");
    const sl_grpc_method *run =
        sl_grpc_method_find(methods, n, "/runtime.v1.RuntimeService/RunPodSandbox");
    sl_calls c;
    sl_log_set_level(SL_LOG_ERROR); /* the failed calls' lines are not under test here */
    assert_int_equal(sl_calls_init(&c, methods, n), 0);
    end(&c, version, version->path, SL_GRPC_OK, 100000);               /* 0.1 ms */
    end(&c, version, version->path, SL_GRPC_OK, 2000000);              /* 2 ms */
    end(&c, run, run->path, SL_GRPC_INVALID_ARGUMENT, 70000000000ull); /* 70 s: +Inf */
    end(&c, NULL, "/x.Y/Z", SL_GRPC_UNIMPLEMENTED, 1000);
    char *t = metrics_text(&c);
    static const char *const want[] = {
        "# TYPE sluice_cri_requests_total counter\n",
        "sluice_cri_requests_total{method=\"Version\",code=\"OK\"} 2\n",
        "sluice_cri_requests_total{method=\"RunPodSandbox\",code=\"INVALID_ARGUMENT\"} 1\n",
        "sluice_cri_requests_total{method=\"unknown\",code=\"UNIMPLEMENTED\"} 1\n",
        "# TYPE sluice_cri_request_duration_seconds histogram\n",
        "sluice_cri_request_duration_seconds_bucket{method=\"Version\",le=\"0.0005\"} 1\n",
        "sluice_cri_request_duration_seconds_bucket{method=\"Version\",le=\"0.001\"} 1\n",
        "sluice_cri_request_duration_seconds_bucket{method=\"Version\",le=\"0.0025\"} 2\n",
        "sluice_cri_request_duration_seconds_bucket{method=\"Version\",le=\"+Inf\"} 2\n",
        "sluice_cri_request_duration_seconds_sum{method=\"Version\"} 0.0021\n",
        "sluice_cri_request_duration_seconds_count{method=\"Version\"} 2\n",
        "sluice_cri_request_duration_seconds_bucket{method=\"RunPodSandbox\",le=\"60\"} 0\n",
        "sluice_cri_request_duration_seconds_bucket{method=\"RunPodSandbox\",le=\"+Inf\"} 1\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(t, want[i]))
            fail_msg("metrics lack %s in:\n%s", want[i], t);
    assert_null(strstr(t, "method=\"Status\"")); /* methods never called are left out */
    free(t);
    sl_calls_fini(&c);
}

static void test_prom_escaping(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    const char *labels[] = {"v", "a\"b\\c\nd", NULL};
    sl_prom_sample(f, "m", labels, 3);
    sl_prom_sample(f, "m2", NULL, 0);
    fclose(f);
    assert_string_equal(text, "m{v=\"a\\\"b\\\\c\\nd\"} 3\nm2 0\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_counts_and_histogram),
        cmocka_unit_test(test_prom_escaping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
