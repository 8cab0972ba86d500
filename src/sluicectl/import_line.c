#include "import_line.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MIB(b) ((double)(b) / (1 << 20))

typedef struct progress_info {
    const char *phase, *file;
    uint64_t read, total;
} progress_info;

static int parse_info(json_t *j, progress_info *p)
{
    json_t *rd = json_object_get(j, "bytesRead"), *tot = json_object_get(j, "bytesTotal");
    p->phase = json_string_value(json_object_get(j, "phase"));
    p->file = json_string_value(json_object_get(j, "file"));
    if (!p->phase || !json_is_integer(rd) || !json_is_integer(tot) || json_integer_value(rd) < 0 ||
        json_integer_value(tot) < 0)
        return -1;
    p->read = (uint64_t)json_integer_value(rd);
    p->total = (uint64_t)json_integer_value(tot);
    return 0;
}

static int bytes_line(const char *name, const progress_info *p, char *buf, size_t n)
{
    unsigned pct = p->total ? (unsigned)(p->read * 100.0 / (double)p->total) : 0;
    snprintf(buf, n, "sluicectl: importing %s: %.1f MiB of %.1f MiB (%u%%)", name, MIB(p->read),
             MIB(p->total), pct > 100 ? 100 : pct);
    return 1;
}

/* The first line of a phase, or 0 when it says nothing new. */
static int info_line(const char *name, const progress_info *p, const ctl_import_seen *seen,
                     char *buf, size_t n)
{
    bool changed = strcmp(seen->phase, p->phase) != 0;
    if (!strcmp(p->phase, "reading"))
        return changed || p->read != seen->bytes_read ? bytes_line(name, p, buf, n) : 0;
    if (!changed)
        return 0;
    if (!strcmp(p->phase, "queued"))
        snprintf(buf, n, "sluicectl: importing %s: queued behind another import (%s)", name,
                 p->file ? p->file : "?");
    else if (!strcmp(p->phase, "unpacking"))
        snprintf(buf, n, "sluicectl: importing %s: %.1f MiB read, sluiced is unpacking it", name,
                 MIB(p->read));
    else
        snprintf(buf, n, "sluicectl: importing %s: %s", name, p->phase);
    return 1;
}

int ctl_import_line(const char *name, const char *info, uint64_t now_ms, ctl_import_seen *seen,
                    char *buf, size_t n)
{
    json_t *j = info ? json_loads(info, 0, NULL) : NULL;
    progress_info p;
    int said = 0;
    if (j && parse_info(j, &p) == 0) {
        said = info_line(name, &p, seen, buf, n);
        snprintf(seen->phase, sizeof(seen->phase), "%s", p.phase);
        if (said)
            seen->bytes_read = p.read;
    }
    json_decref(j);
    if (!said && now_ms - seen->last_line_ms >= CTL_IMPORT_QUIET_MS) {
        snprintf(buf, n, "sluicectl: %s: sluiced is %s it (%.0f s so far)", name,
                 !strcmp(seen->phase, "unpacking") ? "unpacking" : "importing",
                 (double)now_ms / 1000);
        said = 1;
    }
    if (said)
        seen->last_line_ms = now_ms;
    return said;
}
