#include "hp_connect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int try_connect(int family, uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof(ss));
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*a);
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        a->sin6_addr = in6addr_loopback;
        len = sizeof(*a);
    }
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* Loopback connects complete or fail at once, so a blocking connect
     * does not stall the loop. */
    if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int sl_hp_connect_loopback(uint16_t port, char *err, size_t errlen)
{
    int fd = try_connect(AF_INET, port);
    if (fd >= 0)
        return fd;
    int e4 = errno;
    fd = try_connect(AF_INET6, port);
    if (fd >= 0)
        return fd;
    snprintf(err, errlen, "failed to connect to localhost:%u: IPv4: %s; IPv6: %s", port,
             strerror(e4), strerror(errno));
    return -1;
}
