/* The streaming URL router: any request target either fails to match or
 * yields a method and a token inside the target that sl_url_build turns
 * back into a URL whose path is the target without its query. Matched
 * against three base paths ("/", "/cri/", "/a/b") from exact heap copies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/url.h"
#include "sluice/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_base(const char *base_path, const char *path)
{
    sl_url_base b;
    if (sl_url_base_init(&b, "http", "127.0.0.1:10010", base_path) != SL_OK)
        abort();
    const char *m, *t;
    size_t ml, tl;
    if (sl_url_match(&b, path, &m, &ml, &t, &tl) == SL_OK) {
        size_t plen = strlen(path);
        if (m < path || m + ml > path + plen || t < path || t + tl > path + plen)
            __builtin_trap();
        char method[16], token[128];
        if (ml >= sizeof(method) || tl >= sizeof(token))
            __builtin_trap();
        memcpy(method, m, ml);
        method[ml] = '\0';
        memcpy(token, t, tl);
        token[tl] = '\0';
        char *url = sl_url_build(&b, method, token);
        if (!url)
            __builtin_trap(); /* what matched must be buildable */
        const char *p = url + strlen(b.origin);
        const char *q = strchr(path, '?');
        size_t want = q ? (size_t)(q - path) : plen;
        if (strlen(p) != want || memcmp(p, path, want) != 0)
            __builtin_trap();
        free(url);
    }
    sl_url_base_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *path = malloc(size + 1);
    if (!path)
        return 0;
    memcpy(path, data, size);
    path[size] = '\0';
    one_base("/", path);
    one_base("/cri/", path);
    one_base("/a/b", path);
    free(path);
    return 0;
}
