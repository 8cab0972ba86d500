/* Streaming URLs (protocol notes §2.2): building "<origin><prefix><method>/<token>"
 * for GetExec/GetAttach/GetPortForward answers, and matching incoming request
 * paths against the same route prefix. Pure string code, no I/O. */
#ifndef SL_URL_H
#define SL_URL_H

#include <stddef.h>
#include <stdint.h>

#define SL_URL_MAX_BASE_PATH 1024 /* bytes of a configured base path */
#define SL_URL_MAX_HOSTPORT 512   /* bytes of "host:port" / "[v6]:port" */
#define SL_URL_MAX_TOKEN 64       /* longest token accepted in a request path */

/* A normalised base, embedded by its owner; fields are read-only. */
typedef struct sl_url_base {
    char *origin;      /* "scheme://hostport", scheme lower-cased */
    char *prefix;      /* route prefix: starts and ends with '/' */
    size_t prefix_len; /* strlen(prefix) */
} sl_url_base;

/* Formats host and port for a URL authority into dst (n bytes, NUL added):
 * "host:port", or "[host]:port" when host is an IPv6 literal (contains ':').
 * An IPv6 zone ("fe80::1%eth0") is written percent-encoded ("%25eth0", RFC
 * 6874); an empty zone or a second '%' is rejected. A host already in
 * brackets is kept as is (its zone must already be encoded). Returns the length written
 * (without NUL), or SL_ERR_INVAL when host is NULL or empty, contains a byte
 * not allowed in an authority, or the result does not fit in n. */
int sl_url_format_hostport(char *dst, size_t n, const char *host, uint16_t port);

/* Initialises b from a scheme (NULL = "http"; RFC 3986 syntax), an
 * authority formatted by sl_url_format_hostport (non-empty, shorter than
 * SL_URL_MAX_HOSTPORT, only unreserved, sub-delim, ':', '%', '[' and ']'
 * characters) and a base path (NULL or "" = "/", shorter than
 * SL_URL_MAX_BASE_PATH).
 * The base path must start with '/' and consist of segments of unreserved,
 * sub-delim, ':' and '@' characters; empty segments ("//"), "." and ".."
 * segments, '%', '?' and '#' are rejected, so the URL we hand out and the
 * route we match cannot disagree. The route prefix is the base path up to
 * and including its last '/' (RFC 3986 merge, Go's path.Dir): "/cri/" ->
 * "/cri/", "/cri" -> "/", "/" -> "/".
 * Returns SL_OK, SL_ERR_INVAL for a bad argument, SL_ERR_NOMEM. On error b is
 * left zeroed (sl_url_base_fini is still safe). */
int sl_url_base_init(sl_url_base *b, const char *scheme, const char *hostport,
                     const char *base_path);

/* Frees what b owns and zeroes it. Safe on a zeroed or already-finished b. */
void sl_url_base_fini(sl_url_base *b);

/* Returns a malloc'd "<origin><prefix><method>/<token>", e.g.
 * "http://127.0.0.1:10010/exec/AbC...", owned by the caller. method must be
 * "exec", "attach" or "portforward" and token 1..SL_URL_MAX_TOKEN characters
 * of [A-Za-z0-9_-]. Returns NULL for a bad argument or on ENOMEM. */
char *sl_url_build(const sl_url_base *b, const char *method, const char *token);

/* Matches a request path (NUL-terminated origin-form target, as sent on the
 * request line) of the form "<prefix>{exec|attach|portforward}/<token>",
 * optionally followed by "?query" which is ignored (§2.2). The token is
 * 1..SL_URL_MAX_TOKEN characters of [A-Za-z0-9_-] and nothing may follow it
 * (no further segment, no trailing '/'). No percent-decoding is done.
 * On success returns SL_OK and sets the non-NULL out pointers to the method
 * and token within path (not NUL-terminated; use the lengths). Otherwise
 * returns SL_ERR_NOTFOUND and leaves the outputs untouched. */
int sl_url_match(const sl_url_base *b, const char *path, const char **method, size_t *method_len,
                 const char **token, size_t *token_len);

#endif
