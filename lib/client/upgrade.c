/* The client side of the upgrade: what we offer, the request head, and
 * what we accept back. client-go's rules (protocol notes §3.2, §6.4):
 * anything but a well-formed 101 with a protocol we offered is an upgrade
 * failure, and its body is shown (a metav1.Status message if it is one). */
#include "client/upgrade.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "util/base64.h"
#include "sluice/error.h"
#include "ws/ws_handshake.h"

#define USER_AGENT "sluice/0.1"
#define BODY_TEXT_MAX 240 /* characters of a refusal body quoted in the message */

static const char *const rc_spdy[] = {"v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io",
                                      "channel.k8s.io", NULL};
static const char *const rc_ws[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", NULL};
static const char *const pf_spdy[] = {"portforward.k8s.io", NULL};
static const char *const pf_tunnel[] = {"SPDY/3.1+portforward.k8s.io", NULL};
static const char *const pf_legacy[] = {"v4.channel.k8s.io", NULL};

/* ---- URL ------------------------------------------------------------------- */

static int strip_scheme(const char **s)
{
    static const struct {
        const char *p;
        int ok;
    } schemes[] = {{"http://", 1}, {"ws://", 1}, {"https://", 0}, {"wss://", 0}};
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        size_t n = strlen(schemes[i].p);
        if (strncasecmp(*s, schemes[i].p, n) == 0) {
            *s += n;
            return schemes[i].ok ? SL_OK : SL_ERR_UNSUPPORTED;
        }
    }
    return SL_ERR_INVAL;
}

static int parse_port(const char *p, size_t n, uint16_t *port)
{
    unsigned long v = 0;
    if (n == 0 || n > 5)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (unsigned long)(p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

static int parse_authority(sl_client_url *u, const char *a, size_t n, const char **why)
{
    const char *host = a, *colon = NULL;
    size_t hlen;
    if (memchr(a, '@', n)) {
        *why = "user information in the URL is not supported";
        return SL_ERR_INVAL;
    }
    if (n > 0 && a[0] == '[') {
        const char *rb = memchr(a, ']', n);
        if (!rb) {
            *why = "unterminated IPv6 address";
            return SL_ERR_INVAL;
        }
        host = a + 1;
        hlen = (size_t)(rb - host);
        colon = rb + 1 < a + n ? rb + 1 : NULL;
        if (colon && *colon != ':') {
            *why = "malformed host";
            return SL_ERR_INVAL;
        }
        u->ipv6 = 1;
    } else {
        colon = memchr(a, ':', n);
        hlen = colon ? (size_t)(colon - a) : n;
    }
    if (hlen == 0 || hlen > SL_URL_MAX_HOST) {
        *why = hlen ? "host name too long" : "no host";
        return SL_ERR_INVAL;
    }
    for (size_t i = 0; i < hlen; i++) {
        if (!isalnum((unsigned char)host[i]) && !strchr(".-_:%", host[i])) {
            *why = "invalid character in host";
            return SL_ERR_INVAL;
        }
    }
    memcpy(u->host, host, hlen);
    u->host[hlen] = '\0';
    u->port = 80;
    if (colon && parse_port(colon + 1, (size_t)(a + n - colon - 1), &u->port) < 0) {
        *why = "invalid port";
        return SL_ERR_INVAL;
    }
    return SL_OK;
}

int sl_client_url_parse(sl_client_url *u, const char *url, const char **why)
{
    memset(u, 0, sizeof(*u));
    *why = "malformed URL";
    if (!url)
        return SL_ERR_INVAL;
    const char *s = url;
    int rc = strip_scheme(&s);
    if (rc == SL_ERR_UNSUPPORTED)
        *why = "https is not supported (no TLS)";
    if (rc != SL_OK) {
        if (rc == SL_ERR_INVAL)
            *why = "URL must start with http://";
        return rc;
    }
    size_t alen = strcspn(s, "/?#");
    rc = parse_authority(u, s, alen, why);
    if (rc != SL_OK)
        return rc;
    const char *t = s + alen;
    size_t tlen = strcspn(t, "#");
    for (size_t i = 0; i < tlen; i++) {
        if ((unsigned char)t[i] <= ' ' || t[i] == 0x7f) {
            *why = "space or control character in the URL";
            return SL_ERR_INVAL;
        }
    }
    if (tlen > SL_URL_MAX_TARGET) {
        *why = "URL too long";
        return SL_ERR_INVAL;
    }
    u->target = malloc(tlen + 2);
    if (!u->target)
        return SL_ERR_NOMEM;
    /* "http://h:1?q" asks for "/?q" */
    snprintf(u->target, tlen + 2, "%s%.*s", t[0] == '/' ? "" : "/", (int)tlen, t);
    *why = NULL;
    return SL_OK;
}

void sl_client_url_fini(sl_client_url *u)
{
    free(u->target);
    u->target = NULL;
}

/* ---- request --------------------------------------------------------------- */

static const char *const *offers_for(sl_transport t, sl_upgrade_kind k)
{
    if (k == SL_UPGRADE_RC)
        return t == SL_TRANSPORT_SPDY ? rc_spdy : t == SL_TRANSPORT_WEBSOCKET ? rc_ws : NULL;
    switch (t) {
    case SL_TRANSPORT_SPDY:
        return pf_spdy;
    case SL_TRANSPORT_WEBSOCKET_TUNNEL:
        return pf_tunnel;
    case SL_TRANSPORT_WEBSOCKET_LEGACY:
        return pf_legacy;
    default:
        return NULL;
    }
}

int sl_upgrade_init(sl_upgrade *u, sl_transport transport, sl_upgrade_kind kind)
{
    memset(u, 0, sizeof(*u));
    const char *const *o = offers_for(transport, kind);
    if (!o)
        return SL_ERR_INVAL;
    for (size_t i = 0; o[i] && i < SL_UPGRADE_MAX_OFFERS; i++)
        u->offers[i] = o[i];
    u->transport = transport;
    u->kind = kind;
    if (transport == SL_TRANSPORT_SPDY)
        return SL_OK;
    uint8_t raw[16];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return SL_ERR_SYS;
    sl_base64_encode(u->key, raw, sizeof(raw), 0);
    sl_ws_accept_key(u->key, u->accept);
    return SL_OK;
}

static int is_tchar(char c)
{
    return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

int sl_upgrade_headers_ok(const sl_client_header *h, size_t n)
{
    if (n > SL_CLIENT_MAX_HEADERS || (n && !h))
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!h[i].name || !h[i].value || !h[i].name[0])
            return 0;
        for (const char *c = h[i].name; *c; c++)
            if (!is_tchar(*c))
                return 0;
        if (strpbrk(h[i].value, "\r\n"))
            return 0;
    }
    return 1;
}

int sl_upgrade_headers_dup(const sl_client_header *h, size_t n, sl_client_header **out,
                           size_t *nout)
{
    *nout = 0;
    *out = calloc(n ? n : 1, sizeof(**out));
    if (!*out)
        return SL_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        (*out)[i].name = strdup(h[i].name);
        (*out)[i].value = strdup(h[i].value);
        ++*nout;
        if (!(*out)[i].name || !(*out)[i].value)
            return SL_ERR_NOMEM;
    }
    return SL_OK;
}

void sl_upgrade_headers_free(sl_client_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)h[i].name);
        free((char *)h[i].value);
    }
    free(h);
}

static int write_host(const sl_client_url *url, sl_bufq *out)
{
    if (url->ipv6)
        return sl_bufq_appendf(out, "Host: [%s]:%u\r\n", url->host, url->port);
    return sl_bufq_appendf(out, "Host: %s:%u\r\n", url->host, url->port);
}

static int write_protocols(const sl_upgrade *u, sl_bufq *out)
{
    int rc = SL_OK;
    if (u->transport == SL_TRANSPORT_SPDY) {
        for (size_t i = 0; u->offers[i] && rc == SL_OK; i++)
            rc = sl_bufq_appendf(out, "X-Stream-Protocol-Version: %s\r\n", u->offers[i]);
        return rc;
    }
    rc = sl_bufq_appendf(out, "Sec-WebSocket-Protocol: ");
    for (size_t i = 0; u->offers[i] && rc == SL_OK; i++)
        rc = sl_bufq_appendf(out, "%s%s", i ? ", " : "", u->offers[i]);
    return rc == SL_OK ? sl_bufq_appendf(out, "\r\n") : rc;
}

int sl_upgrade_write_request(const sl_upgrade *u, const sl_client_url *url,
                             const sl_client_header *h, size_t n, sl_bufq *out)
{
    bool spdy = u->transport == SL_TRANSPORT_SPDY;
    /* POST for SPDY and GET for WebSocket, as client-go does. */
    int rc = sl_bufq_appendf(out, "%s %s HTTP/1.1\r\n", spdy ? "POST" : "GET", url->target);
    if (rc == SL_OK)
        rc = write_host(url, out);
    if (rc == SL_OK)
        rc = sl_bufq_appendf(out, "User-Agent: %s\r\n", USER_AGENT);
    if (rc == SL_OK && spdy)
        rc = sl_bufq_appendf(out, "Content-Length: 0\r\nConnection: Upgrade\r\n"
                                  "Upgrade: SPDY/3.1\r\n");
    if (rc == SL_OK && !spdy)
        rc = sl_bufq_appendf(out,
                             "Connection: Upgrade\r\nUpgrade: websocket\r\n"
                             "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
                             u->key);
    if (rc == SL_OK)
        rc = write_protocols(u, out);
    for (size_t i = 0; i < n && rc == SL_OK; i++)
        rc = sl_bufq_appendf(out, "%s: %s\r\n", h[i].name, h[i].value);
    return rc == SL_OK ? sl_bufq_appendf(out, "\r\n") : rc;
}

/* ---- response ------------------------------------------------------------ */

static const char *offered(const sl_upgrade *u, const char *p)
{
    for (size_t i = 0; u->offers[i]; i++)
        if (strcmp(u->offers[i], p) == 0)
            return u->offers[i];
    return NULL;
}

/* The server's explanation: a metav1.Status message, or the body's first
 * line, printable characters only, bounded. */
static void body_text(const sl_http_response *r, char *dst, size_t cap)
{
    dst[0] = '\0';
    if (!r->body || r->body_len == 0)
        return;
    const char *src = (const char *)r->body;
    json_t *j = json_loadb(src, r->body_len, 0, NULL);
    const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
    if (m)
        src = m;
    size_t o = 0;
    for (size_t i = 0; src[i] && src[i] != '\n' && o + 1 < cap && o < BODY_TEXT_MAX; i++)
        dst[o++] = (src[i] >= ' ' && src[i] != 0x7f) ? src[i] : '?';
    while (o > 0 && dst[o - 1] == ' ')
        o--;
    dst[o] = '\0';
    json_decref(j);
}

typedef struct list_acc {
    char *buf;
    size_t cap, len;
} list_acc;

static int add_elem(const char *elem, size_t len, void *arg)
{
    list_acc *a = arg;
    int w =
        snprintf(a->buf + a->len, a->cap - a->len, "%s%.*s", a->len ? ", " : "", (int)len, elem);
    if (w > 0)
        a->len += (size_t)w < a->cap - a->len ? (size_t)w : a->cap - a->len - 1;
    return 0;
}

static void offers_list(const sl_upgrade *u, char *dst, size_t cap)
{
    list_acc a = {dst, cap, 0};
    dst[0] = '\0';
    for (size_t i = 0; u->offers[i]; i++)
        add_elem(u->offers[i], strlen(u->offers[i]), &a);
}

static void refused(const sl_upgrade *u, const sl_http_response *r, char *msg, size_t cap)
{
    char text[BODY_TEXT_MAX + 1], accepts[256] = "";
    body_text(r, text, sizeof(text));
    if (r->status == 404) {
        snprintf(msg, cap, "token expired or unknown (404)%s%s", text[0] ? ": " : "", text);
        return;
    }
    list_acc a = {accepts, sizeof(accepts), 0};
    sl_http_resp_each(r, "X-Accepted-Stream-Protocol-Versions", add_elem, &a);
    int off = snprintf(msg, cap, "upgrade refused: %d %s%s%s", r->status,
                       r->reason ? r->reason : "", text[0] ? ": " : "", text);
    if (off < 0 || (size_t)off >= cap)
        return;
    if (accepts[0] && !strstr(text, "server accepts")) {
        snprintf(msg + off, cap - (size_t)off, "; server accepts [%s]", accepts);
    } else if (!accepts[0] && r->status == 403 && !text[0]) {
        char ours[256];
        offers_list(u, ours, sizeof(ours));
        snprintf(msg + off, cap - (size_t)off, ": server accepts none of [%s]", ours);
    }
}

static int check_spdy(const sl_upgrade *u, const sl_http_response *r, const char **chosen,
                      char *msg, size_t cap)
{
    if (!sl_http_resp_contains(r, "Connection", "upgrade") ||
        !sl_http_resp_contains(r, "Upgrade", "spdy/3.1")) {
        snprintf(msg, cap,
                 "invalid upgrade response: missing Connection: Upgrade or "
                 "Upgrade: SPDY/3.1");
        return -1;
    }
    const char *p = sl_http_resp_header(r, "X-Stream-Protocol-Version");
    if (!p || !p[0]) {
        /* client-go assumes v1 for remote command; port-forward needs it */
        *chosen = offered(u, u->kind == SL_UPGRADE_RC ? "channel.k8s.io" : "");
        if (!*chosen)
            snprintf(msg, cap, "invalid upgrade response: no X-Stream-Protocol-Version");
        return *chosen ? 0 : -1;
    }
    *chosen = offered(u, p);
    if (!*chosen)
        snprintf(msg, cap, "invalid upgrade response: protocol %.100s was not offered", p);
    return *chosen ? 0 : -1;
}

static int check_ws(const sl_upgrade *u, const sl_http_response *r, const char **chosen, char *msg,
                    size_t cap)
{
    const char *acc = sl_http_resp_header(r, "Sec-WebSocket-Accept");
    if (!sl_http_resp_has_token(r, "Upgrade", "websocket") ||
        !sl_http_resp_contains(r, "Connection", "upgrade")) {
        snprintf(msg, cap,
                 "invalid upgrade response: missing Connection: Upgrade or "
                 "Upgrade: websocket");
        return -1;
    }
    if (!acc || strcmp(acc, u->accept) != 0) {
        snprintf(msg, cap, "invalid upgrade response: wrong Sec-WebSocket-Accept");
        return -1;
    }
    const char *p = sl_http_resp_header(r, "Sec-WebSocket-Protocol");
    *chosen = p ? offered(u, p) : NULL;
    if (!*chosen) {
        char ours[256];
        offers_list(u, ours, sizeof(ours));
        snprintf(msg, cap, "invalid upgrade response: subprotocol \"%.100s\", expected one of [%s]",
                 p ? p : "", ours);
        return -1;
    }
    return 0;
}

/* The message quotes the server (reason, headers, body): no control
 * byte of it may reach a terminal. */
static void sanitize(char *msg)
{
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < ' ' || *c == 0x7f)
            *c = '?';
}

int sl_upgrade_check(const sl_upgrade *u, const sl_http_response *r, const char **chosen, char *msg,
                     size_t cap)
{
    *chosen = NULL;
    msg[0] = '\0';
    int rc = -1;
    if (r->status != 101)
        refused(u, r, msg, cap);
    else if (u->transport == SL_TRANSPORT_SPDY)
        rc = check_spdy(u, r, chosen, msg, cap);
    else
        rc = check_ws(u, r, chosen, msg, cap);
    sanitize(msg);
    return rc;
}

int sl_upgrade_rc_version(const char *proto)
{
    if (proto && proto[0] == 'v' && proto[1] >= '2' && proto[1] <= '5' && proto[2] == '.')
        return proto[1] - '0';
    return 1;
}
