/* sluice-kube's command line: the flags, the token sources and where the
 * serving certificate is. Parsing prints nothing: a bad command line
 * comes back as an sl_error that main prints once. */
#ifndef SK_OPTS_H
#define SK_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "kube.h"
#include "sys_error.h"

typedef struct sk_opts {
    sk_config cfg;
    bool help;             /* -h/--help: print the usage and exit 0 */
    bool bad_usage;        /* the error is an unknown flag or a missing value */
    bool print_kubeconfig; /* --print-kubeconfig */
    bool token_flag;       /* --token was given */
    bool token_in_argv;    /* a token from --token: main warns that ps shows it */
    const char *token_file, *cert_dir, *cert_flag, *tls_cert, *tls_key;
    char node[256];
    char token[SK_TOKEN_MAX + 1];
    char cert[4096], key[4096];
} sk_opts;

/* Parses argv into *o (zeroed first; o->cfg points into argv, the
 * environment and o). Returns 0, or -1 with *e naming the flag. */
int sk_opts_parse(int argc, char **argv, sk_opts *o, sl_error *e);
void sk_opts_usage(FILE *f);

#endif
