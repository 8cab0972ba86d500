/* What `sluicectl image import` says about sluiced's import of one image
 * name, from the "importProgress" info of verbose ImageStatus answers
 * (sluiced's JSON: file, phase, bytesRead, bytesTotal, secondsElapsed): a
 * line when the bytes read or the phase change, and a line saying how
 * long it has taken every CTL_IMPORT_QUIET_MS while nothing else is said
 * (no info: a runtime without it, or sluiced unpacking). */
#ifndef SLUICECTL_IMPORT_LINE_H
#define SLUICECTL_IMPORT_LINE_H

#include <stddef.h>
#include <stdint.h>

#define CTL_IMPORT_QUIET_MS 5000u

typedef struct ctl_import_seen {
    uint64_t bytes_read; /* of the last bytes line */
    char phase[16];      /* "" before the first info */
    uint64_t last_line_ms;
} ctl_import_seen;

/* Writes into buf the line to print for the answer info (NULL or not
 * JSON: no progress known) now_ms after the import was asked for; returns
 * 1, or 0 when there is nothing new to say. seen starts zeroed. */
int ctl_import_line(const char *name, const char *info, uint64_t now_ms, ctl_import_seen *seen,
                    char *buf, size_t n);

#endif
