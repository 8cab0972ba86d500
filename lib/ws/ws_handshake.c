#include "ws/ws_handshake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "http/http_response.h"
#include "util/base64.h"
#include "sluice/error.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_B64_LEN 24 /* base64 of the 16-byte nonce */
#define WS_KEY_RAW_LEN 16
#define WS_VERSION "13"

int sl_ws_is_upgrade(const sl_http_request *r)
{
    return sl_http_header_has_token(r, "Upgrade", "websocket") &&
           sl_http_header_has_token(r, "Connection", "upgrade");
}

void sl_ws_accept_key(const char *key, char out[29])
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && EVP_DigestInit_ex(c, EVP_sha1(), NULL) && EVP_DigestUpdate(c, key, strlen(key)) &&
             EVP_DigestUpdate(c, WS_GUID, sizeof(WS_GUID) - 1) &&
             EVP_DigestFinal_ex(c, md, &mdlen) && mdlen == 20;
    EVP_MD_CTX_free(c);
    if (!ok) {
        out[0] = '\0'; /* only on allocation failure inside libcrypto */
        return;
    }
    sl_base64_encode(out, md, 20, 0);
}

static int key_valid(const char *key)
{
    uint8_t raw[WS_KEY_B64_LEN];
    if (!key || strlen(key) != WS_KEY_B64_LEN)
        return 0;
    return sl_base64_decode(raw, key, WS_KEY_B64_LEN) == WS_KEY_RAW_LEN;
}

typedef struct proto_pick {
    const char *const *allowed;
    const char *chosen;
    int offered; /* the client offered at least one non-empty name */
} proto_pick;

static int pick_elem(const char *elem, size_t len, void *arg)
{
    proto_pick *p = arg;
    if (len == 0)
        return 0; /* "" is reserved for "no header" */
    p->offered = 1;
    for (const char *const *a = p->allowed; *a; a++) {
        if (strlen(*a) == len && memcmp(*a, elem, len) == 0) {
            p->chosen = *a;
            return 1;
        }
    }
    return 0;
}

/* Returns the entry of allowed to use, or NULL (403). A header with no
 * non-empty element counts as no header, as in Go's x/net/websocket. */
static const char *choose_protocol(const sl_http_request *r, const char *const *allowed)
{
    proto_pick p = {allowed, NULL, 0};
    sl_http_header_each(r, "Sec-WebSocket-Protocol", pick_elem, &p);
    if (p.offered)
        return p.chosen;
    for (const char *const *a = allowed; *a; a++)
        if ((*a)[0] == '\0')
            return *a;
    return NULL;
}

static int fail(sl_bufq *out, int status, const char *extra, const char *body)
{
    return sl_http_write_error(out, status, extra, body) == SL_OK ? status : -1;
}

static int accept_upgrade(const char *key, const char *chosen, sl_bufq *out)
{
    char accept[29];
    sl_ws_accept_key(key, accept);
    if (accept[0] == '\0')
        return -1;
    /* The protocol header only when one was chosen (RFC 6455 §4.2.2). */
    const char *pre = chosen[0] ? "Sec-WebSocket-Protocol: " : "";
    const char *post = chosen[0] ? "\r\n" : "";
#define HDRS_FMT "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s%s%s"
    int n = snprintf(NULL, 0, HDRS_FMT, accept, pre, chosen, post);
    char *hdrs = n < 0 ? NULL : malloc((size_t)n + 1);
    if (!hdrs)
        return -1;
    snprintf(hdrs, (size_t)n + 1, HDRS_FMT, accept, pre, chosen, post);
#undef HDRS_FMT
    int rv = sl_http_write_101(out, hdrs);
    free(hdrs);
    return rv == SL_OK ? 0 : -1;
}

int sl_ws_handshake(const sl_http_request *r, const char *const *allowed, const char **chosen,
                    sl_bufq *out)
{
    if (!r->method || strcmp(r->method, "GET") != 0)
        return fail(out, 405, "Allow: GET\r\n", "method not allowed\n");
    if (!sl_ws_is_upgrade(r))
        return fail(out, 400, NULL, "missing upgrade headers\n");
    const char *key = sl_http_header_get(r, "Sec-WebSocket-Key");
    if (!key_valid(key))
        return fail(out, 400, NULL, "missing or invalid Sec-WebSocket-Key\n");
    const char *ver = sl_http_header_get(r, "Sec-WebSocket-Version");
    if (!ver || strcmp(ver, WS_VERSION) != 0)
        return fail(out, 400, "Sec-WebSocket-Version: " WS_VERSION "\r\n",
                    "unsupported Sec-WebSocket-Version\n");
    const char *proto = choose_protocol(r, allowed);
    if (!proto)
        return fail(out, 403, NULL, "");
    if (accept_upgrade(key, proto, out) != 0)
        return -1;
    *chosen = proto;
    return 0;
}
