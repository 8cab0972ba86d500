/* sluicectl: a crictl-style client for sluiced (and any CRI runtime).
 * Global flags, environment and config file, then a dispatch table. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static const ctl_cmd commands[] = {
    {"version", NULL, "Show the runtime's name and version", cmd_version},
    {"info", NULL, "Show the runtime's status and information", cmd_info},
    {"runtime-config", NULL, "Show the runtime's configuration", cmd_runtime_config},
    {"update-runtime-config", NULL, "Update the runtime's configuration (pod CIDR)",
     cmd_update_runtime_config},
    {"runp", NULL, "Run a new pod sandbox from a config file", cmd_runp},
    {"stopp", NULL, "Stop one or more pod sandboxes", cmd_stopp},
    {"rmp", NULL, "Remove one or more pod sandboxes", cmd_rmp},
    {"pods", NULL, "List pod sandboxes", cmd_pods},
    {"inspectp", NULL, "Show the status of one or more pod sandboxes", cmd_inspectp},
    {"create", NULL, "Create a container in a pod sandbox", cmd_create},
    {"run", NULL, "Run a pod sandbox with a new container in it, started", cmd_run},
    {"start", NULL, "Start one or more created containers", cmd_start},
    {"stop", NULL, "Stop one or more running containers", cmd_stop},
    {"rm", NULL, "Remove one or more containers", cmd_rm},
    {"ps", NULL, "List containers", cmd_ps},
    {"inspect", NULL, "Show the status of one or more containers", cmd_inspect},
    {"update", NULL, "Update the resources of one or more containers", cmd_update},
    {"events", "event", "Stream container events", cmd_events},
    {"stats", NULL, "Show containers' resource usage", cmd_stats},
    {"statsp", NULL, "Show pod sandboxes' resource usage", cmd_statsp},
    {"metricsp", NULL, "Show pod sandboxes' metrics", cmd_metricsp},
    {"checkpoint", NULL, "Checkpoint one or more running containers", cmd_checkpoint},
    {"logs", "log", "Print a container's logs", cmd_logs},
    {"images", "img", "List images", cmd_images},
    {"inspecti", NULL, "Show the status of one or more images", cmd_inspecti},
    {"rmi", NULL, "Remove one or more images", cmd_rmi},
    {"imagefsinfo", NULL, "Show the image filesystem's usage", cmd_imagefsinfo},
    {"image", NULL, "Image subcommands: import FILE (sluiced)", cmd_image},
    {"pull", NULL, "Pull an image (sluiced: import it from its import directory)", cmd_pull},
    {"exec", NULL, "Run a command in a running container", cmd_exec},
    {"attach", NULL, "Attach to a running container", cmd_attach},
    {"port-forward", NULL, "Forward local ports to a pod sandbox", cmd_port_forward},
    {"kubeconfig", NULL, "Print a kubeconfig for the sluice-kube front", cmd_kubeconfig},
    {"config", NULL, "Get, set and list the config file's keys", cmd_config},
    {"completion", NULL, "Print bash completion code", cmd_completion},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

enum { OPT_IMPORT_DIR = 256 };

static const struct option global_opts[] = {
    {"runtime-endpoint", required_argument, NULL, 'r'},
    {"image-endpoint", required_argument, NULL, 'i'},
    {"timeout", required_argument, NULL, 't'},
    {"debug", no_argument, NULL, 'D'},
    {"config", required_argument, NULL, 'c'},
    {"import-dir", required_argument, NULL, OPT_IMPORT_DIR},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};
#define NGLOBALS (sizeof global_opts / sizeof global_opts[0] - 1)

const ctl_cmd *ctl_commands(size_t *n)
{
    *n = NCOMMANDS;
    return commands;
}

const struct option *ctl_global_options(size_t *n)
{
    *n = NGLOBALS;
    return global_opts;
}

static const char global_help[] =
    "Usage: sluicectl [GLOBAL FLAGS] COMMAND [FLAGS] [ARGS]\n"
    "\n"
    "A crictl-style client for sluiced and other CRI runtimes.\n"
    "\n"
    "Global flags:\n"
    "  -r, --runtime-endpoint URL  CRI endpoint (unix:///path). Default: "
    "$CONTAINER_RUNTIME_ENDPOINT,\n"
    "                              the config file, else the first of\n"
    "                              unix:///run/sluice/sluice.sock, "
    "unix:///run/containerd/containerd.sock,\n"
    "                              unix:///run/crio/crio.sock, unix:///var/run/cri-dockerd.sock\n"
    "  -i, --image-endpoint URL    ImageService endpoint (default: the runtime endpoint;\n"
    "                              $IMAGE_SERVICE_ENDPOINT)\n"
    "  -t, --timeout DURATION      connection and call timeout, e.g. 2s, 500ms (default 2s)\n"
    "  -D, --debug                 log endpoints, calls, requests and answers to stderr\n"
    "  -c, --config FILE           config file (default $SLUICECTL_CONFIG or "
    "/etc/sluicectl.yaml):\n"
    "                              'key: value' lines; sluicectl config --help lists the keys\n"
    "      --import-dir DIR        sluiced's image import directory (default "
    "/var/lib/sluice/import)\n"
    "  -h, --help                  this help;  sluicectl COMMAND --help for a command's\n"
    "  -v, --version               sluicectl's own version\n"
    "\n"
    "Commands:\n";

static void print_help(FILE *f)
{
    int width = 0;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if ((int)strlen(commands[i].name) > width)
            width = (int)strlen(commands[i].name);
    fputs(global_help, f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-*s %s\n", width, commands[i].name, commands[i].summary);
    fputs("\nPod and container configs are YAML or JSON, as crictl reads them.\n"
          "See sluicectl(1) / docs/sluicectl.md.\n",
          f);
}

static const ctl_cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name) ||
            (commands[i].alias && !strcmp(commands[i].alias, name)))
            return &commands[i];
    return NULL;
}

static int key_of(int opt)
{
    switch (opt) {
    case 'r':
        return CTL_KEY_RT;
    case 'i':
        return CTL_KEY_IMG;
    case 't':
        return CTL_KEY_TIMEOUT;
    case 'D':
        return CTL_KEY_DEBUG;
    default:
        return CTL_KEY_IMPORT;
    }
}

/* Returns -1 to go on, else the exit code. */
static int parse_globals(ctl *c, int argc, char **argv, bool *set, const char **cfg)
{
    opterr = 0;
    optind = 0;
    int o;
    while ((o = getopt_long(argc, argv, "+r:i:t:Dc:hv", global_opts, NULL)) != -1) {
        switch (o) {
        case 'h':
            print_help(stdout);
            return 0;
        case 'v':
            printf("%s version %s\n", CTL_NAME, CTL_VERSION);
            return 0;
        case 'c':
            *cfg = optarg;
            break;
        case '?':
        case ':':
            return ctl_usage(c, "unknown or incomplete global flag %s (see sluicectl --help)",
                             argv[optind - 1]);
        default: {
            sl_error e;
            if (ctl_config_set(c, key_of(o), o == 'D' ? "true" : optarg, "flag", &e) < 0)
                return ctl_usage(c, "%s", e.msg);
            set[key_of(o)] = true;
        }
        }
    }
    return -1;
}

/* Environment (as crictl: CONTAINER_RUNTIME_ENDPOINT, IMAGE_SERVICE_ENDPOINT)
 * applies where no flag was given; the config file where neither was. The
 * config command reads and writes the file itself (it may not exist yet). */
static int apply_env_and_config(ctl *c, bool *set, const char *cfg, bool load, sl_error *e)
{
    static const struct {
        const char *var;
        int key;
    } envs[] = {{"CONTAINER_RUNTIME_ENDPOINT", CTL_KEY_RT},
                {"IMAGE_SERVICE_ENDPOINT", CTL_KEY_IMG}};
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
        const char *v = getenv(envs[i].var);
        if (v && *v && !set[envs[i].key]) {
            if (ctl_config_set(c, envs[i].key, v, envs[i].var, e) < 0)
                return -1;
            set[envs[i].key] = true;
        }
    }
    bool required = cfg != NULL;
    if (!cfg)
        cfg = getenv("SLUICECTL_CONFIG");
    if (cfg && *cfg)
        required = true;
    else
        cfg = CTL_DEFAULT_CONFIG;
    c->config_path = cfg;
    int rc = load ? ctl_config_load(c, cfg, required, set, e) : 1;
    if (rc == 0)
        ctl_debug(c, "config file %s read", cfg);
    return rc < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    ctl c = {.timeout_ms = CTL_DEFAULT_TIMEOUT_MS, .import_dir = CTL_DEFAULT_IMPORT_DIR};
    bool set[CTL_NKEYS] = {0};
    const char *cfg = NULL;
    /* Sockets are written with MSG_NOSIGNAL; local pipes must not kill us. */
    signal(SIGPIPE, SIG_IGN);
    int rc = parse_globals(&c, argc, argv, set, &cfg);
    if (rc >= 0)
        return rc;
    bool is_config = optind < argc && !strcmp(argv[optind], "config");
    sl_error e;
    if (apply_env_and_config(&c, set, cfg, !is_config, &e) < 0)
        return ctl_usage(&c, "%s", e.msg);
    if (optind >= argc) {
        print_help(stderr);
        return CTL_EXIT_USAGE;
    }
    if (!strcmp(argv[optind], "help")) {
        if (optind + 1 < argc && find_cmd(argv[optind + 1])) {
            char *hargv[] = {argv[optind + 1], (char *)"--help", NULL};
            return find_cmd(argv[optind + 1])->run(&c, 2, hargv);
        }
        print_help(stdout);
        return 0;
    }
    const ctl_cmd *cmd = find_cmd(argv[optind]);
    if (!cmd)
        return ctl_usage(&c, "unknown command \"%s\" (sluicectl --help lists the commands)",
                         argv[optind]);
    c.cmd = cmd->name;
    rc = cmd->run(&c, argc - optind, argv + optind);
    ctl_disconnect(&c);
    return rc;
}
