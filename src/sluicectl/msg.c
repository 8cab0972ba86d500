/* sluicectl's messages on stderr, all "sluicectl COMMAND: ...": a
 * command's failure (printed once, by the command), warnings about what
 * does not end it, and -D's debug lines. */
#include <stdarg.h>
#include <stdio.h>

#include "ctl.h"

static void vmsg(const char *kind, ctl *c, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s%s%s: %s", CTL_NAME, c && c->cmd ? " " : "", c && c->cmd ? c->cmd : "",
            kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void ctl_warn(ctl *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", c, fmt, ap);
    va_end(ap);
}

int ctl_fail(ctl *c, const sl_error *e)
{
    fprintf(stderr, "%s%s%s: %s\n", CTL_NAME, c->cmd ? " " : "", c->cmd ? c->cmd : "", e->msg);
    return CTL_EXIT_FAIL;
}

void ctl_debug(ctl *c, const char *fmt, ...)
{
    if (!c->debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg("debug: ", c, fmt, ap);
    va_end(ap);
}
