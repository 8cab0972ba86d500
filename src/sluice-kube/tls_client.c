/* The TLS context for the runtime's https streaming URLs: whom to trust
 * (--runtime-tls-ca-file, else the system's CAs) and the certificate to
 * present (--runtime-tls-cert-file/--runtime-tls-key-file). */
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdbool.h>

#include "tls.h"

/* OpenSSL checks a key against the certificate already loaded as it loads
 * the key: a mismatch is not a bad key file. */
static bool key_mismatch(void)
{
    unsigned long e = ERR_peek_error();
    return ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH;
}

void *sk_tls_client_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                            sl_error *e)
{
    ERR_clear_error(); /* so that a failure reports its own cause */
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
        sk_tls_error(e, NULL, "cannot make a TLS client context");
    else if (ca_file && SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1)
        sk_tls_error(e, "no PEM CA certificates in it", "--runtime-tls-ca-file %s", ca_file);
    else if (!ca_file && SSL_CTX_set_default_verify_paths(ctx) != 1)
        sk_tls_error(e, NULL, "cannot load the system's CA certificates");
    else if (cert_file && SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
        sk_tls_error(e, "no PEM certificate (chain) in it", "--runtime-tls-cert-file %s",
                     cert_file);
    else if (key_file && SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)
        sk_tls_error(e,
                     key_mismatch() ? "does not match --runtime-tls-cert-file"
                                    : "no PEM private key in it",
                     "--runtime-tls-key-file %s", key_file);
    else if (cert_file && SSL_CTX_check_private_key(ctx) != 1)
        sk_tls_error(e, "does not match --runtime-tls-cert-file", "--runtime-tls-key-file %s",
                     key_file);
    else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}
