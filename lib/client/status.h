/* The end of a remote command as the client sees it (protocol notes §5.3,
 * §5.4): decoding the error-stream payload per protocol version, and the
 * resize message. I/O free. */
#ifndef SL_CLIENT_STATUS_H
#define SL_CLIENT_STATUS_H

#include <stddef.h>
#include <stdint.h>

#define SL_STATUS_MESSAGE_MAX 512 /* bytes of a decoded message kept */
#define SL_RESIZE_MSG_MAX 48      /* {"Width":65535,"Height":65535}\n + NUL */

typedef struct sl_status {
    int exited;    /* 1: the command ended with exit_code; 0: a failure (message) */
    int exit_code; /* 0..255 when exited */
    char message[SL_STATUS_MESSAGE_MAX]; /* failure text, or the status message of an exit code */
} sl_status;

/* Decodes the whole error-stream payload of a session of protocol version
 * 1..5 the way client-go does: empty means success for every version;
 * v1..v3 carry the failure text; v4/v5 a metav1.Status JSON (Success -> 0,
 * NonZeroExitCode with an ExitCode cause -> that code, anything else a
 * failure with its message, malformed JSON a failure naming the error). */
void sl_status_decode(int version, const uint8_t *data, size_t len, sl_status *st);

/* Formats {"Width":w,"Height":h}\n (Go's json.Encoder output) into buf;
 * returns its length. */
size_t sl_resize_format(char buf[SL_RESIZE_MSG_MAX], uint16_t width, uint16_t height);

#endif
