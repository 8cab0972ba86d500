#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice/error.h"
#include "refuse_rt.h"
#include "sluice/server.h"

/* The contract of sl_server_set_tls: which parameter a failure names, that
 * a failure leaves the server plain, that it is refused after the start or
 * a second time, and that the URLs become https. Certificates are made
 * here with OpenSSL (self-signed EC P-256). */

typedef struct fx {
    char dir[64];
    char cert[128], key[128], other_key[128], junk[128];
    uv_loop_t loop;
    sl_runtime rt;
    sl_server *srv;
} fx;

static void write_key(const char *path, EVP_PKEY *k)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
}

static void write_cert(const char *path, EVP_PKEY *k)
{
    X509 *x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"t", -1, -1, 0);
    X509_set_issuer_name(x, n);
    assert_true(X509_sign(x, k, EVP_sha256()) > 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_X509(f, x), 1);
    fclose(f);
    X509_free(x);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/sl-tls-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->cert, sizeof(f->cert), "%s/c.pem", f->dir);
    snprintf(f->key, sizeof(f->key), "%s/k.pem", f->dir);
    snprintf(f->other_key, sizeof(f->other_key), "%s/o.pem", f->dir);
    snprintf(f->junk, sizeof(f->junk), "%s/j.pem", f->dir);
    EVP_PKEY *k = EVP_EC_gen("P-256"), *o = EVP_EC_gen("P-256");
    assert_non_null(k);
    assert_non_null(o);
    write_key(f->key, k);
    write_key(f->other_key, o);
    write_cert(f->cert, k);
    EVP_PKEY_free(k);
    EVP_PKEY_free(o);
    FILE *j = fopen(f->junk, "w");
    fputs("not pem\n", j);
    fclose(j);
    uv_loop_init(&f->loop);
    f->rt.ops = &refuse_rt_ops;
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    cfg.port = 0;
    assert_int_equal(sl_server_new(&f->loop, &cfg, &f->rt, &f->srv), SL_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    sl_server_close(f->srv, NULL, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    sl_server_free(f->srv);
    uv_loop_close(&f->loop);
    const char *files[] = {f->cert, f->key, f->other_key, f->junk};
    for (int i = 0; i < 4; i++)
        unlink(files[i]);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void expect_fail(fx *f, const char *cert, const char *key, const char *ca,
                        const char *prefix)
{
    const char *msg = NULL;
    assert_int_equal(sl_server_set_tls(f->srv, cert, key, ca, &msg), SL_ERR_INVAL);
    assert_non_null(msg);
    if (strncmp(msg, prefix, strlen(prefix)) != 0)
        fail_msg("\"%s\" does not start with \"%s\"", msg, prefix);
}

static void failures_name_the_parameter(void **state)
{
    fx *f = *state;
    expect_fail(f, f->cert, NULL, NULL, "key_file: ");
    expect_fail(f, "", f->key, NULL, "cert_file: ");
    expect_fail(f, f->junk, f->key, NULL, "cert_file: ");
    expect_fail(f, f->cert, f->junk, NULL, "key_file: ");
    expect_fail(f, f->cert, "/nonexistent/k.pem", NULL, "key_file: ");
    expect_fail(f, f->cert, f->other_key, NULL, "key_file: the private key does not match");
    expect_fail(f, f->cert, f->key, f->junk, "client_ca_file: ");
    /* every failure left the server plain */
    assert_int_equal(sl_server_start(f->srv), SL_OK);
    assert_int_equal(strncmp(sl_server_base_url(f->srv), "http://", 7), 0);
    /* and after the start it is refused */
    expect_fail(f, f->cert, f->key, NULL, "TLS must be set once, before sl_server_start");
}

static void success_makes_https_urls(void **state)
{
    fx *f = *state;
    const char *msg = "unset";
    assert_int_equal(sl_server_set_tls(f->srv, f->cert, f->key, f->cert, &msg), SL_OK);
    assert_null(msg);
    expect_fail(f, f->cert, f->key, NULL, "TLS must be set once");
    assert_int_equal(sl_server_start(f->srv), SL_OK);
    assert_int_equal(strncmp(sl_server_base_url(f->srv), "https://127.0.0.1:", 18), 0);
    sl_exec_request req = {.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                           .container_id = "c",
                           .cmd = (const char *[]){"true"},
                           .ncmd = 1,
                           .out = true};
    char *url = NULL;
    assert_int_equal(sl_server_get_exec(f->srv, &req, &url, &msg), SL_OK);
    assert_int_equal(strncmp(url, "https://", 8), 0);
    free(url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(failures_name_the_parameter, setup, teardown),
        cmocka_unit_test_setup_teardown(success_makes_https_urls, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
