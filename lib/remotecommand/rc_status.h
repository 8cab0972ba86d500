/* The final status of a remote command, per protocol version (protocol
 * notes §5.3): v4/v5 write a metav1.Status JSON always; older versions
 * write the failure message as plain text and nothing on success. */
#ifndef SL_RC_STATUS_H
#define SL_RC_STATUS_H

#include <stddef.h>

typedef enum sl_rc_outcome {
    SL_RC_EXITED,   /* the process ended; see exit_code */
    SL_RC_INTERNAL, /* it could not run or the session failed; see message */
} sl_rc_outcome;

/* Formats the status into a malloc'd buffer (*out, *len); *out is NULL
 * with *len 0 when nothing is to be written (success before v4).
 * json: v4/v5 format. attach: the "error attaching to container" prefix
 * for internal errors. message: detail text (may be NULL).
 * Returns SL_OK or SL_ERR_NOMEM. */
int sl_rc_status_format(int json, int attach, sl_rc_outcome outcome, int exit_code,
                        const char *message, char **out, size_t *len);

#endif
