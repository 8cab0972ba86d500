/* logfmt lines for the daemons (see sl_log.h). */
#include "sl_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FIELDS 32 /* key/value pairs of one line */

static const char *const level_names[] = {"error", "warn", "info", "debug"};
/* syslog priorities: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */
static const int level_prio[] = {3, 4, 6, 7};

static int log_fd = 2;
static bool log_journal;
static volatile int log_level = SL_LOG_INFO;

int sl_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return strcmp(name, "warning") == 0 ? SL_LOG_WARN : -1;
}

const char *sl_log_level_name(int level)
{
    return level >= 0 && level <= SL_LOG_DEBUG ? level_names[level] : "?";
}

bool sl_log_is_journal(int fd)
{
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (!v || sscanf(v, "%llu:%llu", &dev, &ino) != 2 || fstat(fd, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void sl_log_setup(int fd, bool journal)
{
    log_fd = fd;
    log_journal = journal;
}

void sl_log_set_level(int level)
{
    if (level >= SL_LOG_ERROR && level <= SL_LOG_DEBUG)
        log_level = level;
}

int sl_log_get_level(void)
{
    return log_level;
}

bool sl_log_enabled(int level)
{
    return level <= log_level;
}

void sl_log_timestamp(int64_t ns, char *buf)
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char date[24];
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, 32, "%.19s.%06dZ", date, (int)(ns % 1000000000 / 1000));
}

/* An output buffer that never overflows: what does not fit is dropped and
 * remembered. */
typedef struct out {
    char *p;
    size_t len, cap; /* cap excludes the room kept for "...\n\0" */
    bool cut;
} out;

static void put(out *o, const char *s, size_t n)
{
    if (o->len + n > o->cap) {
        n = o->cap - o->len;
        o->cut = true;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void puts_(out *o, const char *s)
{
    put(o, s, strlen(s));
}

static bool needs_quotes(const char *v, size_t n)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f)
            return true;
    }
    return false;
}

static void put_escaped(out *o, unsigned char c)
{
    char esc[8];
    if (c == '"' || c == '\\')
        snprintf(esc, sizeof(esc), "\\%c", c);
    else if (c == '\n')
        snprintf(esc, sizeof(esc), "\\n");
    else if (c == '\t')
        snprintf(esc, sizeof(esc), "\\t");
    else if (c == '\r')
        snprintf(esc, sizeof(esc), "\\r");
    else if (c < ' ' || c == 0x7f)
        snprintf(esc, sizeof(esc), "\\x%02x", c);
    else
        snprintf(esc, sizeof(esc), "%c", c);
    puts_(o, esc);
}

static void put_value(out *o, const char *v)
{
    size_t n = strnlen(v, SL_LOG_VALUE_MAX);
    if (!needs_quotes(v, n)) {
        put(o, v, n);
        return;
    }
    puts_(o, "\"");
    for (size_t i = 0; i < n; i++)
        put_escaped(o, (unsigned char)v[i]);
    puts_(o, v[n] ? "...\"" : "\"");
}

static void put_field(out *o, const char *key, const char *value)
{
    puts_(o, " ");
    puts_(o, key);
    puts_(o, "=");
    put_value(o, value);
}

size_t sl_log_format(char *buf, size_t cap, int level, const char *ts, bool prio, const char *msg,
                     const char *const *kv, size_t nkv)
{
    static const char tail[] = "...\n";
    if (cap < sizeof(tail) + 1) {
        if (cap)
            buf[0] = '\0';
        return 0;
    }
    out o = {.p = buf, .cap = cap - sizeof(tail)};
    char head[48];
    level = level < SL_LOG_ERROR ? SL_LOG_ERROR : level > SL_LOG_DEBUG ? SL_LOG_DEBUG : level;
    if (prio) {
        snprintf(head, sizeof(head), "<%d>", level_prio[level]);
        puts_(&o, head);
    }
    if (ts) {
        puts_(&o, "time=");
        puts_(&o, ts);
        puts_(&o, " ");
    }
    puts_(&o, "level=");
    puts_(&o, level_names[level]);
    put_field(&o, "msg", msg ? msg : "");
    for (size_t i = 0; i < nkv; i++)
        if (kv[2 * i] && kv[2 * i + 1])
            put_field(&o, kv[2 * i], kv[2 * i + 1]);
    if (o.cut) {
        memcpy(buf + o.len, tail, sizeof(tail));
        return o.len + sizeof(tail) - 1;
    }
    buf[o.len] = '\n';
    buf[o.len + 1] = '\0';
    return o.len + 1;
}

void sl_log_kv(int level, const char *msg, const char *const *kv, size_t nkv)
{
    if (!sl_log_enabled(level))
        return;
    char ts[32], line[SL_LOG_LINE_MAX];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    sl_log_timestamp((int64_t)now.tv_sec * 1000000000 + now.tv_nsec, ts);
    size_t len = sl_log_format(line, sizeof(line), level, log_journal ? NULL : ts, log_journal, msg,
                               kv, nkv);
    int saved = errno; /* logging never changes errno for the caller */
    while (write(log_fd, line, len) < 0 && errno == EINTR)
        ;
    errno = saved;
}

void sl_logv(int level, const char *msg, va_list ap)
{
    if (!sl_log_enabled(level))
        return;
    const char *kv[2 * MAX_FIELDS];
    size_t n = 0;
    const char *key;
    while ((key = va_arg(ap, const char *))) {
        const char *value = va_arg(ap, const char *);
        if (n < MAX_FIELDS) {
            kv[2 * n] = key;
            kv[2 * n + 1] = value;
            n++;
        }
    }
    sl_log_kv(level, msg, kv, n);
}

void sl_log(int level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    sl_logv(level, msg, ap);
    va_end(ap);
}
