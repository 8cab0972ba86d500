/* Network interface counters of a network namespace, from the kernel's
 * /proc/net/dev table as seen from inside that namespace. */
#ifndef SL_STATS_NETDEV_H
#define SL_STATS_NETDEV_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "sys_error.h"

/* Interfaces kept per namespace; more are left out. */
#define SL_NETDEV_MAX 64
/* Bytes of the /proc/net/dev text read (about 130 per interface). */
#define SL_NETDEV_TEXT_MAX 65536

typedef struct sl_netdev {
    char name[IFNAMSIZ];
    uint64_t rx_bytes, rx_errors, tx_bytes, tx_errors;
} sl_netdev;

/* Parses a /proc/net/dev text (two header lines, then "name: 16 numbers"
 * per interface) into at most max entries, in the table's order. Lines that
 * do not parse are skipped. Returns the number of entries. */
size_t sl_netdev_parse(const char *text, sl_netdev *out, size_t max);

/* Reads the table of the network namespace pinned at netns_path: a thread
 * of its own joins the namespace (setns affects only the calling thread)
 * and reads /proc/thread-self/net/dev, then ends. Returns the count, or -1
 * (*e). Blocks the caller for the read; call it off the loop. */
int sl_netdev_read_netns(const char *netns_path, sl_netdev *out, size_t max, sl_error *e);

#endif
