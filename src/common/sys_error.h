/* Error objects for system code (daemon, monitor, CLI): an errno plus a
 * message, wrapped with context as it rises; main prints it once.
 * Library code (lib/) uses negative sl_err codes instead. */
#ifndef SL_SYS_ERROR_H
#define SL_SYS_ERROR_H

#include <stdarg.h>

#define SL_SYS_ERROR_MAX 1024

typedef struct sl_error {
    int errnum;                 /* errno value, 0 when none applies */
    int code;                   /* domain code (e.g. a gRPC status), 0 when none */
    char msg[SL_SYS_ERROR_MAX]; /* "context: context: cause" */
} sl_error;

/* Sets *e (if e is not NULL) and returns -1, so callers can write
 * `return sl_error_set(e, errno, "open %s", path);`. The errno text is
 * appended when errnum != 0. */
int sl_error_set(sl_error *e, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Like sl_error_set with a domain code (e.g. GRPC_NOT_FOUND). */
int sl_error_code(sl_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes the message with "context: " and returns -1. */
int sl_error_wrap(sl_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sl_error_clear(sl_error *e);

#endif
