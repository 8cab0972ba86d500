#include "server/spdy_upgrade.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/http_response.h"
#include "sluice/error.h"

#define OFFER_TEXT_MAX 1024

typedef struct pick {
    const char *const *supported;
    const char *chosen;
    char offered[OFFER_TEXT_MAX]; /* "[a b c]" for the 403 text */
    size_t olen;
} pick;

static int each_offer(const char *elem, size_t len, void *arg)
{
    pick *p = arg;
    if (len == 0)
        return 0;
    int n = snprintf(p->offered + p->olen, sizeof(p->offered) - p->olen, "%s%.*s",
                     p->olen > 1 ? " " : "", (int)len, elem);
    if (n > 0 && p->olen + (size_t)n < sizeof(p->offered))
        p->olen += (size_t)n;
    for (size_t i = 0; p->supported[i] && !p->chosen; i++)
        if (strlen(p->supported[i]) == len && !memcmp(p->supported[i], elem, len))
            p->chosen = p->supported[i];
    return 0; /* keep walking: the whole offer goes into the error text */
}

/* Header value contains token as a substring, case-insensitively (Go's
 * httpstream.IsUpgradeRequest does the same). */
static int has_sub(const sl_http_request *r, const char *name, const char *token)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcasecmp(r->headers[i].name, name) && strcasestr(r->headers[i].value, token))
            return 1;
    return 0;
}

int sl_spdy_upgrade(const sl_http_request *r, const char *const *supported, const char **chosen,
                    sl_bufq *out)
{
    *chosen = NULL;
    if (!has_sub(r, "Connection", "upgrade") || !has_sub(r, "Upgrade", "spdy/3.1"))
        return sl_http_write_error(out, 400, NULL,
                                   "unable to upgrade: missing upgrade headers in request: "
                                   "want Connection: Upgrade and Upgrade: SPDY/3.1\n") < 0
                   ? -1
                   : 400;
    pick p = {.supported = supported, .offered = "["};
    p.olen = 1;
    sl_http_header_each(r, "X-Stream-Protocol-Version", each_offer, &p);
    if (p.olen == 1)
        return sl_http_write_error(out, 400, NULL,
                                   "unable to upgrade: X-Stream-Protocol-Version is required\n") < 0
                   ? -1
                   : 400;
    if (!p.chosen) {
        char hdrs[1024], accepted[512];
        size_t h = 0, a = 0;
        for (size_t i = 0; supported[i]; i++) {
            h += (size_t)snprintf(hdrs + h, sizeof(hdrs) - h,
                                  "X-Accepted-Stream-Protocol-Versions: %s\r\n", supported[i]);
            a += (size_t)snprintf(accepted + a, sizeof(accepted) - a, "%s%s", i ? " " : "",
                                  supported[i]);
        }
        char body[OFFER_TEXT_MAX + 700];
        snprintf(body, sizeof(body),
                 "unable to upgrade: unable to negotiate protocol: client supports %s], server "
                 "accepts [%s]\n",
                 p.offered, accepted);
        return sl_http_write_error(out, 403, hdrs, body) < 0 ? -1 : 403;
    }
    *chosen = p.chosen;
    char hdrs[256];
    snprintf(hdrs, sizeof(hdrs),
             "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: %s\r\n",
             p.chosen);
    return sl_http_write_101(out, hdrs) < 0 ? -1 : 0;
}
