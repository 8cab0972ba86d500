/* The streaming server's TLS context: certificate, key and the optional
 * CA that client certificates must be signed by. */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <string.h>

#include "server/server_impl.h"
#include "server/tls.h"

static const unsigned char alpn_http11[] = "http/1.1";

/* HTTP/1.1 is all the listener speaks: chosen when offered, else no ALPN
 * (an h2-only client then fails at its first request, not here). */
static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    for (unsigned int i = 0; i < inlen; i += 1u + in[i]) {
        if (in[i] == sizeof(alpn_http11) - 1 && i + 1u + in[i] <= inlen &&
            memcmp(in + i + 1, alpn_http11, in[i]) == 0) {
            *out = in + i + 1;
            *outlen = in[i];
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_NOACK;
}

static const char *load_key(SSL_CTX *ctx, const char *key_file)
{
    BIO *b = BIO_new_file(key_file, "r");
    EVP_PKEY *pkey = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!pkey)
        return "key_file: cannot read a PEM private key from it";
    int ok = SSL_CTX_use_PrivateKey(ctx, pkey) == 1 && SSL_CTX_check_private_key(ctx) == 1;
    EVP_PKEY_free(pkey);
    return ok ? NULL : "key_file: the private key does not match the certificate";
}

static const char *load_client_ca(SSL_CTX *ctx, const char *ca_file)
{
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca_file);
    if (!names || SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return "client_ca_file: cannot read PEM CA certificates from it";
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return NULL;
}

static const char *configure(SSL_CTX *ctx, const char *cert_file, const char *key_file,
                             const char *ca_file)
{
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
        return "cannot set the minimum TLS version";
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, NULL);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
        return "cert_file: cannot read a PEM certificate (chain) from it";
    const char *msg = load_key(ctx, key_file);
    if (!msg && ca_file && *ca_file)
        msg = load_client_ca(ctx, ca_file);
    return msg;
}

int sl_server_set_tls(sl_server *s, const char *cert_file, const char *key_file,
                      const char *client_ca_file, const char **errmsg)
{
    *errmsg = NULL;
    if (s->started || s->tls_ctx) {
        *errmsg = "TLS must be set once, before sl_server_start";
        return SL_ERR_INVAL;
    }
    if (!cert_file || !*cert_file || !key_file || !*key_file) {
        *errmsg = !cert_file || !*cert_file ? "cert_file: required with key_file"
                                            : "key_file: required with cert_file";
        return SL_ERR_INVAL;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return SL_ERR_NOMEM;
    *errmsg = configure(ctx, cert_file, key_file, client_ca_file);
    ERR_clear_error(); /* the error queue is per thread: leave it clean */
    if (*errmsg) {
        SSL_CTX_free(ctx);
        return SL_ERR_INVAL;
    }
    s->tls_ctx = ctx;
    return SL_OK;
}

void sl_tls_ctx_free(void *ctx)
{
    SSL_CTX_free(ctx);
}
