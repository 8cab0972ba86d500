/* sluice-kube's query strings and percent-decoding, as the exec, attach,
 * port-forward and log handlers use them: every parameter parses or the
 * whole query is refused; a decoded value never holds more bytes than its
 * encoding; boolean parameters follow Go's ParseBool or are refused. The
 * input is an exact heap copy, NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "pct.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const bool_keys[] = {"stdin", "stdout", "stderr", "tty", "follow", "timestamps"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *qs = malloc(size + 1);
    if (!qs)
        return 0;
    memcpy(qs, data, size);
    qs[size] = '\0';
    for (unsigned flags = 0; flags < 4; flags++) {
        char *d = sl_pct_decode_dup(qs, size, flags);
        if (d && strlen(d) > size)
            __builtin_trap();
        free(d);
    }
    sk_query q = {0};
    if (sk_query_parse(qs, &q) == 0) {
        for (size_t i = 0; i < q.n; i++) {
            if (!q.p[i].key || !q.p[i].value || strlen(q.p[i].key) > size)
                __builtin_trap();
            if (!sk_query_get(&q, q.p[i].key))
                __builtin_trap(); /* every parsed key is found again */
        }
        for (size_t i = 0; i < sizeof(bool_keys) / sizeof(bool_keys[0]); i++) {
            bool v;
            int rc = sk_query_bool(&q, bool_keys[i], false, &v);
            if (rc != 0 && rc != -1)
                __builtin_trap();
        }
        sk_query_free(&q);
    }
    free(qs);
    return 0;
}
