/* sluicectl kubeconfig: a kubeconfig for the kube front. sluice-kube is the
 * one place that knows its own address, token and certificate, so this runs
 * `sluice-kube --print-kubeconfig` with the same flags. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

static const char usage[] =
    "Usage: sluicectl kubeconfig [--address A] [--port N] [--token-file F | --token T]\n"
    "                            [--tls] [--cert-dir D | --cert FILE | --tls-cert-file FILE]\n"
    "\n"
    "Prints a kubeconfig for a sluice-kube front started with the same flags\n"
    "(see sluice-kube --help), so that kubectl reaches the pods of the runtime:\n"
    "  sluicectl kubeconfig > ~/.kube/sluice && KUBECONFIG=~/.kube/sluice kubectl get pods\n";

/* sluice-kube next to sluicectl (installed), in the build tree, or on PATH. */
static void find_front(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    snprintf(out, n, "sluice-kube");
    if (len <= 0)
        return;
    exe[len] = '\0';
    const char *dir = dirname(exe);
    const char *tries[] = {"sluice-kube", "../sluice-kube/sluice-kube"};
    for (size_t i = 0; i < 2; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof(p), "%s/%s", dir, tries[i]);
        if (access(p, X_OK) == 0) {
            snprintf(out, n, "%s", p);
            return;
        }
    }
}

int cmd_kubeconfig(ctl *c, int argc, char **argv)
{
    (void)c;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
    }
    char front[PATH_MAX + 32];
    find_front(front, sizeof(front));
    char **args = calloc((size_t)argc + 2, sizeof(char *));
    if (!args)
        return 1;
    args[0] = front;
    args[1] = "--print-kubeconfig";
    for (int i = 1; i < argc; i++)
        args[i + 1] = argv[i];
    fflush(stdout);
    execvp(front, args);
    fprintf(stderr, "sluicectl: cannot run %s: %s (install sluice-kube next to sluicectl)\n", front,
            strerror(errno));
    free(args);
    return 1;
}
