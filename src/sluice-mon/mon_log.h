/* CRI container log writer (protocol notes §11): one record per line,
 * `<RFC3339Nano UTC> <stdout|stderr> <P|F> <content>\n`.
 *
 * Like containerd: a line's "\n" (or "\r\n") ends an F record and is not
 * part of the content; a line longer than line_max is cut into P records
 * of exactly line_max bytes and a final F with the rest (a line of exactly
 * line_max bytes is one F); an unterminated last line at end of stream is
 * written as a P record. Writes go to a regular file opened O_APPEND and
 * never block the caller on anything but the disk. The file only ever
 * holds whole records: a write that fails midway (a full disk) is cut back
 * to the last complete record, and the records of that call are dropped
 * and counted; the next call tries again, so logging resumes by itself
 * when space returns. */
#ifndef SL_MON_LOG_H
#define SL_MON_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsutil.h"
#include "util/bufq.h"
#include "mon_proto.h"

#define SL_MON_LOG_STDOUT 0
#define SL_MON_LOG_STDERR 1
#define SL_MON_LOG_TS_MAX 40 /* bytes of a timestamp with its NUL */

typedef struct sl_mon_log {
    int fd;     /* -1 when there is no log */
    char *path; /* NULL when there is no log */
    size_t line_max;
    char *pend[2]; /* unterminated line per stream, line_max bytes each */
    size_t pend_len[2];
    sl_bufq out;              /* records of one write call */
    uint64_t dropped;         /* bytes of records that could not be written */
    uint64_t dropped_records; /* those records */
    int err;                  /* errno of the last failed write; 0 once one succeeded */
    bool torn;                /* a cut-back failed: the file ends inside a record */
} sl_mon_log;

/* Opens path for appending (created 0640; a missing parent directory is
 * created). path NULL or "" means no log: writes are then discarded.
 * line_max 0 means SL_MON_LOG_LINE_MAX. Returns 0 or -1 (*e). */
int sl_mon_log_open(sl_mon_log *l, const char *path, size_t line_max, sl_error *e);
/* Opens the same path again (after rotation); on failure the old file
 * stays in use. Returns 0 or -1 (*e). */
int sl_mon_log_reopen(sl_mon_log *l, sl_error *e);
/* Logs len bytes of stream (SL_MON_LOG_STDOUT/STDERR) read at now_ns. */
void sl_mon_log_write(sl_mon_log *l, int stream, const void *data, size_t len, int64_t now_ns);
/* End of stream: an unterminated last line is written as a P record. */
void sl_mon_log_flush(sl_mon_log *l, int stream, int64_t now_ns);
/* The two above in steps, for a caller that must know what a write will
 * add before it happens: add (the records of len bytes) and cut (an
 * unterminated last line as a P record) only queue; queued is the length
 * of the records queued; push writes them (whole, or drops them as
 * sl_mon_log_write does). */
void sl_mon_log_add(sl_mon_log *l, int stream, const void *data, size_t len, int64_t now_ns);
void sl_mon_log_cut(sl_mon_log *l, int stream, int64_t now_ns);
size_t sl_mon_log_queued(const sl_mon_log *l);
void sl_mon_log_push(sl_mon_log *l);
void sl_mon_log_close(sl_mon_log *l);

/* Formats ns since the epoch like Go's time.RFC3339Nano in UTC (fraction
 * without trailing zeros, none at all when zero). buf has
 * SL_MON_LOG_TS_MAX bytes. Returns the length. */
size_t sl_mon_log_timestamp(int64_t ns, char *buf);

#endif
