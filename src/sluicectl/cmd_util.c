/* Helpers shared by the command files. */
#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd_util.h"

int cu_list_opt(ctl *c, cu_list_opts *l, int id, const char *val)
{
    switch (id) {
    case 'o':
        return ctl_parse_out(c, val, &l->out, true);
    case 'q':
        l->quiet = true;
        return 0;
    case 'v':
        l->verbose = true;
        return 0;
    case 'l':
        l->latest = true;
        return 0;
    case 'n':
        return ctl_parse_uint(c, "--last", val, 1000000, &l->last);
    case CU_NO_TRUNC:
        l->no_trunc = true;
        return 0;
    default:
        return -1;
    }
}

size_t cu_limit(const cu_list_opts *l, size_t n)
{
    if (l->latest && n > 1)
        return 1;
    if (l->last && n > l->last)
        return (size_t)l->last;
    return n;
}

int cu_labels_add(ctl *c, cu_labels *l, const char *kv, const char *flag)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return ctl_usage(c, "%s needs KEY=VALUE, not \"%s\"", flag, kv);
    ProtobufCMessage **n = realloc(l->ents, (l->n + 1) * sizeof *n);
    if (!n)
        return -1;
    l->ents = n;
    ProtobufCMessage *e = calloc(1, l->d->sizeof_message);
    if (!e)
        return -1;
    l->d->message_init(e);
    *(char **)((char *)e + l->d->fields[0].offset) = strndup(kv, (size_t)(eq - kv));
    *(char **)((char *)e + l->d->fields[1].offset) = strdup(eq + 1);
    l->ents[l->n++] = e;
    return 0;
}

void cu_labels_free(cu_labels *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(*(char **)((char *)l->ents[i] + l->d->fields[0].offset));
        free(*(char **)((char *)l->ents[i] + l->d->fields[1].offset));
        free(l->ents[i]);
    }
    free(l->ents);
    l->ents = NULL;
    l->n = 0;
}

int cu_out_opt(void *arg, int id, const char *val)
{
    cu_out_arg *a = arg;
    (void)id;
    return ctl_parse_out(a->c, val, a->out, a->table_ok);
}

int cu_parse_out_only(ctl *c, int argc, char **argv, const char *help, cu_out_arg *oa,
                      const char *noargs, int *rc)
{
    static const struct option lo[] = {
        {"output", required_argument, NULL, 'o'}, CTL_OPT_HELP, CTL_OPT_END};
    int first;
    if (ctl_parse(c, argc, argv, "o:", lo, help, cu_out_opt, oa, &first, rc))
        return 1;
    if (first < argc) {
        *rc = ctl_usage(c, "%s", noargs);
        return 1;
    }
    return 0;
}

int cu_inspect_opt(void *arg, int id, const char *val)
{
    cu_inspect *o = arg;
    if (id == 'q') {
        o->quiet = true;
        return 0;
    }
    return ctl_parse_out(o->c, val, &o->out, true);
}

void cu_print_status(const ProtobufCMessage *m, const cu_inspect *o)
{
    json_t *j = ctl_msg_to_json(m);
    if (o->quiet)
        json_object_del(j, "info");
    ctl_print_doc(j, o->out);
    json_decref(j);
}

int cu_no_opt(void *arg, int id, const char *val)
{
    (void)arg;
    (void)id;
    (void)val;
    return -1;
}

int cu_each(ctl *c, int n, char **refs, cu_kind kind, cu_each_fn fn, void *arg)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        sl_error e;
        sl_error_set(&e, ENOMEM, "%s", refs[i]); /* strdup's only failure */
        char *id = kind == CU_POD   ? ctl_resolve_pod(c, refs[i], &e)
                   : kind == CU_CTR ? ctl_resolve_ctr(c, refs[i], &e)
                                    : strdup(refs[i]);
        if (!id || fn(c, id, arg, &e) < 0)
            rc = ctl_fail(c, &e); /* each ref's failure once; the others go on */
        free(id);
    }
    return rc;
}

int cu_each_arg(ctl *c, int argc, char **argv, int first, const char *need, cu_kind kind,
                cu_each_fn fn, void *arg)
{
    if (first >= argc)
        return ctl_usage(c, "%s", need);
    return cu_each(c, argc - first, argv + first, kind, fn, arg);
}

int cu_plain_cmd(ctl *c, int argc, char **argv, const char *help, const char *need, cu_kind kind,
                 cu_each_fn fn)
{
    static const struct option lo[] = {CTL_OPT_HELP, CTL_OPT_END};
    int first, rc;
    if (ctl_parse(c, argc, argv, "", lo, help, cu_no_opt, NULL, &first, &rc))
        return rc;
    return cu_each_arg(c, argc, argv, first, need, kind, fn, NULL);
}

int cu_parse_inspect(ctl *c, int argc, char **argv, const char *help, cu_inspect *o, int *first,
                     int *rc)
{
    static const struct option lo[] = {{"output", required_argument, NULL, 'o'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    return ctl_parse(c, argc, argv, "o:q", lo, help, cu_inspect_opt, o, first, rc);
}

int cu_inspect_cmd(ctl *c, int argc, char **argv, const char *help, const char *need, cu_kind kind,
                   cu_each_fn fn)
{
    cu_inspect o = {c, CTL_OUT_JSON, false};
    int first, rc;
    if (cu_parse_inspect(c, argc, argv, help, &o, &first, &rc))
        return rc;
    return cu_each_arg(c, argc, argv, first, need, kind, fn, &o);
}

bool cu_regex_match(const char *pattern, const char *s)
{
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return strstr(s, pattern) != NULL;
    bool m = regexec(&re, s ? s : "", 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

void cu_print_map(const char *title, ProtobufCMessage **ents, size_t n)
{
    if (!n)
        return;
    printf("%s:\n", title);
    for (size_t i = 0; i < n; i++) {
        const ProtobufCMessageDescriptor *d = ents[i]->descriptor;
        printf("    %s -> %s\n", *(char **)((char *)ents[i] + d->fields[0].offset),
               *(char **)((char *)ents[i] + d->fields[1].offset));
    }
}

void cu_print_msg(const ProtobufCMessage *m, ctl_out out)
{
    json_t *j = ctl_msg_to_json(m);
    ctl_print_doc(j, out);
    json_decref(j);
}

void cu_print_list(const char *key, ProtobufCMessage **items, size_t n, ctl_out out)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, ctl_msg_to_json(items[i]));
    json_t *doc = json_object();
    json_object_set_new(doc, key, arr);
    ctl_print_doc(doc, out);
    json_decref(doc);
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

void cu_catch_interrupts(void)
{
    struct sigaction sa = {.sa_handler = on_interrupt}; /* no SA_RESTART: waits end */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

bool cu_interrupted(void)
{
    return interrupted != 0;
}

bool cu_sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (!interrupted && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    return !interrupted;
}

void cu_clear_screen(void)
{
    if (isatty(STDOUT_FILENO))
        fputs("\033[2J\033[H", stdout);
}
