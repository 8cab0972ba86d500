/* usage_nano_cores: CPU use as a rate (core-nanoseconds per second), from
 * two samples of the cumulative counter of the same cgroup, as containerd
 * and CRI-O compute it. A window shorter than min_window_ns (two calls in
 * quick succession) would be noise: the rate of the last full window is
 * kept instead, and the older sample stays the base. */
#ifndef SL_STATS_CPU_RATE_H
#define SL_STATS_CPU_RATE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sl_cpu_rate {
    bool has_base;
    int64_t base_ns;     /* monotonic time of the base sample */
    uint64_t base_usage; /* cumulative CPU ns then */
    bool has_rate;
    uint64_t rate; /* nano-cores over the last full window */
} sl_cpu_rate;

/* Feeds a sample (monotonic time, cumulative usage). Returns true with
 * *nano_cores when a rate is known. A counter that went backwards (a new
 * cgroup under the same name) or a time that did not advance restarts from
 * this sample, without a rate. */
bool sl_cpu_rate_update(sl_cpu_rate *r, int64_t now_ns, uint64_t usage_ns, int64_t min_window_ns,
                        uint64_t *nano_cores);

#endif
