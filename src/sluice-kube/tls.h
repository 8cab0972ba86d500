/* TLS for the front's listener: a self-signed serving certificate made at
 * start (EC P-256, SAN for the listen address, 127.0.0.1 and localhost),
 * and per-connection OpenSSL sessions on memory BIOs so libuv keeps all
 * socket I/O. */
#ifndef SK_TLS_H
#define SK_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys_error.h"
#include "util/bufq.h"

#define SK_TLS_CERT_DAYS 365
#define SK_TLS_RENEW_DAYS 30 /* a stored certificate closer to its end is remade */
#define SK_TLS_PLAIN_CHUNK 16384u

typedef struct sk_tls sk_tls;

/* Where the serving certificate and key are. given: the operator's
 * (--tls-cert-file/--tls-private-key-file; the certificate file may hold
 * a chain), loaded as they are; else the front's own self-signed pair,
 * reused across restarts (so kubeconfigs keep working) and remade when
 * missing, unreadable, not matching, near expiry or not naming the listen
 * address (key 0600, certificate 0644, missing directories 0700). */
typedef struct sk_tls_files {
    const char *cert;
    const char *key;
    bool given;
} sk_tls_files;

/* The errors of the set-up functions below fill an sl_error: msg names
 * the flag or step and the file, then the cause; errnum is the errno of a
 * file that could not be opened, read, made or written (0 otherwise);
 * code is OpenSSL's packed error code of the cause (ERR_GET_LIB and
 * ERR_GET_REASON read it), 0 when the cause is errno's or OpenSSL gave
 * none. */

/* Returns an SSL_CTX *, or NULL with *e filled; note says whether a
 * stored pair was reused or a new one made (empty for given files). */
void *sk_tls_ctx_new(const sk_tls_files *f, const char *address, sl_error *e, char *note,
                     size_t notelen);
void sk_tls_ctx_free(void *ctx);

/* A server-side session; NULL on allocation failure. */
sk_tls *sk_tls_new(void *ctx);
void sk_tls_free(sk_tls *t);

/* Feeds ciphertext from the peer. Decrypted bytes go to plain(arg, ...);
 * records to send (handshake, alerts, flushed writes) are appended to out.
 * Returns 0, or -1 when the session failed or the peer closed it. */
int sk_tls_recv(sk_tls *t, const uint8_t *in, size_t len, sl_bufq *out,
                void (*plain)(void *arg, const uint8_t *data, size_t len), void *arg);
/* Encrypts len bytes into out (held until the handshake is done).
 * Returns 0 or -1. */
int sk_tls_send(sk_tls *t, const void *data, size_t len, sl_bufq *out);
/* Appends close_notify. */
void sk_tls_shutdown(sk_tls *t, sl_bufq *out);

/* The client side, towards the runtime's https streaming URLs: a context
 * trusting ca_file (NULL: the system's CAs) and presenting cert_file and
 * key_file (both NULL: no client certificate). NULL with *e naming the
 * flag and the file on failure. */
void *sk_tls_client_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                            sl_error *e);
/* A client session that checks the server's certificate names host (an
 * IP literal or a DNS name, also sent as SNI). Start it with
 * sk_tls_recv(t, NULL, 0, out, ...): the ClientHello goes to out. */
sk_tls *sk_tls_client_new(void *ctx, const char *host);
bool sk_tls_handshaken(const sk_tls *t);
/* Why the peer's certificate was not accepted, or NULL. */
const char *sk_tls_verify_error(const sk_tls *t);

/* Fills *e from OpenSSL's error queue and empties it; returns -1. msg is
 * fmt's context, then ": what" (when not NULL) and ": " OpenSSL's reason
 * for its first error; a failed system call in the queue (a file it could
 * not open) gives errnum and errno's text instead. */
int sk_tls_error(sl_error *e, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
