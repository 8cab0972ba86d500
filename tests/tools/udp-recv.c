/* udp-recv PORT: prints every UDP datagram that reaches PORT (IPv4, any
 * address) on stdout, one write each, until killed. Linked statically so
 * the interop tests can mount it into a busybox container, whose nc has
 * no UDP mode. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: udp-recv PORT\n");
        return 2;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)atoi(argv[1])),
                             .sin_addr.s_addr = htonl(INADDR_ANY)};
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("udp-recv");
        return 1;
    }
    char buf[65536];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n > 0 && write(1, buf, (size_t)n) < 0)
            return 1;
    }
}
