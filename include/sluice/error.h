/* Error codes of libsluice.
 *
 * Every function that can fail returns 0 (SL_OK) or a negative sl_err.
 * Codes are banded: -1..-99 are caller or system errors, -100..-199 are
 * protocol violations by the peer (fatal to that session only, never to the
 * process). */
#ifndef SLUICE_ERROR_H
#define SLUICE_ERROR_H

#include <stdbool.h>
#include "sluice/common.h"

typedef enum sl_err {
    SL_OK = 0,
    SL_ERR_NOMEM = -1,      /* allocation failed */
    SL_ERR_INVAL = -2,      /* invalid argument or request */
    SL_ERR_FULL = -3,       /* a named limit is reached (token cache full, ...) */
    SL_ERR_NOTFOUND = -4,   /* unknown, expired or used token, unknown id */
    SL_ERR_SYS = -5,        /* system call failed; errno tells why */
    SL_ERR_WOULDBLOCK = -6, /* no progress possible now; retry later */
    SL_ERR_CLOSED = -7,     /* the object is closed */
    SL_ERR_STATE = -8,      /* call not valid in the current state */

    SL_ERR_PROTO = -100,       /* malformed input from the peer */
    SL_ERR_TOO_LARGE = -101,   /* input exceeds a named limit */
    SL_ERR_UNSUPPORTED = -102, /* well-formed but unsupported by us */
    SL_ERR_COMPRESSION = -103, /* header block (de)compression failed */
} sl_err;

/* Returns a static, human readable text for an sl_err (an unknown code
 * has one too). Never NULL; any thread. SL_ERR_SYS's text does not say
 * which system error: the function returning it documents where errno or
 * a message keeps the cause (sl_server_errmsg, for one). */
SL_EXPORT const char *sl_strerror(int err);

/* True when err is a peer protocol violation that ends the session (the
 * -100..-199 band). Pure; any thread. */
SL_EXPORT bool sl_err_is_fatal(int err);

#endif
