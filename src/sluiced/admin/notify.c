/* sd_notify's protocol without libsystemd (see notify.h for why). */
#include "admin/notify.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool sl_notify_parse(sl_notify *n, const char *value)
{
    memset(n, 0, sizeof(*n));
    if (!value || !*value)
        return true;
    size_t len = strlen(value);
    if ((value[0] != '/' && value[0] != '@') || len >= sizeof(n->addr.sun_path))
        return false;
    n->addr.sun_family = AF_UNIX;
    memcpy(n->addr.sun_path, value, len);
    if (value[0] == '@')
        n->addr.sun_path[0] = '\0'; /* abstract: no terminating NUL counted */
    n->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (value[0] == '/'));
    return true;
}

bool sl_notify_init(sl_notify *n)
{
    bool ok = sl_notify_parse(n, getenv("NOTIFY_SOCKET"));
    unsetenv("NOTIFY_SOCKET");
    return ok;
}

int sl_notify_send(const sl_notify *n, const char *state)
{
    if (!n->len)
        return 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    ssize_t sent =
        sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&n->addr, n->len);
    int err = errno;
    close(fd);
    errno = err;
    return sent < 0 ? -1 : 0;
}
