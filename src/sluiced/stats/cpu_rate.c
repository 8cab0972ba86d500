#include "stats/cpu_rate.h"

#define NS_PER_S 1000000000.0

static void rebase(sl_cpu_rate *r, int64_t now_ns, uint64_t usage_ns)
{
    r->has_base = true;
    r->base_ns = now_ns;
    r->base_usage = usage_ns;
}

bool sl_cpu_rate_update(sl_cpu_rate *r, int64_t now_ns, uint64_t usage_ns, int64_t min_window_ns,
                        uint64_t *nano_cores)
{
    if (!r->has_base || usage_ns < r->base_usage || now_ns <= r->base_ns) {
        rebase(r, now_ns, usage_ns);
        r->has_rate = false;
        return false;
    }
    int64_t window = now_ns - r->base_ns;
    if (window >= min_window_ns) {
        /* double: exact for 2^53 ns of CPU (104 days) per window */
        double rate = (double)(usage_ns - r->base_usage) * NS_PER_S / (double)window;
        r->rate = (uint64_t)(rate + 0.5);
        r->has_rate = true;
        rebase(r, now_ns, usage_ns);
    }
    if (r->has_rate)
        *nano_cores = r->rate;
    return r->has_rate;
}
