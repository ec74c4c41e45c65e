/* tcp_ports.c — who holds a port around a TCP connection's end, as Linux:
 * the end that closed first keeps its port in TIME_WAIT (binding it fails
 * with EADDRINUSE, SO_REUSEADDR or not when the old socket had none), and
 * in FIN_WAIT2 until TCP_LINGER2 runs out; the end that closed last lets
 * go at once; an accepted connection shares its listener's port; shutdown
 * of a closed connection fails with ENOTCONN; SO_REUSEPORT spreads TCP
 * connections and UDP flows over the sockets sharing a port. */
#include "check.h"
#include "tcp_loopback.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

static void setint(int fd, int level, int name, int v) {
    CHECK_OK(setsockopt(fd, level, name, &v, sizeof(v)));
}

static int listener(int reuse) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    if (reuse)
        setint(l, SOL_SOCKET, SO_REUSEADDR, 1);
    struct sockaddr_in a = loopback(0);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
    CHECK_OK(listen(l, 16));
    return l;
}

static int connect_to(int port) {
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = loopback(port);
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
    return c;
}

/* bind(2) of a fresh TCP socket to 127.0.0.1:port: 0 or the errno. */
static int try_bind(int port, int reuse) {
    int fd = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    if (reuse)
        setint(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    struct sockaddr_in a = loopback(port);
    int r = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : errno;
    close(fd);
    return r;
}

static void wait_hup(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK(p.revents & POLLHUP);
}

/* `first` shuts its writing side, then `last`; both are closed after. */
static void close_in_order(int first, int last) {
    CHECK_OK(shutdown(first, SHUT_WR));
    char c = 'x';
    CHECK_EQ(send(last, &c, 1, 0), 1);
    CHECK_EQ(recv(first, &c, 1, 0), 1);
    CHECK_OK(shutdown(last, SHUT_WR));
    wait_hup(first);
    /* Both sides sent FIN: the connection is closed, shutdown says so. */
    CHECK_ERR(shutdown(first, SHUT_WR), ENOTCONN);
    CHECK_ERR(shutdown(last, SHUT_RDWR), ENOTCONN);
    close(last);
    close(first);
}

static void time_wait(void) {
    /* The client closes first: its port stays in TIME_WAIT; the
     * listener's (shared by the accepted end, which closed last) is free
     * once the listener is gone. */
    int l = listener(0);
    int lport = port_of(l);
    int c = connect_to(lport);
    int s = CHECK_OK(accept(l, NULL, NULL));
    int cport = port_of(c);
    /* While the accepted connection lives, the listener's port is held. */
    close(l);
    CHECK_EQ(try_bind(lport, 0), EADDRINUSE);
    CHECK_EQ(try_bind(lport, 1), EADDRINUSE);
    close_in_order(c, s);
    CHECK_EQ(try_bind(cport, 0), EADDRINUSE);
    CHECK_EQ(try_bind(cport, 1), EADDRINUSE);
    CHECK_EQ(try_bind(lport, 0), 0);

    /* The accepted end closes first: the listener's port stays held,
     * except for a socket with SO_REUSEADDR when the listener had it. */
    l = listener(1);
    lport = port_of(l);
    c = connect_to(lport);
    s = CHECK_OK(accept(l, NULL, NULL));
    cport = port_of(c);
    close(l);
    close_in_order(s, c);
    CHECK_EQ(try_bind(lport, 0), EADDRINUSE);
    CHECK_EQ(try_bind(lport, 1), 0);
    CHECK_EQ(try_bind(cport, 0), 0);

    /* Shut one way only, the connection lives on: shutdown succeeds. */
    l = listener(0);
    c = connect_to(port_of(l));
    s = CHECK_OK(accept(l, NULL, NULL));
    CHECK_OK(shutdown(s, SHUT_WR));
    usleep(50 * 1000);
    CHECK_OK(shutdown(s, SHUT_WR));
    close(s);
    close(c);
    close(l);
}

static void fin_wait2(void) {
    int l = listener(0);
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    setint(c, IPPROTO_TCP, TCP_LINGER2, 1);
    struct sockaddr_in a = loopback(port_of(l));
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
    int s = CHECK_OK(accept(l, NULL, NULL));
    int cport = port_of(c);
    /* Closed while the peer has not: FIN_WAIT2 holds the port ... */
    close(c);
    usleep(100 * 1000);
    CHECK_EQ(try_bind(cport, 0), EADDRINUSE);
    /* ... until TCP_LINGER2 runs out. */
    usleep(1500 * 1000);
    CHECK_EQ(try_bind(cport, 0), 0);
    close(s);
    close(l);
}

/* Which of `n` sockets sharing a port takes each of many flows. */
static void reuseport_tcp(void) {
    enum { N = 2, FLOWS = 64 };
    int ls[N], port = 0;
    for (int i = 0; i < N; i++) {
        ls[i] = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
        setint(ls[i], SOL_SOCKET, SO_REUSEPORT, 1);
        struct sockaddr_in a = loopback(port);
        CHECK_OK(bind(ls[i], (struct sockaddr *)&a, sizeof(a)));
        CHECK_OK(listen(ls[i], FLOWS));
        port = port_of(ls[i]);
    }
    int counts[N] = {0};
    for (int f = 0; f < FLOWS; f++) {
        int c = connect_to(port);
        struct pollfd p[N];
        for (int i = 0; i < N; i++)
            p[i] = (struct pollfd){.fd = ls[i], .events = POLLIN};
        CHECK_EQ(poll(p, N, 5000), 1);
        int taken = 0;
        for (int i = 0; i < N; i++) {
            int s = accept(ls[i], NULL, NULL);
            if (s >= 0) {
                counts[i]++;
                taken++;
                close(s);
            } else {
                CHECK_EQ(errno, EAGAIN);
            }
        }
        CHECK_EQ(taken, 1);
        close(c);
    }
    for (int i = 0; i < N; i++) {
        CHECK(counts[i] > 0);
        close(ls[i]);
    }
}

static void reuseport_udp(void) {
    enum { N = 2, FLOWS = 64 };
    int us[N], port = 0;
    for (int i = 0; i < N; i++) {
        us[i] = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
        setint(us[i], SOL_SOCKET, SO_REUSEPORT, 1);
        struct sockaddr_in a = loopback(port);
        CHECK_OK(bind(us[i], (struct sockaddr *)&a, sizeof(a)));
        port = port_of(us[i]);
    }
    int counts[N] = {0};
    struct sockaddr_in to = loopback(port);
    for (int f = 0; f < FLOWS; f++) {
        int c = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
        char b = (char)f;
        /* Two datagrams of one flow reach the same socket. */
        for (int k = 0; k < 2; k++)
            CHECK_EQ(sendto(c, &b, 1, 0, (struct sockaddr *)&to, sizeof(to)), 1);
        int taken = 0;
        for (int i = 0; i < N; i++) {
            char got[2];
            while (recv(us[i], got, sizeof(got), MSG_DONTWAIT) == 1) {
                CHECK_EQ(got[0], b);
                taken++;
                if (taken == 1)
                    counts[i]++;
            }
            CHECK_EQ(errno, EAGAIN);
        }
        CHECK_EQ(taken, 2);
        close(c);
    }
    for (int i = 0; i < N; i++) {
        CHECK(counts[i] > 0);
        close(us[i]);
    }
}

int main(void) {
    time_wait();
    fin_wait2();
    reuseport_tcp();
    reuseport_udp();
    return 0;
}
