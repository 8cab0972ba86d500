/* The kernel's count of SYNs dropped because a listener's accept queue was
 * full (/proc/net/netstat, TcpExt ListenOverflows). A client whose SYN is
 * dropped retries after 1, 3, 7, 15 s, so a workload that met full queues
 * is slower for a reason outside both runtimes (the pod programs' own
 * listeners included); the driver reports it per workload. */
#include "bench.h"

#include <stdio.h>
#include <string.h>

long long bn_listen_overflows(void)
{
    FILE *f = fopen("/proc/net/netstat", "re");
    if (!f)
        return -1;
    char names[4096], values[4096];
    long long v = -1;
    while (v < 0 && fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
        if (strncmp(names, "TcpExt:", 7) || strncmp(values, "TcpExt:", 7))
            continue;
        char *ns = NULL, *vs = NULL;
        char *n = strtok_r(names + 7, " \n", &ns);
        char *x = strtok_r(values + 7, " \n", &vs);
        for (; n && x; n = strtok_r(NULL, " \n", &ns), x = strtok_r(NULL, " \n", &vs))
            if (!strcmp(n, "ListenOverflows")) {
                v = strtoll(x, NULL, 10);
                break;
            }
    }
    fclose(f);
    return v;
}
