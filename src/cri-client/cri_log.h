/* CRI container log records (protocol notes §11), read as the kubelet
 * reads them: "TIMESTAMP STREAM TAGS CONTENT", TIMESTAMP in RFC 3339 with
 * up to nine fraction digits, STREAM stdout or stderr, TAGS the first of
 * which is P (partial: the line goes on in the next record) or F. Shared
 * by sluicectl logs and sluice-kube's pods/log. Only the tail search reads
 * (with pread); nothing else does I/O. */
#ifndef SL_CRI_LOG_H
#define SL_CRI_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct sl_cri_log_rec {
    const char *ts; /* the timestamp as written */
    size_t ts_len;
    int64_t ts_ns; /* nanoseconds since the epoch */
    bool is_stderr;
    bool partial;        /* tag P */
    const char *content; /* up to the end of the record, without a '\n' */
    size_t content_len;
} sl_cri_log_rec;

/* Parses one record (without its '\n'). Returns 0, or -1 when the line is
 * not a CRI record (the kubelet skips such lines). Pointers are into line. */
int sl_cri_log_parse(const char *line, size_t len, sl_cri_log_rec *out);

/* Parses "YYYY-MM-DDTHH:MM:SS[.F...]" followed by "Z" or "+HH:MM"/"-HH:MM"
 * (RFC 3339; fraction digits beyond nine are dropped) into nanoseconds
 * since the epoch, saturated at INT64_MIN/INT64_MAX for times before 1677
 * or after 2262. Returns 0, or -1 when s (len bytes) is not such a time. */
int sl_cri_time_parse(const char *s, size_t len, int64_t *ns);

/* The kubelet's output form of a record's timestamp: nine fraction digits,
 * the record's own zone kept ("2016-10-06T00:17:09.5Z" becomes
 * "2016-10-06T00:17:09.500000000Z"). out: 64 bytes. */
void sl_cri_time_fixed(const char *ts, size_t len, char out[64]);

/* Seconds since the epoch of a UTC civil date and time (no time zone
 * database, any year from 1 on). */
int64_t sl_cri_civil_seconds(int year, int mon, int day, int h, int m, int s);

/* Formats ns as the kubelet prints log timestamps: RFC 3339 in UTC with
 * nine fraction digits, "2016-10-06T00:17:09.669794202Z". out: 40 bytes. */
void sl_cri_time_format(int64_t ns, char out[40]);

/* Where the last n lines of the CRI log file fd start, a line being a
 * run of P records and the F record that ends it (the kubelet counts
 * records; people count lines). 0 when the file has n lines or fewer, the
 * file's size for n == 0. Reads backwards in SL_CRI_LOG_TAIL_BLOCK blocks;
 * the file offset is not moved. */
#define SL_CRI_LOG_TAIL_BLOCK 65536u
off_t sl_cri_log_tail_offset(int fd, int64_t n);

#endif
