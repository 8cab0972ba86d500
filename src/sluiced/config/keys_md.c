/* sluiced-keys-md: prints sluiced's configuration keys as Markdown for the
 * man pages, from the same table as --help (so they cannot drift):
 *   --flags  the command-line flags (sluiced(8))
 *   --json   the config file's keys with their JSON types (sluiced.json(5))
 * Built, not installed. */
#include <stdio.h>
#include <string.h>

#include "config/config.h"

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "--flags") && strcmp(argv[1], "--json"))) {
        fprintf(stderr, "usage: sluiced-keys-md --flags|--json\n");
        return 2;
    }
    sl_config_usage_markdown(stdout, !strcmp(argv[1], "--json"));
    return fflush(stdout) == 0 ? 0 : 1;
}
