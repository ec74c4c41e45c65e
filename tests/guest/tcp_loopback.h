/* tcp_loopback.h — TCP over IPv4 loopback for the socket guest programs:
 * an address, the port a socket is bound to, a listener on a fresh port.
 * Include after check.h. */
#ifndef TCP_LOOPBACK_H
#define TCP_LOOPBACK_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static inline struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return a;
}

static inline int port_of(int fd) {
    struct sockaddr_in a;
    socklen_t n = sizeof(a);
    CHECK_OK(getsockname(fd, (struct sockaddr *)&a, &n));
    return ntohs(a.sin_port);
}

/* A TCP listener on a port the kernel picks (backlog 4); the port in *port. */
static inline int tcp_listener(int *port) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = loopback(0);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
    CHECK_OK(listen(l, 4));
    *port = port_of(l);
    return l;
}
#endif
