/* Time, the results document, the machine's description, free ports. */
#include "bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static json_t *results;

double bn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bn_client_cpu(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bn_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

bn_rt *bn_nth(bn_ctx *c, int run, int i)
{
    return &c->rt[(run + i) % c->nrt];
}

void bn_results_init(void)
{
    results = json_pack("{s:{}, s:{}, s:[]}", "samples", "info", "errors");
}

json_t *bn_results(void)
{
    return results;
}

/* obj[key], created as an empty object or array when missing. */
static json_t *child(json_t *obj, const char *key, bool array)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        v = array ? json_array() : json_object();
        json_object_set_new(obj, key, v);
    }
    return v;
}

void bn_add(const char *wl, const char *metric, const char *side, double v)
{
    json_t *m = child(child(json_object_get(results, "samples"), wl, false), metric, false);
    json_array_append_new(child(m, side, true), json_real(v));
}

void bn_info(const char *wl, const char *key, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_object_set_new(child(json_object_get(results, "info"), wl, false), key, json_string(buf));
}

void bn_error(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "sl-bench: error: %s\n", buf);
    json_t *errs = json_object_get(results, "errors");
    if (json_array_size(errs) < 200)
        json_array_append_new(errs, json_string(buf));
}

void bn_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sl-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The value after "key<spaces>:" on the first matching line of a file. */
static void file_field(const char *path, const char *key, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[512];
    out[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, strlen(key)))
            continue;
        char *p = strchr(line, ':');
        if (!p)
            continue;
        for (p++; *p == ' ' || *p == '\t'; p++)
            ;
        p[strcspn(p, "\n")] = '\0';
        snprintf(out, len, "%s", p);
        break;
    }
    fclose(f);
}

void bn_machine(json_t *out)
{
    char model[256], mem[64];
    struct utsname u;
    uname(&u);
    file_field("/proc/cpuinfo", "model name", model, sizeof(model));
    file_field("/proc/meminfo", "MemTotal", mem, sizeof(mem));
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    json_object_set_new(out, "nproc", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    json_object_set_new(out, "model", json_string(model));
    char kernel[2 * sizeof(u.release) + 2];
    snprintf(kernel, sizeof(kernel), "%s %s", u.sysname, u.release);
    json_object_set_new(out, "kernel", json_string(kernel));
    json_object_set_new(out, "memory", json_string(mem));
    json_object_set_new(out, "loadavg_at_start", json_pack("[fff]", load[0], load[1], load[2]));
}

/* n distinct loopback ports free now: the sockets stay bound until all are
 * chosen, so the kernel cannot hand out one twice. */
int bn_free_ports(uint16_t *ports, int n)
{
    int fds[BN_FREE_PORTS_MAX];
    int got = 0;
    if (n > BN_FREE_PORTS_MAX)
        return -1;
    for (; got < n; got++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        fds[got] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[got] < 0)
            break;
        if (bind(fds[got], (struct sockaddr *)&a, sizeof(a)) < 0 ||
            getsockname(fds[got], (struct sockaddr *)&a, &len) < 0) {
            close(fds[got]);
            break;
        }
        ports[got] = ntohs(a.sin_port);
    }
    for (int i = 0; i < got; i++)
        close(fds[i]);
    return got == n ? 0 : -1;
}

bool bn_selected(const bn_ctx *c, const char *wl)
{
    if (!c->o.only || !*c->o.only)
        return true;
    size_t n = strlen(wl);
    for (const char *p = c->o.only; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, wl, n))
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

void bn_proto_info(const char *wl, const bn_rt *rt, sl_transport tr, const char *proto)
{
    char key[96];
    snprintf(key, sizeof(key), "%s %s", rt->name, bn_transport_name(tr));
    bn_info(wl, key, "%s", proto);
}
