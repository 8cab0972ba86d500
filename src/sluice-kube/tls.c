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
#include <time.h>

#include "fsutil.h"

#include "sluice/error.h"

#define SK_STR_(x) #x
#define SK_STR(x) SK_STR_(x)

struct sk_tls {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    sl_bufq held;     /* plain bytes written before the handshake finished */
    bool failed;
};

int sk_tls_error(sl_error *e, const char *what, const char *fmt, ...)
{
    unsigned long first = ERR_peek_error(), sys = 0, err;
    while ((err = ERR_get_error()) != 0)
        if (!sys && ERR_SYSTEM_ERROR(err))
            sys = err;
    char ctx[SL_SYS_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    if (sys) /* a file OpenSSL could not open: errno says it all */
        return sl_error_set(e, ERR_GET_REASON(sys), "%s", ctx);
    const char *reason = first ? ERR_reason_error_string(first) : NULL;
    char buf[256];
    if (first && !reason) {
        ERR_error_string_n(first, buf, sizeof buf);
        reason = buf;
    }
    if (!what)
        return sl_error_code(e, (int)first, "%s: %s", ctx,
                             reason ? reason : "unknown OpenSSL error");
    return sl_error_code(e, (int)first, "%s: %s%s%s", ctx, what, reason ? ": " : "",
                         reason ? reason : "");
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

/* PEM of x (or of key) in a malloc'd buffer; NULL on failure. */
static char *pem_of(X509 *x, EVP_PKEY *key, size_t *len)
{
    BIO *b = BIO_new(BIO_s_mem());
    int ok = b && (x ? PEM_write_bio_X509(b, x)
                     : PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL));
    char *data = NULL;
    long n = ok ? BIO_get_mem_data(b, &data) : 0;
    char *out = n > 0 ? malloc((size_t)n) : NULL;
    if (out) {
        memcpy(out, data, (size_t)n);
        *len = (size_t)n;
    }
    BIO_free(b);
    return out;
}

static int write_pem(X509 *x, EVP_PKEY *key, const char *path, int mode, sl_error *e)
{
    size_t len = 0;
    SL_AUTOFREE char *pem = pem_of(x, key, &len);
    if (!pem)
        return sk_tls_error(e, "cannot encode PEM", "writing %s", path);
    int rc = sl_write_file_atomic(path, pem, len, mode, e);
    OPENSSL_cleanse(pem, len);
    return rc < 0 ? sl_error_wrap(e, "writing %s", path) : 0;
}

/* The directory of path, made 0700 when missing (it holds the key). */
static int make_parent(const char *path, sl_error *e)
{
    SL_AUTOFREE char *dir = strdup(path);
    if (!dir)
        return sl_error_set(e, ENOMEM, "making the directory of %s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return sl_mkdir_p(dir, 0700, e) < 0 ? sl_error_wrap(e, "making %s", dir) : 0;
}

static X509 *read_cert(const char *path)
{
    FILE *f = fopen(path, "r");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    return x;
}

static EVP_PKEY *read_key(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    return k;
}

/* The operator's key (--tls-private-key-file); NULL with e naming the
 * flag, the file and the cause. */
static EVP_PKEY *load_key(const char *path, sl_error *e)
{
    ERR_clear_error();
    FILE *f = fopen(path, "r");
    if (!f) {
        sl_error_set(e, errno, "--tls-private-key-file %s", path);
        return NULL;
    }
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!k)
        sk_tls_error(e, "no PEM private key in it", "--tls-private-key-file %s", path);
    return k;
}

/* Why a stored pair cannot serve address any more, or NULL when it can:
 * the key must match, the certificate must be valid for another
 * SK_TLS_RENEW_DAYS and name a specific listen address. */
static const char *stale_reason(X509 *x, EVP_PKEY *key, const char *address)
{
    if (X509_check_private_key(x, key) != 1)
        return "the key does not match the certificate";
    time_t soon = time(NULL) + (time_t)SK_TLS_RENEW_DAYS * 86400;
    if (X509_cmp_time(X509_get0_notAfter(x), &soon) < 0)
        return "the certificate expires within " SK_STR(SK_TLS_RENEW_DAYS) " days";
    bool wildcard = !strcmp(address, "0.0.0.0") || !strcmp(address, "::");
    if (is_ip(address) && !wildcard && X509_check_ip_asc(x, address, 0) != 1)
        return "the certificate does not name the listen address";
    return NULL;
}

/* Loads the stored pair at cert_path/key_path when both exist and still
 * serve address; otherwise makes and stores a new one. note says which. */
static int load_or_make(const sk_tls_files *f, const char *address, X509 **xo, EVP_PKEY **ko,
                        sl_error *e, char *note, size_t notelen)
{
    X509 *x = read_cert(f->cert);
    EVP_PKEY *key = x ? read_key(f->key) : NULL;
    const char *why = !x ? "none stored" : !key ? "no readable key" : stale_reason(x, key, address);
    if (!why) {
        snprintf(note, notelen, "reusing the certificate %s and key %s", f->cert, f->key);
        *xo = x;
        *ko = key;
        return 0;
    }
    X509_free(x);
    EVP_PKEY_free(key);
    ERR_clear_error();
    key = EVP_EC_gen("P-256");
    x = key ? make_cert(key, address) : NULL;
    if (!x) {
        EVP_PKEY_free(key);
        return sk_tls_error(e, NULL, "making the serving certificate");
    }
    if (make_parent(f->key, e) < 0 || make_parent(f->cert, e) < 0 ||
        write_pem(NULL, key, f->key, 0600, e) < 0 || write_pem(x, NULL, f->cert, 0644, e) < 0) {
        X509_free(x);
        EVP_PKEY_free(key);
        return -1;
    }
    snprintf(note, notelen, "made a new certificate %s and key %s (%s)", f->cert, f->key, why);
    *xo = x;
    *ko = key;
    return 0;
}

/* A server context serving key with x, or with the operator's chain
 * (f->given: the file --tls-cert-file). */
static SSL_CTX *ctx_with(X509 *x, EVP_PKEY *key, const sk_tls_files *f, sl_error *e)
{
    const char *chain = f->given ? f->cert : NULL;
    ERR_clear_error(); /* so that a failure reports its own cause */
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
        (!chain && SSL_CTX_use_certificate(ctx, x) != 1)) {
        sk_tls_error(e, NULL, "setting up TLS");
    } else if (chain && SSL_CTX_use_certificate_chain_file(ctx, chain) != 1) {
        sk_tls_error(e, "no PEM certificate (chain) in it", "--tls-cert-file %s", chain);
    } else if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        if (chain)
            sk_tls_error(e, "does not match --tls-cert-file", "--tls-private-key-file %s", f->key);
        else
            sk_tls_error(e, NULL, "setting up TLS");
    } else {
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}

void *sk_tls_ctx_new(const sk_tls_files *f, const char *address, sl_error *e, char *note,
                     size_t notelen)
{
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    SSL_CTX *ctx = NULL;
    *note = '\0';
    if (f->given) {
        if ((key = load_key(f->key, e)))
            ctx = ctx_with(NULL, key, f, e);
    } else if (load_or_make(f, address, &x, &key, e, note, notelen) == 0) {
        ctx = ctx_with(x, key, f, e);
    }
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

/* ---- the client side: towards the runtime's https streaming URL ---- */

sk_tls *sk_tls_client_new(void *ctx, const char *host)
{
    sk_tls *t = sk_tls_new(ctx);
    if (!t)
        return NULL;
    SSL_set_connect_state(t->ssl);
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    X509_VERIFY_PARAM *p = SSL_get0_param(t->ssl);
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host)
                   : SSL_set1_host(t->ssl, host) && SSL_set_tlsext_host_name(t->ssl, host);
    if (!ok) {
        sk_tls_free(t);
        return NULL;
    }
    return t;
}

bool sk_tls_handshaken(const sk_tls *t)
{
    return SSL_is_init_finished(t->ssl);
}

const char *sk_tls_verify_error(const sk_tls *t)
{
    long v = SSL_get_verify_result(t->ssl);
    return v == X509_V_OK ? NULL : X509_verify_cert_error_string(v);
}
