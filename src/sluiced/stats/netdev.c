#include "stats/netdev.h"
#include "stats/decimal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

/* Numbers after the name: 8 receive, then 8 transmit counters. */
#define NETDEV_FIELDS 16
enum { RX_BYTES = 0, RX_ERRS = 2, TX_BYTES = 8, TX_ERRS = 10 };

static bool parse_fields(const char *s, uint64_t f[NETDEV_FIELDS])
{
    for (int i = 0; i < NETDEV_FIELDS; i++) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!sl_decimal_u64(s, &s, &f[i]))
            return false;
    }
    return true;
}

/* One "  name: numbers" line (without its newline) into *d. */
static bool parse_line(const char *line, size_t len, sl_netdev *d)
{
    char buf[512];
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, line, len);
    buf[len] = '\0';
    char *colon = strchr(buf, ':');
    if (!colon)
        return false;
    *colon = '\0';
    const char *name = buf;
    while (*name == ' ')
        name++;
    size_t nlen = strlen(name);
    uint64_t f[NETDEV_FIELDS];
    if (nlen == 0 || nlen >= sizeof(d->name) || !parse_fields(colon + 1, f))
        return false;
    memcpy(d->name, name, nlen + 1);
    d->rx_bytes = f[RX_BYTES];
    d->rx_errors = f[RX_ERRS];
    d->tx_bytes = f[TX_BYTES];
    d->tx_errors = f[TX_ERRS];
    return true;
}

size_t sl_netdev_parse(const char *text, sl_netdev *out, size_t max)
{
    size_t n = 0;
    const char *line = text;
    for (int skip = 2; skip > 0 && line; skip--) { /* the two header lines */
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    while (line && *line && n < max) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (parse_line(line, len, &out[n]))
            n++;
        line = nl ? nl + 1 : NULL;
    }
    return n;
}

typedef struct netns_read {
    const char *netns_path;
    char *text;
    sl_error *e;
    int rc;
} netns_read;

/* Runs on its own thread, which ends in the pod's namespace. */
static void *read_thread(void *arg)
{
    netns_read *j = arg;
    SL_AUTOCLOSE int ns = open(j->netns_path, O_RDONLY | O_CLOEXEC);
    if (ns < 0) {
        j->rc = sl_error_set(j->e, errno, "open %s", j->netns_path);
        return NULL;
    }
    if (setns(ns, CLONE_NEWNET) < 0) {
        j->rc = sl_error_set(j->e, errno, "join network namespace %s", j->netns_path);
        return NULL;
    }
    /* /proc/self/net follows the thread group leader; thread-self is us */
    j->rc = sl_read_file("/proc/thread-self/net/dev", SL_NETDEV_TEXT_MAX, &j->text, NULL, j->e);
    return NULL;
}

int sl_netdev_read_netns(const char *netns_path, sl_netdev *out, size_t max, sl_error *e)
{
    netns_read j = {.netns_path = netns_path, .e = e, .rc = -1};
    pthread_t t;
    int err = pthread_create(&t, NULL, read_thread, &j);
    if (err != 0)
        return sl_error_set(e, err, "start a thread to read %s", netns_path);
    pthread_join(t, NULL);
    if (j.rc < 0)
        return -1;
    int n = (int)sl_netdev_parse(j.text, out, max);
    free(j.text);
    return n;
}
