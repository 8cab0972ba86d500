/* CRI log records and RFC 3339 times, without the C library's time zone
 * machinery (the record carries its own offset). */
#include "cri_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NS_PER_S 1000000000LL

/* Reads n decimal digits at s into *v; false if any is not a digit. */
static bool digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

int64_t sl_cri_civil_seconds(int year, int mon, int day, int h, int m, int s)
{
    /* days from 1970-01-01 of a proleptic Gregorian date (Hinnant's method) */
    int64_t y = year - (mon <= 2);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (mon + (mon > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return days * 86400 + h * 3600 + m * 60 + s;
}

static bool valid_date(int y, int mo, int d, int h, int mi, int s)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return y >= 1 && mo >= 1 && mo <= 12 && d >= 1 &&
           d <= (mo == 2 && !leap ? 28 : mdays[mo - 1]) && h <= 23 && mi <= 59 && s <= 60;
}

/* The fraction at s[*i] (after '.'), as nanoseconds. */
static bool fraction(const char *s, size_t len, size_t *i, int64_t *ns)
{
    size_t n = 0;
    *ns = 0;
    for ((*i)++; *i < len && s[*i] >= '0' && s[*i] <= '9'; (*i)++, n++)
        if (n < 9)
            *ns = *ns * 10 + (s[*i] - '0');
    for (size_t k = n; k < 9; k++)
        *ns *= 10;
    return n > 0;
}

/* The zone at s[i..len): "Z" or "±HH:MM", as seconds east of UTC. */
static bool zone(const char *s, size_t len, size_t i, int *off)
{
    int zh, zm;
    if (len - i == 1 && (s[i] == 'Z' || s[i] == 'z')) {
        *off = 0;
        return true;
    }
    if (len - i != 6 || (s[i] != '+' && s[i] != '-') || s[i + 3] != ':' ||
        !digits(s + i + 1, 2, &zh) || !digits(s + i + 4, 2, &zm) || zh > 23 || zm > 59)
        return false;
    *off = (s[i] == '-' ? -1 : 1) * (zh * 3600 + zm * 60);
    return true;
}

/* secs seconds and frac (0..999999999) nanoseconds since the epoch, as
 * nanoseconds saturated at INT64_MIN/INT64_MAX: an RFC 3339 year (1..9999)
 * can be outside 1677..2262, the range of int64 nanoseconds. */
static int64_t saturated_ns(int64_t secs, int64_t frac)
{
    if (secs > (INT64_MAX - frac) / NS_PER_S)
        return INT64_MAX;
    if (secs < INT64_MIN / NS_PER_S)
        return INT64_MIN;
    return secs * NS_PER_S + frac;
}

int sl_cri_time_parse(const char *s, size_t len, int64_t *ns)
{
    int y, mo, d, h, mi, sec, off;
    int64_t frac = 0;
    if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec) ||
        !valid_date(y, mo, d, h, mi, sec))
        return -1;
    size_t i = 19;
    if (s[i] == '.' && !fraction(s, len, &i, &frac))
        return -1;
    if (i >= len || !zone(s, len, i, &off))
        return -1;
    *ns = saturated_ns(sl_cri_civil_seconds(y, mo, d, h, mi, sec) - off, frac);
    return 0;
}

void sl_cri_time_format(int64_t ns, char out[40])
{
    int64_t secs = ns / NS_PER_S, frac = ns % NS_PER_S; /* floored, without overflow */
    if (frac < 0) {
        frac += NS_PER_S;
        secs--;
    }
    int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    int64_t rem = secs - days * 86400;
    /* civil from days (Hinnant's method) */
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    char buf[160]; /* what the compiler thinks 64-bit fields may need */
    snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%09lldZ", (long long)y,
             (long long)m, (long long)d, (long long)(rem / 3600), (long long)(rem / 60 % 60),
             (long long)(rem % 60), (long long)frac);
    size_t n = strlen(buf) < 39 ? strlen(buf) : 39;
    memcpy(out, buf, n);
    out[n] = '\0';
}

void sl_cri_time_fixed(const char *ts, size_t len, char out[64])
{
    size_t i = 0;
    while (i < len && ts[i] != '.' && ts[i] != 'Z' && ts[i] != '+' && (i < 10 || ts[i] != '-'))
        i++;
    size_t base = i, frac = 0;
    char digits[10] = "000000000";
    if (i < len && ts[i] == '.')
        for (i++; i < len && ts[i] >= '0' && ts[i] <= '9'; i++, frac++)
            if (frac < 9)
                digits[frac] = ts[i];
    snprintf(out, 64, "%.*s.%s%.*s", (int)(base < 40 ? base : 40), ts, digits,
             (int)(len - i < 8 ? len - i : 8), ts + i);
}

int sl_cri_log_parse(const char *line, size_t len, sl_cri_log_rec *out)
{
    const char *end = line + len;
    const char *sp1 = memchr(line, ' ', len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1)) : NULL;
    if (!sp2)
        return -1;
    const char *tags = sp2 + 1;
    const char *sp3 = memchr(tags, ' ', (size_t)(end - tags));
    size_t slen = (size_t)(sp2 - sp1 - 1);
    if (slen != 6 || (memcmp(sp1 + 1, "stdout", 6) && memcmp(sp1 + 1, "stderr", 6)))
        return -1;
    if (!sp3 || sl_cri_time_parse(line, (size_t)(sp1 - line), &out->ts_ns) < 0)
        return -1; /* the kubelet needs the blank after the tags too */
    out->ts = line;
    out->ts_len = (size_t)(sp1 - line);
    out->is_stderr = sp1[4] == 'e';
    out->partial = tags[0] == 'P' && (tags + 1 == sp3 || tags[1] == ':');
    out->content = sp3 + 1;
    out->content_len = (size_t)(end - sp3 - 1);
    return 0;
}

/* True when the record starting at off has the F tag (ends a line). */
static bool record_full(int fd, off_t off)
{
    char b[128];
    ssize_t n = pread(fd, b, sizeof b, off);
    int spaces = 0;
    for (ssize_t i = 0; i < n; i++)
        if (b[i] == ' ' && ++spaces == 2)
            return i + 1 < n && b[i + 1] == 'F';
    return false;
}

off_t sl_cri_log_tail_offset(int fd, int64_t n)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return 0;
    off_t pos = st.st_size, next_nl = -1; /* the newline ending the record looked at */
    if (n <= 0)
        return n == 0 ? pos : 0;
    char *buf = malloc(SL_CRI_LOG_TAIL_BLOCK);
    int64_t full = 0;
    while (buf && pos > 0) {
        size_t want = pos > (off_t)SL_CRI_LOG_TAIL_BLOCK ? SL_CRI_LOG_TAIL_BLOCK : (size_t)pos;
        pos -= (off_t)want;
        if (pread(fd, buf, want, pos) != (ssize_t)want)
            break;
        for (size_t i = want; i-- > 0;) {
            if (buf[i] != '\n')
                continue;
            off_t nl = pos + (off_t)i;
            /* the record after this newline starts a line if the one before ended one */
            if (next_nl >= 0 && record_full(fd, nl + 1) && ++full == n + 1) {
                free(buf);
                return next_nl + 1;
            }
            next_nl = nl;
        }
    }
    free(buf);
    if (pos == 0 && next_nl >= 0 && record_full(fd, 0) && ++full == n + 1)
        return next_nl + 1; /* the file's first record */
    return 0;
}
