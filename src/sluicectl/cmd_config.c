/* config: get, set and list the config file's keys, as `crictl config`
 * does (--get KEY, --set KEY=VALUE[,KEY=VALUE], --list, or KEY VALUE). The
 * file is the one sluicectl reads: -c, $SLUICECTL_CONFIG, else
 * /etc/sluicectl.yaml. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

#define CONFIG_MAX_SETS 64 /* KEY=VALUE pairs in one call */

static const char config_help[] =
    "Usage: sluicectl config [--get KEY | --set KEY=VALUE[,KEY=VALUE]... | --list | KEY VALUE]\n"
    "\n"
    "Gets, sets and lists the keys of sluicectl's config file (-c FILE, else\n"
    "$SLUICECTL_CONFIG, else /etc/sluicectl.yaml). Setting rewrites only the lines\n"
    "of the keys set (comments and other lines stay) and creates the file if needed.\n"
    "\n"
    "Keys:\n"
    "  runtime-endpoint      CRI runtime endpoint (default: none, try the known ones)\n"
    "  image-endpoint        CRI image endpoint (default: the runtime endpoint)\n"
    "  timeout               connect and call timeout: 2s, 500ms, or seconds (default 2s)\n"
    "  debug                 true or false (default false)\n"
    "  import-dir            sluiced's image import directory (default /var/lib/sluice/import)\n"
    "  pull-image-on-create  create pulls a missing image (default false)\n"
    "  disable-pull-on-run   run does not pull a missing image (default false)\n"
    "\n"
    "      --get KEY            print KEY's value (its default when the file lacks it)\n"
    "      --set KEY=VALUE,...  set keys (repeatable)\n"
    "      --list               print every key and value as a table\n"
    "  -h, --help               this help\n"
    "\n"
    "Examples: sluicectl config --set runtime-endpoint=unix:///run/sluice/sluice.sock\n"
    "          sluicectl config timeout 10s;  sluicectl config --get debug\n";

enum { CF_GET = 256, CF_SET, CF_LIST };

typedef struct config_opts {
    ctl *c;
    const char *get;
    bool list;
    const char *sets[CONFIG_MAX_SETS];
    size_t nsets;
} config_opts;

static int config_opt(void *arg, int id, const char *val)
{
    config_opts *o = arg;
    if (id == CF_GET)
        o->get = val;
    else if (id == CF_LIST)
        o->list = true;
    else if (o->nsets == CONFIG_MAX_SETS)
        return ctl_usage(o->c, "at most %d --set flags", CONFIG_MAX_SETS);
    else
        o->sets[o->nsets++] = val;
    return 0;
}

static int key_or_usage(ctl *c, const char *name)
{
    int k = ctl_config_key(name);
    if (k < 0)
        ctl_usage(c, "no config key named \"%s\" (sluicectl config --help lists them)", name);
    return k;
}

/* Records one KEY=VALUE into newv (values point into buf). */
static int take_pair(ctl *c, char *pair, const char **newv)
{
    char *eq = strchr(pair, '=');
    if (!eq || eq == pair)
        return ctl_usage(c, "--set needs KEY=VALUE, not \"%s\"", pair);
    *eq = '\0';
    int k = key_or_usage(c, pair);
    if (k < 0)
        return CTL_EXIT_USAGE;
    sl_error e;
    if (ctl_config_check(k, eq + 1, "--set", &e) < 0)
        return ctl_usage(c, "%s", e.msg);
    newv[k] = eq + 1;
    return 0;
}

static int do_set(ctl *c, config_opts *o)
{
    const char *newv[CTL_NKEYS] = {0};
    char *bufs[CONFIG_MAX_SETS] = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < o->nsets; i++) {
        bufs[i] = strdup(o->sets[i]);
        char *save = NULL;
        for (char *p = bufs[i] ? strtok_r(bufs[i], ",", &save) : NULL; rc == 0 && p;
             p = strtok_r(NULL, ",", &save))
            rc = take_pair(c, p, newv);
    }
    sl_error e;
    if (rc == 0 && ctl_config_write(c->config_path, newv, &e) < 0)
        rc = ctl_fail(c, &e);
    for (size_t i = 0; i < o->nsets; i++)
        free(bufs[i]);
    return rc;
}

static int do_show(ctl *c, config_opts *o)
{
    static char vals[CTL_NKEYS][CTL_CONFIG_MAX_VALUE];
    int k = o->get ? key_or_usage(c, o->get) : 0;
    if (k < 0)
        return CTL_EXIT_USAGE;
    sl_error e;
    if (ctl_config_read(c->config_path, vals, &e) < 0)
        return ctl_fail(c, &e);
    if (o->get) {
        puts(vals[k]);
        return 0;
    }
    static const char *const hdr[] = {"KEY", "VALUE"};
    ctl_table *t = ctl_table_new(2, hdr);
    for (int i = 0; i < CTL_NKEYS; i++) {
        const char *row[] = {ctl_config_key_name(i), vals[i]};
        ctl_table_add(t, row);
    }
    ctl_table_print(t);
    return 0;
}

int cmd_config(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"get", required_argument, NULL, CF_GET},
                                       {"set", required_argument, NULL, CF_SET},
                                       {"list", no_argument, NULL, CF_LIST},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    config_opts o = {.c = c};
    int first, rc;
    if (ctl_parse(c, argc, argv, "", lo, config_help, config_opt, &o, &first, &rc))
        return rc;
    int modes = (o.get != NULL) + o.list + (o.nsets > 0) + (first < argc);
    if (modes == 0) {
        fputs(config_help, stdout);
        return 0;
    }
    if (modes > 1)
        return ctl_usage(c, "give one of --get, --set, --list or KEY VALUE");
    if (o.get || o.list)
        return do_show(c, &o);
    if (first < argc) { /* KEY VALUE, crictl's older form: VALUE may hold commas */
        if (argc - first != 2)
            return ctl_usage(c, "KEY VALUE takes exactly two arguments");
        const char *newv[CTL_NKEYS] = {0};
        int k = key_or_usage(c, argv[first]);
        sl_error e;
        if (k < 0)
            return CTL_EXIT_USAGE;
        if (ctl_config_check(k, argv[first + 1], argv[first], &e) < 0)
            return ctl_usage(c, "%s", e.msg);
        newv[k] = argv[first + 1];
        return ctl_config_write(c->config_path, newv, &e) < 0 ? ctl_fail(c, &e) : 0;
    }
    return do_set(c, &o);
}
