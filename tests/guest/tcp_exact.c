/* tcp_exact.c — TCP over loopback as Linux: after the peer closes, the
 * first send goes out (or fails with ECONNRESET when the peer left our
 * bytes unread), then sends fail with EPIPE and SIGPIPE; getpeername is
 * ENOTCONN once the connection is gone; a non-blocking connect is
 * EINPROGRESS, then SO_ERROR 0 (or ECONNREFUSED, once); and the binding
 * rules: EADDRINUSE, EADDRNOTAVAIL, SO_REUSEADDR and SO_REUSEPORT. */
#include "check.h"
#include "tcp_loopback.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig) {
    (void)sig;
    sigpipes++;
}

/* A listener on a fresh loopback port. */
/* A connected pair: the client in c, the server's end in s. */
static void connected(int *c, int *s) {
    int port;
    int l = tcp_listener(&port);
    *c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = loopback(port);
    CHECK_OK(connect(*c, (struct sockaddr *)&a, sizeof(a)));
    *s = CHECK_OK(accept(l, NULL, NULL));
    close(l);
}

static int peer_ok(int fd) {
    struct sockaddr_in a;
    socklen_t n = sizeof(a);
    return getpeername(fd, (struct sockaddr *)&a, &n);
}

static void peer_closed(void) {
    int c, s;
    char ch;
    /* A clean close (FIN): the first send goes out and draws the reset;
     * from then on EPIPE with SIGPIPE, and no peer name. */
    connected(&c, &s);
    close(s);
    usleep(20000);
    CHECK_EQ(recv(c, &ch, 1, 0), 0);
    CHECK_EQ(peer_ok(c), 0);
    sigpipes = 0;
    CHECK_EQ(send(c, "x", 1, 0), 1);
    usleep(20000);
    CHECK_ERR(peer_ok(c), ENOTCONN);
    CHECK_ERR(send(c, "x", 1, 0), EPIPE);
    CHECK_EQ(sigpipes, 1);
    CHECK_ERR(send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
    CHECK_EQ(sigpipes, 1);
    CHECK_ERR(write(c, "x", 1), EPIPE);
    CHECK_EQ(sigpipes, 2);
    int f = CHECK_OK(open(scratch_path("data"), O_RDWR | O_CREAT, 0600));
    CHECK_EQ(write(f, "data", 4), 4);
    CHECK_OK(lseek(f, 0, SEEK_SET));
    CHECK_ERR(sendfile(c, f, NULL, 1), EPIPE);
    close(f);
    CHECK_EQ(recv(c, &ch, 1, MSG_DONTWAIT), 0);
    int err = -1;
    socklen_t len = sizeof(err);
    CHECK_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
    CHECK_EQ(err, 0);
    close(c);

    /* The peer closed with our bytes unread (RST): ECONNRESET once, and
     * no peer name at once; then EPIPE with SIGPIPE. */
    connected(&c, &s);
    CHECK_EQ(send(c, "zz", 2, 0), 2);
    usleep(20000);
    close(s);
    usleep(20000);
    CHECK_ERR(peer_ok(c), ENOTCONN);
    sigpipes = 0;
    CHECK_ERR(send(c, "x", 1, 0), ECONNRESET);
    CHECK_EQ(sigpipes, 0);
    CHECK_ERR(send(c, "x", 1, 0), EPIPE);
    CHECK_EQ(sigpipes, 1);
    CHECK_EQ(recv(c, &ch, 1, MSG_DONTWAIT), 0);
    close(c);
}

static void nonblocking_connect(void) {
    int port;
    int l = tcp_listener(&port);
    struct sockaddr_in a = loopback(port);
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), EINPROGRESS);
    struct pollfd p = {.fd = c, .events = POLLOUT};
    CHECK_EQ(poll(&p, 1, 2000), 1);
    CHECK_EQ(p.revents, POLLOUT);
    int err = -1;
    socklen_t len = sizeof(err);
    CHECK_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
    CHECK_EQ(err, 0);
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), EISCONN);
    CHECK_EQ(peer_ok(c), 0);
    close(c);
    close(l);

    /* Nobody listens now: refused, told once by SO_ERROR. */
    c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), EINPROGRESS);
    p.fd = c;
    p.events = POLLOUT | POLLIN;
    CHECK_EQ(poll(&p, 1, 2000), 1);
    CHECK_EQ(p.revents, POLLOUT | POLLIN | POLLERR | POLLHUP);
    err = -1;
    CHECK_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
    CHECK_EQ(err, ECONNREFUSED);
    CHECK_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
    CHECK_EQ(err, 0);
    CHECK_ERR(peer_ok(c), ENOTCONN);
    close(c);
    c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), ECONNREFUSED);
    close(c);
}

static int sock_opt(int ty, int opt) {
    int s = CHECK_OK(socket(AF_INET, ty, 0));
    int one = 1;
    if (opt)
        CHECK_OK(setsockopt(s, SOL_SOCKET, opt, &one, sizeof(one)));
    return s;
}

static int bind_to(int s, struct sockaddr_in a) {
    return bind(s, (struct sockaddr *)&a, sizeof(a));
}

static void binding(void) {
    /* A port a listener holds. */
    int port;
    int l = tcp_listener(&port);
    int s = sock_opt(SOCK_STREAM, 0);
    CHECK_ERR(bind_to(s, loopback(port)), EADDRINUSE);
    close(s);
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    s = sock_opt(SOCK_STREAM, 0);
    CHECK_ERR(bind_to(s, any), EADDRINUSE);
    close(s);
    /* SO_REUSEADDR does not share a listening port. */
    s = sock_opt(SOCK_STREAM, SO_REUSEADDR);
    CHECK_ERR(bind_to(s, loopback(port)), EADDRINUSE);
    close(s);
    /* Binding twice is EINVAL. */
    s = sock_opt(SOCK_STREAM, 0);
    CHECK_OK(bind_to(s, loopback(0)));
    CHECK_ERR(bind_to(s, loopback(0)), EINVAL);
    close(s);
    /* An address that is not the host's. */
    s = sock_opt(SOCK_STREAM, 0);
    struct sockaddr_in far = {.sin_family = AF_INET, .sin_addr.s_addr = inet_addr("198.18.0.1")};
    CHECK_ERR(bind_to(s, far), EADDRNOTAVAIL);
    close(s);
    s = sock_opt(SOCK_DGRAM, 0);
    CHECK_ERR(bind_to(s, far), EADDRNOTAVAIL);
    close(s);

    /* A closed listener leaves its port free (no connection, no
     * TIME_WAIT). */
    close(l);
    s = sock_opt(SOCK_STREAM, 0);
    CHECK_OK(bind_to(s, loopback(port)));
    close(s);
    /* A listener whose connection the server closed first (its end
     * lingers in TIME_WAIT on Linux): with SO_REUSEADDR on both the
     * listener and the new socket, the port is free again at once. */
    l = sock_opt(SOCK_STREAM, SO_REUSEADDR);
    CHECK_OK(bind_to(l, loopback(0)));
    CHECK_OK(listen(l, 1));
    port = port_of(l);
    struct sockaddr_in a = loopback(port);
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
    int srv = CHECK_OK(accept(l, NULL, NULL));
    close(srv);
    close(l);
    usleep(20000);
    close(c);
    s = sock_opt(SOCK_STREAM, SO_REUSEADDR);
    CHECK_OK(bind_to(s, loopback(port)));
    CHECK_OK(listen(s, 1));
    close(s);

    /* SO_REUSEPORT: every socket of the group sets it; then they share
     * the port, listeners and datagram sockets alike. */
    for (int ty = SOCK_STREAM; ty <= SOCK_DGRAM; ty++) {
        int x = sock_opt(ty, SO_REUSEPORT);
        CHECK_OK(bind_to(x, loopback(0)));
        port = port_of(x);
        if (ty == SOCK_STREAM)
            CHECK_OK(listen(x, 1));
        int y = sock_opt(ty, SO_REUSEPORT);
        CHECK_OK(bind_to(y, loopback(port)));
        if (ty == SOCK_STREAM)
            CHECK_OK(listen(y, 1));
        int z = sock_opt(ty, 0);
        CHECK_ERR(bind_to(z, loopback(port)), EADDRINUSE);
        close(z);
        z = sock_opt(ty, SO_REUSEADDR);
        CHECK_ERR(bind_to(z, loopback(port)), EADDRINUSE);
        close(z);
        close(x);
        close(y);
    }
    /* UDP: SO_REUSEADDR on both shares the port. */
    int u1 = sock_opt(SOCK_DGRAM, SO_REUSEADDR);
    CHECK_OK(bind_to(u1, loopback(0)));
    port = port_of(u1);
    int u2 = sock_opt(SOCK_DGRAM, SO_REUSEADDR);
    CHECK_OK(bind_to(u2, loopback(port)));
    int u3 = sock_opt(SOCK_DGRAM, 0);
    CHECK_ERR(bind_to(u3, loopback(port)), EADDRINUSE);
    close(u1);
    close(u2);
    close(u3);
}

int main(void) {
    struct sigaction sa = {.sa_handler = on_sigpipe};
    CHECK_OK(sigaction(SIGPIPE, &sa, NULL));
    peer_closed();
    nonblocking_connect();
    binding();
    puts("tcp_exact: ok");
    return 0;
}
