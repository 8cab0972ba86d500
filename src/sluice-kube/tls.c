/* OpenSSL on memory BIOs: the socket stays libuv's, OpenSSL only turns
 * bytes into bytes. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sluice/error.h"

struct sk_tls {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    sl_bufq held;     /* plain bytes written before the handshake finished */
    bool failed;
};

static void ssl_errtext(char *err, size_t len, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    snprintf(err, len, "%s: %s", what, e ? buf : "unknown error");
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static bool is_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* SAN: the listen address (unless a wildcard), plus the loopback names
 * kubeconfigs use. */
static void san_value(const char *address, char *out, size_t len)
{
    const char *base = "IP:127.0.0.1,IP:::1,DNS:localhost";
    bool skip = !*address || !strcmp(address, "127.0.0.1") || !strcmp(address, "::1") ||
                !strcmp(address, "localhost") || !strcmp(address, "0.0.0.0") ||
                !strcmp(address, "::");
    if (skip)
        snprintf(out, len, "%s", base);
    else
        snprintf(out, len, "%s,%s:%s", base, is_ip(address) ? "IP" : "DNS", address);
}

static int set_serial(X509 *x)
{
    unsigned char rnd[16];
    if (RAND_bytes(rnd, sizeof rnd) != 1)
        return -1;
    rnd[0] &= 0x7f; /* positive */
    BIGNUM *bn = BN_bin2bn(rnd, sizeof rnd, NULL);
    if (!bn)
        return -1;
    int ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

static X509 *make_cert(EVP_PKEY *key, const char *address)
{
    X509 *x = X509_new();
    char san[512];
    san_value(address, san, sizeof san);
    X509_NAME *name = x ? X509_get_subject_name(x) : NULL;
    if (!x || !X509_set_version(x, 2) || set_serial(x) < 0 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), (long)SK_TLS_CERT_DAYS * 86400) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"sluice-kube",
                                    -1, -1, 0) ||
        !X509_set_issuer_name(x, name) || !X509_set_pubkey(x, key) ||
        add_ext(x, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign") < 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(x, NID_subject_key_identifier, "hash") < 0 ||
        add_ext(x, NID_subject_alt_name, san) < 0 || !X509_sign(x, key, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int write_cert(X509 *x, const char *path, char *err, size_t errlen)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0755); /* one level; an error shows at fopen */
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
        return -1;
    }
    int ok = PEM_write_X509(f, x);
    if (fclose(f) != 0 || !ok) {
        snprintf(err, errlen, "writing %s failed", path);
        return -1;
    }
    chmod(path, 0644);
    return 0;
}

void *sk_tls_ctx_new(const char *address, const char *cert_path, char *err, size_t errlen)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = key ? make_cert(key, address) : NULL;
    SSL_CTX *ctx = NULL;
    if (!x) {
        ssl_errtext(err, errlen, "making the serving certificate");
        goto out;
    }
    if (write_cert(x, cert_path, err, errlen) < 0)
        goto out;
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
        SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
        ssl_errtext(err, errlen, "setting up TLS");
        SSL_CTX_free(ctx);
        ctx = NULL;
    }
out:
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

void sk_tls_ctx_free(void *ctx)
{
    SSL_CTX_free(ctx);
}

sk_tls *sk_tls_new(void *ctx)
{
    sk_tls *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->ssl = SSL_new(ctx);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (!t->ssl || !t->rbio || !t->wbio) {
        SSL_free(t->ssl);
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        free(t);
        return NULL;
    }
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    SSL_set_accept_state(t->ssl);
    sl_bufq_init(&t->held);
    return t;
}

void sk_tls_free(sk_tls *t)
{
    if (!t)
        return;
    SSL_free(t->ssl);
    sl_bufq_fini(&t->held);
    free(t);
}

static void drain_wbio(sk_tls *t, sl_bufq *out)
{
    char buf[16384];
    int n;
    while ((n = BIO_read(t->wbio, buf, sizeof buf)) > 0)
        sl_bufq_append(out, buf, (size_t)n);
}

static int encrypt(sk_tls *t, const void *data, size_t len, sl_bufq *out)
{
    while (len > 0) {
        int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
        int n = SSL_write(t->ssl, data, chunk);
        if (n <= 0)
            return -1;
        data = (const uint8_t *)data + n;
        len -= (size_t)n;
    }
    drain_wbio(t, out);
    return 0;
}

static int flush_held(sk_tls *t, sl_bufq *out)
{
    if (!SSL_is_init_finished(t->ssl))
        return 0;
    struct iovec iov[16];
    while (sl_bufq_len(&t->held) > 0) {
        int n = sl_bufq_peek(&t->held, iov, 16);
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            if (encrypt(t, iov[i].iov_base, iov[i].iov_len, out) < 0)
                return -1;
            total += iov[i].iov_len;
        }
        sl_bufq_consume(&t->held, total);
    }
    return 0;
}

int sk_tls_recv(sk_tls *t, const uint8_t *in, size_t len, sl_bufq *out,
                void (*plain)(void *arg, const uint8_t *data, size_t len), void *arg)
{
    if (t->failed)
        return -1;
    if (len && BIO_write(t->rbio, in, (int)len) != (int)len)
        return -1;
    uint8_t buf[SK_TLS_PLAIN_CHUNK];
    for (;;) {
        int n = SSL_read(t->ssl, buf, sizeof buf);
        if (n > 0) {
            plain(arg, buf, (size_t)n);
            if (t->failed)
                return -1;
            continue;
        }
        int e = SSL_get_error(t->ssl, n);
        drain_wbio(t, out);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            break;
        t->failed = true; /* includes the peer's close_notify */
        ERR_clear_error();
        return -1;
    }
    return flush_held(t, out);
}

int sk_tls_send(sk_tls *t, const void *data, size_t len, sl_bufq *out)
{
    if (t->failed)
        return -1;
    if (!SSL_is_init_finished(t->ssl) || sl_bufq_len(&t->held) > 0)
        return sl_bufq_append(&t->held, data, len) == SL_OK ? 0 : -1;
    if (encrypt(t, data, len, out) < 0) {
        t->failed = true;
        ERR_clear_error();
        return -1;
    }
    return 0;
}

void sk_tls_shutdown(sk_tls *t, sl_bufq *out)
{
    if (t->failed || !SSL_is_init_finished(t->ssl))
        return;
    SSL_shutdown(t->ssl);
    drain_wbio(t, out);
    ERR_clear_error();
}
