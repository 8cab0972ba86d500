/* The log of sluiced and sluice-mon: one line per event in logfmt,
 *
 *   time=2025-01-02T03:04:05.678901Z level=warn msg="CRI call failed" method=RunPodSandbox
 *
 * key=value fields after the message; a value with a space, '"', '=', '\'
 * or a control character is quoted with Go-style escapes (\" \\ \n \t
 * \xNN), so every line is one event however odd its text.
 *
 * Journal: when stderr is the journal's stream (JOURNAL_STREAM names its
 * device and inode, as systemd sets it) a line starts with the syslog
 * priority "<N>" (journald reads it, SyslogLevelPrefix=) and carries no
 * time (the journal stamps every line). Anywhere else the line starts
 * with time= in UTC.
 *
 * The level and the output are process-wide (a daemon has one log); the
 * level may change at any time (SIGHUP). Lines are written to the fd with
 * one write(2), so they do not interleave with other writers' lines. */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest line written (longer ones are cut, ending in "..."). */
#define SL_LOG_LINE_MAX 8192
/* Longest value kept of one field before quoting (longer: cut). */
#define SL_LOG_VALUE_MAX 2048

enum { SL_LOG_ERROR = 0, SL_LOG_WARN = 1, SL_LOG_INFO = 2, SL_LOG_DEBUG = 3 };

/* "error", "warn", "info", "debug" (also "warning") → level; -1 otherwise. */
int sl_log_level_parse(const char *name);
/* The level's name ("warn" for SL_LOG_WARN). */
const char *sl_log_level_name(int level);

/* Writes to fd from now on; journal: true when fd is the journal's stream
 * (see sl_log_is_journal). */
void sl_log_setup(int fd, bool journal);
/* True when JOURNAL_STREAM ("DEV:INO") names fd's file. */
bool sl_log_is_journal(int fd);

void sl_log_set_level(int level);
int sl_log_get_level(void);
/* True when a line of this level is written. */
bool sl_log_enabled(int level);

/* Logs msg with key, value pairs (const char *, NULL values are left out),
 * ended by a NULL key. */
void sl_log(int level, const char *msg, ...) __attribute__((sentinel));
void sl_logv(int level, const char *msg, va_list ap);
/* The same with nkv pairs in kv (kv[2i] key, kv[2i+1] value). */
void sl_log_kv(int level, const char *msg, const char *const *kv, size_t nkv);

/* The formatting alone, for tests: the line for level, msg and nkv
 * key/value pairs in kv (kv[2i] key, kv[2i+1] value), with ts (NULL: no
 * time=) and a "<N>" prefix when prio. Writes at most cap - 1 bytes plus a
 * NUL into buf, ending in '\n'. Returns the length. */
size_t sl_log_format(char *buf, size_t cap, int level, const char *ts, bool prio, const char *msg,
                     const char *const *kv, size_t nkv);

/* A time= value: RFC 3339 in UTC with microseconds. buf has 32 bytes. */
void sl_log_timestamp(int64_t real_ns, char *buf);

#endif
