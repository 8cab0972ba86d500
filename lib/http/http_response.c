/* Building HTTP/1.1 responses. Each response is appended with a single
 * formatted append, so on SL_ERR_NOMEM nothing partial is queued. */
#include "http/http_response.h"

#include <string.h>

#include "sluice/error.h"

typedef struct reason {
    int status;
    const char *text;
} reason;

/* RFC 9110 §15 reason phrases of the codes a streaming server can meet. */
static const reason reasons[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {206, "Partial Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {422, "Unprocessable Entity"},
    {426, "Upgrade Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *sl_http_reason(int status)
{
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].status == status)
            return reasons[i].text;
    return "Unknown";
}

int sl_http_write_error(sl_bufq *out, int status, const char *extra_headers, const char *body)
{
    if (!body)
        body = "";
    if (!extra_headers)
        extra_headers = "";
    /* The same header set as Go's http.Error, plus Connection: close: the
     * connection is never reused after an error. */
    return sl_bufq_appendf(out,
                           "HTTP/1.1 %d %s\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\n"
                           "X-Content-Type-Options: nosniff\r\n"
                           "Content-Length: %zu\r\n"
                           "Connection: close\r\n"
                           "%s\r\n%s",
                           status, sl_http_reason(status), strlen(body), extra_headers, body);
}

int sl_http_write_101(sl_bufq *out, const char *headers)
{
    return sl_bufq_appendf(out, "HTTP/1.1 101 Switching Protocols\r\n%s\r\n",
                           headers ? headers : "");
}
