#include "sys_error.h"

#include <stdio.h>
#include <string.h>

static int vset(sl_error *e, int errnum, int code, const char *fmt, va_list ap)
{
    if (!e)
        return -1;
    e->errnum = errnum;
    e->code = code;
    int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    if (errnum && n >= 0 && (size_t)n < sizeof(e->msg))
        snprintf(e->msg + n, sizeof(e->msg) - (size_t)n, ": %s", strerror(errnum));
    return -1;
}

int sl_error_set(sl_error *e, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(e, errnum, 0, fmt, ap);
    va_end(ap);
    return -1;
}

int sl_error_code(sl_error *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(e, 0, code, fmt, ap);
    va_end(ap);
    return -1;
}

int sl_error_wrap(sl_error *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char old[SL_SYS_ERROR_MAX];
    memcpy(old, e->msg, sizeof(old));
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n + 2 < sizeof(e->msg)) {
        size_t room = sizeof(e->msg) - (size_t)n - 2;
        memcpy(e->msg + n, ": ", 2);
        size_t ol = strnlen(old, room);
        memcpy(e->msg + n + 2, old, ol);
        e->msg[n + 2 + ol] = '\0';
    }
    return -1;
}

void sl_error_clear(sl_error *e)
{
    if (e) {
        e->errnum = 0;
        e->code = 0;
        e->msg[0] = '\0';
    }
}
