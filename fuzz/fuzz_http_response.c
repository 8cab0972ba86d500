/* Fuzz target for the client's HTTP response parser and the upgrade
 * checks: the input is fed in two parts cut at data[0] (mod size), the
 * close follows, then the invariants are checked and a finished answer
 * goes through every transport's upgrade check. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "client/upgrade.h"
#include "http/http_resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        __builtin_trap();
}

static void check_done(const sl_http_resp_parser *p)
{
    const sl_http_response *r = &p->resp;
    check(r->status >= 100 && r->status <= 999);
    check(r->status < 100 || r->status > 199 || r->status == 101);
    check(r->http_major == 1 && r->reason != NULL);
    check(r->nheaders <= p->limits.max_headers);
    check(r->body_len <= p->limits.max_body);
    check(!r->body_truncated || r->body_len == p->limits.max_body);
    check(r->body_len == 0 || (r->body && r->body[r->body_len] == '\0'));
    for (size_t i = 0; i < r->nheaders; i++) {
        check(r->headers[i].name && r->headers[i].value);
        check(sl_http_resp_header(r, r->headers[i].name) != NULL);
    }
}

static void check_upgrades(const sl_http_response *r)
{
    static const struct {
        sl_transport t;
        sl_upgrade_kind k;
    } cases[] = {
        {SL_TRANSPORT_SPDY, SL_UPGRADE_RC},
        {SL_TRANSPORT_WEBSOCKET, SL_UPGRADE_RC},
        {SL_TRANSPORT_SPDY, SL_UPGRADE_PF},
        {SL_TRANSPORT_WEBSOCKET_TUNNEL, SL_UPGRADE_PF},
        {SL_TRANSPORT_WEBSOCKET_LEGACY, SL_UPGRADE_PF},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sl_upgrade u;
        if (sl_upgrade_init(&u, cases[i].t, cases[i].k) != 0)
            continue;
        const char *chosen = NULL;
        char msg[512];
        int rc = sl_upgrade_check(&u, r, &chosen, msg, sizeof(msg));
        check(rc == 0 ? chosen != NULL && r->status == 101 : msg[0] != '\0');
        check(strlen(msg) < sizeof(msg));
        for (const char *c = msg; *c; c++) /* no control bytes reach a terminal */
            check((unsigned char)*c >= ' ' && *c != 0x7f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sl_http_resp_parser p;
    sl_http_resp_init(&p, NULL);
    size_t cut = size ? data[0] % size : 0;
    size_t used = sl_http_resp_feed(&p, data, cut);
    check(used <= cut);
    check(p.state != SL_HTTP_RESP_MORE || used == cut);
    if (p.state == SL_HTTP_RESP_MORE) {
        size_t more = sl_http_resp_feed(&p, data + cut, size - cut);
        check(more <= size - cut);
        check(p.state != SL_HTTP_RESP_MORE || more == size - cut);
        used += more;
    }
    check(used <= size);
    sl_http_resp_eof(&p);
    check(p.state != SL_HTTP_RESP_MORE);
    if (p.state == SL_HTTP_RESP_DONE) {
        check_done(&p);
        check_upgrades(&p.resp);
    }
    sl_http_resp_fini(&p);
    return 0;
}
