#include "sluice/error.h"

const char *sl_strerror(int err)
{
    switch ((sl_err)err) {
    case SL_OK:
        return "success";
    case SL_ERR_NOMEM:
        return "out of memory";
    case SL_ERR_INVAL:
        return "invalid argument";
    case SL_ERR_FULL:
        return "limit reached";
    case SL_ERR_NOTFOUND:
        return "not found";
    case SL_ERR_SYS:
        return "system error";
    case SL_ERR_WOULDBLOCK:
        return "would block";
    case SL_ERR_CLOSED:
        return "closed";
    case SL_ERR_STATE:
        return "invalid state";
    case SL_ERR_PROTO:
        return "protocol error";
    case SL_ERR_TOO_LARGE:
        return "too large";
    case SL_ERR_UNSUPPORTED:
        return "unsupported";
    case SL_ERR_COMPRESSION:
        return "compression error";
    }
    return "unknown error";
}

bool sl_err_is_fatal(int err)
{
    return err <= -100 && err > -200;
}
