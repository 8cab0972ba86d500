/* completion: bash completion code, as `crictl completion bash`, but it
 * completes by position: commands and global flags first, then the
 * command's own flags (read from its --help when asked, so they are always
 * the binary's), then file names. */
#include <stdio.h>
#include <string.h>

#include "cmd_util.h"

static const char completion_help[] =
    "Usage: sluicectl completion [bash]\n"
    "\n"
    "Prints bash completion code for sluicectl: commands and global flags, each\n"
    "command's flags after it, file names for arguments. Install it with\n"
    "  source <(sluicectl completion bash)      (this shell)\n"
    "  sluicectl completion bash > /etc/bash_completion.d/sluicectl\n"
    "Only bash is supported.\n"
    "\n"
    "  -h, --help   this help\n";

/* The command's flags from its --help: lines "  -x, --name ..." or
 * "      --name ...". */
static const char script_tail[] =
    "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
    "        w=${COMP_WORDS[i]}\n"
    "        if [[ \" $valued \" == *\" $w \"* ]]; then\n"
    "            ((i++))\n"
    "        elif [[ $w != -* ]]; then\n"
    "            cmd=$w\n"
    "            break\n"
    "        fi\n"
    "    done\n"
    "    if [[ -z $cmd ]]; then\n"
    "        COMPREPLY=($(compgen -W \"$commands $globals\" -- \"$cur\"))\n"
    "    elif [[ $cur == -* ]]; then\n"
    "        COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" \"$cmd\" --help 2>/dev/null |\n"
    "            sed -n 's/^ *\\(-[a-zA-Z], \\)\\{0,1\\}\\(--[a-z][a-z-]*\\).*/\\2/p')\" -- "
    "\"$cur\"))\n"
    "    else\n"
    "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    "    fi\n"
    "}\n"
    "\n"
    "complete -o filenames -F _sluicectl sluicectl\n";

static void print_script(void)
{
    size_t n, ng;
    const ctl_cmd *cmds = ctl_commands(&n);
    const struct option *g = ctl_global_options(&ng);
    fputs("# bash completion for sluicectl: source <(sluicectl completion bash)\n"
          "_sluicectl() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} cmd= i w\n"
          "    local commands=\"",
          stdout);
    for (size_t i = 0; i < n; i++)
        printf("%s%s%s%s", i ? " " : "", cmds[i].name, cmds[i].alias ? " " : "",
               cmds[i].alias ? cmds[i].alias : "");
    fputs(" help\"\n    local globals=\"", stdout);
    for (size_t i = 0; i < ng; i++)
        printf("%s--%s", i ? " " : "", g[i].name);
    fputs("\"\n    local valued=\"", stdout); /* global flags that take a value */
    for (size_t i = 0, k = 0; i < ng; i++)
        if (g[i].has_arg == required_argument) {
            printf("%s--%s", k++ ? " " : "", g[i].name);
            if (g[i].val < 256)
                printf(" -%c", g[i].val);
        }
    fputs("\"\n", stdout);
    fputs(script_tail, stdout);
}

int cmd_completion(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {CTL_OPT_HELP, CTL_OPT_END};
    int first, rc;
    if (ctl_parse(c, argc, argv, "", lo, completion_help, cu_no_opt, NULL, &first, &rc))
        return rc;
    if (argc - first > 1 || (first < argc && strcmp(argv[first], "bash")))
        return ctl_usage(c, "only bash completion is made (sluicectl completion bash)");
    print_script();
    return 0;
}
