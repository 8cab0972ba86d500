/* The TLS context for the runtime's https streaming URLs: whom to trust
 * (--runtime-tls-ca-file, else the system's CAs) and the certificate to
 * present (--runtime-tls-cert-file/--runtime-tls-key-file). */
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>

#include "tls.h"

static void *fail(SSL_CTX *ctx, char *err, size_t errlen, const char *flag, const char *file,
                  const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char reason[256] = "";
    if (e)
        ERR_error_string_n(e, reason, sizeof reason);
    snprintf(err, errlen, "%s \"%s\": %s%s%s", flag, file, what, *reason ? ": " : "", reason);
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}

void *sk_tls_client_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                            char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        snprintf(err, errlen, "cannot make a TLS client context");
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (ca_file && SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1)
        return fail(ctx, err, errlen, "--runtime-tls-ca-file", ca_file, "no PEM CA certificates");
    if (!ca_file && SSL_CTX_set_default_verify_paths(ctx) != 1)
        return fail(ctx, err, errlen, "the system's CA certificates", "", "cannot load");
    if (cert_file && SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
        return fail(ctx, err, errlen, "--runtime-tls-cert-file", cert_file, "no PEM certificate");
    if (key_file && SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)
        return fail(ctx, err, errlen, "--runtime-tls-key-file", key_file, "no PEM private key");
    if (cert_file && SSL_CTX_check_private_key(ctx) != 1)
        return fail(ctx, err, errlen, "--runtime-tls-key-file", key_file,
                    "does not match --runtime-tls-cert-file");
    return ctx;
}
