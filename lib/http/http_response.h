/* Building HTTP/1.1 responses into a byte queue. */
#ifndef SL_HTTP_RESPONSE_H
#define SL_HTTP_RESPONSE_H

#include "util/bufq.h"

/* Standard reason phrase for a status ("Not Found"), "Unknown" otherwise. */
const char *sl_http_reason(int status);

/* Appends a complete response with a text/plain body and
 * "Connection: close". extra_headers is NULL or CRLF-terminated lines.
 * Returns SL_OK or SL_ERR_NOMEM. */
int sl_http_write_error(sl_bufq *out, int status, const char *extra_headers, const char *body);

/* Appends "HTTP/1.1 101 Switching Protocols" + headers (CRLF-terminated
 * lines) + the blank line. Returns SL_OK or SL_ERR_NOMEM. */
int sl_http_write_101(sl_bufq *out, const char *headers);

#endif
