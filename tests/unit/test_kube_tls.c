/* sluice-kube's TLS set-up: the serving context (the operator's pair, or
 * the front's own, made and stored) and the runtime client context. Every
 * failure comes back as one sl_error: msg naming the flag or step and the
 * file, errnum for a file the system refused, code for OpenSSL's cause,
 * and OpenSSL's error queue left empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tls.h"

typedef struct fx {
    char dir[64];
    char crt[256], key[256];   /* a good pair, made by the front itself */
    char crt2[256], key2[256]; /* another pair: its key matches no crt */
    char junk[128];            /* a file that is not PEM */
    char missing[128];
} fx;

static void write_text(const char *path, const char *text)
{
    FILE *w = fopen(path, "w");
    assert_non_null(w);
    fputs(text, w);
    assert_int_equal(fclose(w), 0);
}

/* The front's own pair in dir/sub: serving.crt and serving.key. */
static void *make_pair(const char *dir, const char *sub, char *crt, char *key, size_t len,
                       sl_error *e, char *note, size_t notelen)
{
    snprintf(crt, len, "%s/%s/serving.crt", dir, sub);
    snprintf(key, len, "%s/%s/serving.key", dir, sub);
    sk_tls_files f = {crt, key, false};
    return sk_tls_ctx_new(&f, "127.0.0.1", e, note, notelen);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test-kube-tls-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    sl_error e;
    char note[512];
    void *ctx = make_pair(f->dir, "a", f->crt, f->key, sizeof f->crt, &e, note, sizeof note);
    assert_non_null(ctx);
    sk_tls_ctx_free(ctx);
    ctx = make_pair(f->dir, "b", f->crt2, f->key2, sizeof f->crt2, &e, note, sizeof note);
    assert_non_null(ctx);
    sk_tls_ctx_free(ctx);
    snprintf(f->junk, sizeof f->junk, "%s/junk.pem", f->dir);
    write_text(f->junk, "this is not PEM\n");
    snprintf(f->missing, sizeof f->missing, "%s/missing.pem", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[320];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' && rm -rf '%s'", f->dir, f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* A failure from the system: errnum, no OpenSSL code, the exact text. */
static void assert_sys(const sl_error *e, int errnum, const char *msg)
{
    print_message("%s\n", e->msg);
    assert_string_equal(e->msg, msg);
    assert_int_equal(e->errnum, errnum);
    assert_int_equal(e->code, 0);
    assert_int_equal(ERR_peek_error(), 0);
}

/* A failure from OpenSSL: its library and reason in code, the text
 * "ctx: what: <OpenSSL's reason>", no errnum. */
static void assert_ssl(const sl_error *e, int lib, int reason, const char *ctx, const char *what)
{
    char want[SL_SYS_ERROR_MAX];
    print_message("%s\n", e->msg);
    assert_int_not_equal(e->code, 0);
    assert_int_equal(ERR_GET_LIB((unsigned long)e->code), lib);
    assert_int_equal(ERR_GET_REASON((unsigned long)e->code), reason);
    snprintf(want, sizeof want, "%s: %s: %s", ctx, what,
             ERR_reason_error_string((unsigned long)e->code));
    assert_string_equal(e->msg, want);
    assert_int_equal(e->errnum, 0);
    assert_int_equal(ERR_peek_error(), 0);
}

static void *given(const char *crt, const char *key, sl_error *e)
{
    sk_tls_files files = {crt, key, true};
    char note[512] = "x";
    void *ctx = sk_tls_ctx_new(&files, "127.0.0.1", e, note, sizeof note);
    assert_string_equal(note, "");
    return ctx;
}

static void test_made_then_reused(void **state)
{
    fx *f = *state;
    char crt[256], key[256], note[512], want[1024], dir[256];
    sl_error e;
    struct stat st;
    void *ctx = make_pair(f->dir, "new/deep", crt, key, sizeof crt, &e, note, sizeof note);
    assert_non_null(ctx);
    sk_tls_ctx_free(ctx);
    snprintf(want, sizeof want, "made a new certificate %s and key %s (none stored)", crt, key);
    assert_string_equal(note, want);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(crt, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    snprintf(dir, sizeof dir, "%s/new/deep", f->dir);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    ctx = make_pair(f->dir, "new/deep", crt, key, sizeof crt, &e, note, sizeof note);
    assert_non_null(ctx);
    sk_tls_ctx_free(ctx);
    snprintf(want, sizeof want, "reusing the certificate %s and key %s", crt, key);
    assert_string_equal(note, want);

    /* the operator's pair, given as files */
    assert_non_null(ctx = given(f->crt, f->key, &e));
    sk_tls_ctx_free(ctx);
}

static void test_given_key_bad(void **state)
{
    fx *f = *state;
    char msg[1024], ctx[512];
    sl_error e;
    assert_null(given(f->crt, f->missing, &e));
    snprintf(msg, sizeof msg, "--tls-private-key-file %s: No such file or directory", f->missing);
    assert_sys(&e, ENOENT, msg);

    /* OpenSSL 3 reads keys through its decoders: none takes the file */
    assert_null(given(f->crt, f->junk, &e));
    snprintf(ctx, sizeof ctx, "--tls-private-key-file %s", f->junk);
    assert_ssl(&e, ERR_LIB_OSSL_DECODER, ERR_R_UNSUPPORTED, ctx, "no PEM private key in it");

    /* a key, but not the certificate's */
    assert_null(given(f->crt, f->key2, &e));
    snprintf(ctx, sizeof ctx, "--tls-private-key-file %s", f->key2);
    assert_ssl(&e, ERR_LIB_X509, X509_R_KEY_VALUES_MISMATCH, ctx, "does not match --tls-cert-file");
}

static void test_given_cert_bad(void **state)
{
    fx *f = *state;
    char msg[1024], ctx[512];
    sl_error e;
    assert_null(given(f->missing, f->key, &e));
    snprintf(msg, sizeof msg, "--tls-cert-file %s: No such file or directory", f->missing);
    assert_sys(&e, ENOENT, msg);

    assert_null(given(f->junk, f->key, &e));
    snprintf(ctx, sizeof ctx, "--tls-cert-file %s", f->junk);
    assert_ssl(&e, ERR_LIB_PEM, PEM_R_NO_START_LINE, ctx, "no PEM certificate (chain) in it");

    /* a key where the certificate should be */
    assert_null(given(f->key, f->key, &e));
    snprintf(ctx, sizeof ctx, "--tls-cert-file %s", f->key);
    assert_ssl(&e, ERR_LIB_PEM, PEM_R_NO_START_LINE, ctx, "no PEM certificate (chain) in it");
}

/* Makes the front's pair in dir as a user that cannot write there: root
 * would be let in anyway, so as root a child drops to nobody first. */
static void make_unprivileged(const char *dir, sl_error *e)
{
    char crt[320], key[320], note[512];
    snprintf(crt, sizeof crt, "%s/serving.crt", dir);
    snprintf(key, sizeof key, "%s/serving.key", dir);
    sk_tls_files files = {crt, key, false};
    if (geteuid() != 0) {
        assert_null(sk_tls_ctx_new(&files, "127.0.0.1", e, note, sizeof note));
        return;
    }
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sl_error ce = {0};
        void *ctx = NULL;
        if (setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0)
            ctx = sk_tls_ctx_new(&files, "127.0.0.1", &ce, note, sizeof note);
        else
            sl_error_set(&ce, errno, "dropping to nobody");
        ssize_t n = write(p[1], &ce, sizeof ce);
        _exit(ctx == NULL && n == (ssize_t)sizeof ce ? 0 : 1);
    }
    close(p[1]);
    assert_int_equal(read(p[0], e, sizeof *e), (ssize_t)sizeof *e);
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_made_dir_unwritable(void **state)
{
    fx *f = *state;
    char dir[256], want[1024];
    sl_error e;
    snprintf(dir, sizeof dir, "%s/ro", f->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(chmod(dir, geteuid() == 0 ? 0755 : 0555), 0);
    assert_int_equal(chmod(f->dir, 0755), 0); /* nobody may look, not write */
    make_unprivileged(dir, &e);
    print_message("%s\n", e.msg);
    /* "writing D/serving.key: create D/serving.key.tmpPID: Permission denied" */
    snprintf(want, sizeof want, "writing %s/serving.key: create %s/serving.key.tmp", dir, dir);
    assert_int_equal(strncmp(e.msg, want, strlen(want)), 0);
    const char *tail = ": Permission denied";
    assert_true(strlen(e.msg) > strlen(tail));
    assert_string_equal(e.msg + strlen(e.msg) - strlen(tail), tail);
    assert_int_equal(e.errnum, EACCES);
    assert_int_equal(e.code, 0);
}

static void test_made_path_blocked(void **state)
{
    fx *f = *state;
    char crt[256], key[256], note[512], want[1024];
    sl_error e;
    /* a file where the directory should be made */
    assert_null(make_pair(f->junk, "sub", crt, key, sizeof crt, &e, note, sizeof note));
    snprintf(want, sizeof want, "making %s/sub: mkdir %s/sub: Not a directory", f->junk, f->junk);
    assert_sys(&e, ENOTDIR, want);

    /* a directory where the certificate should be written */
    snprintf(want, sizeof want, "%s/c", f->dir);
    assert_int_equal(mkdir(want, 0700), 0);
    snprintf(want, sizeof want, "%s/c/serving.crt", f->dir);
    assert_int_equal(mkdir(want, 0755), 0);
    assert_null(make_pair(f->dir, "c", crt, key, sizeof crt, &e, note, sizeof note));
    snprintf(want, sizeof want, "writing %s: rename %s: Is a directory", crt, crt);
    assert_sys(&e, EISDIR, want);
}

static void test_client_ctx(void **state)
{
    fx *f = *state;
    char msg[1024], ctx[512];
    sl_error e;
    void *c = sk_tls_client_ctx_new(f->crt, f->crt, f->key, &e); /* self-signed: its own CA */
    assert_non_null(c);
    sk_tls_ctx_free(c);
    assert_non_null(c = sk_tls_client_ctx_new(NULL, NULL, NULL, &e));
    sk_tls_ctx_free(c);

    assert_null(sk_tls_client_ctx_new(f->missing, NULL, NULL, &e));
    snprintf(msg, sizeof msg, "--runtime-tls-ca-file %s: No such file or directory", f->missing);
    assert_sys(&e, ENOENT, msg);

    assert_null(sk_tls_client_ctx_new(f->junk, NULL, NULL, &e));
    snprintf(ctx, sizeof ctx, "--runtime-tls-ca-file %s", f->junk);
    assert_ssl(&e, ERR_LIB_X509, X509_R_NO_CERTIFICATE_OR_CRL_FOUND, ctx,
               "no PEM CA certificates in it");

    assert_null(sk_tls_client_ctx_new(f->crt, f->junk, f->key, &e));
    snprintf(ctx, sizeof ctx, "--runtime-tls-cert-file %s", f->junk);
    assert_ssl(&e, ERR_LIB_PEM, PEM_R_NO_START_LINE, ctx, "no PEM certificate (chain) in it");

    assert_null(sk_tls_client_ctx_new(f->crt, f->crt, f->missing, &e));
    snprintf(msg, sizeof msg, "--runtime-tls-key-file %s: No such file or directory", f->missing);
    assert_sys(&e, ENOENT, msg);

    assert_null(sk_tls_client_ctx_new(f->crt, f->crt, f->junk, &e));
    snprintf(ctx, sizeof ctx, "--runtime-tls-key-file %s", f->junk);
    assert_ssl(&e, ERR_LIB_OSSL_DECODER, ERR_R_UNSUPPORTED, ctx, "no PEM private key in it");

    assert_null(sk_tls_client_ctx_new(f->crt, f->crt, f->key2, &e));
    snprintf(ctx, sizeof ctx, "--runtime-tls-key-file %s", f->key2);
    assert_ssl(&e, ERR_LIB_X509, X509_R_KEY_VALUES_MISMATCH, ctx,
               "does not match --runtime-tls-cert-file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_made_then_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_given_key_bad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_given_cert_bad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_made_dir_unwritable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_made_path_blocked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_ctx, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
