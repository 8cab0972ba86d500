#include "proc_stat.h"

#include <stdio.h>
#include <string.h>

int sl_proc_stat(pid_t pid, char *state, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
    char st;
    if (!p || sscanf(p + 1, " %c", &st) != 1)
        return -1;
    for (int field = 2; p && field < 22; field++) /* to the space before field 22 */
        p = strchr(p + 1, ' ');
    unsigned long long t;
    if (!p || sscanf(p + 1, "%llu", &t) != 1)
        return -1;
    if (state)
        *state = st;
    if (start)
        *start = t;
    return 0;
}
