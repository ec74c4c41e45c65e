/* inet_sockets.c — IP sockets over loopback: TCP listen/connect/accept and
 * byte streams (blocking and not, EOF, RST, EPIPE, shutdown, poll), UDP
 * datagrams (senders, truncation, peeking, connected sockets and the port
 * nobody holds), IPv6 and dual-stack listeners, port sharing rules, and the
 * socket options programs read back. Every address is on loopback and every
 * port is picked by the kernel, so the program runs the same natively. */
#include "check.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>

static struct sockaddr_in lo4(unsigned short port) {
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* A TCP listener on 127.0.0.1 at a kernel-chosen port; its address in *a. */
static int listener(struct sockaddr_in *a) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    *a = lo4(0);
    CHECK_OK(bind(l, (struct sockaddr *)a, sizeof *a));
    socklen_t len = sizeof *a;
    CHECK_OK(getsockname(l, (struct sockaddr *)a, &len));
    CHECK_EQ(len, sizeof *a);
    CHECK(a->sin_port != 0);
    CHECK_OK(listen(l, 16));
    return l;
}

/* A connected pair (client, server) through listener l at a. */
static void connected(int l, const struct sockaddr_in *a, int *c, int *s) {
    *c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(*c, (const struct sockaddr *)a, sizeof *a));
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    *s = CHECK_OK(accept(l, (struct sockaddr *)&peer, &len));
    struct sockaddr_in mine;
    socklen_t mlen = sizeof mine;
    CHECK_OK(getsockname(*c, (struct sockaddr *)&mine, &mlen));
    CHECK_EQ(peer.sin_port, mine.sin_port);
    CHECK_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
}

static int int_opt(int s, int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_OK(getsockopt(s, level, name, &v, &len));
    CHECK_EQ(len, sizeof v);
    return v;
}

static void tcp_basics(void) {
    struct sockaddr_in a;
    int l = listener(&a);
    CHECK_EQ(int_opt(l, SOL_SOCKET, SO_ACCEPTCONN), 1);
    CHECK_EQ(int_opt(l, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
    CHECK_EQ(int_opt(l, SOL_SOCKET, SO_PROTOCOL), IPPROTO_TCP);
    CHECK_EQ(int_opt(l, SOL_SOCKET, SO_DOMAIN), AF_INET);
    struct pollfd p = {l, POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 0), 0);
    int c, s;
    connected(l, &a, &c, &s);
    CHECK_EQ(int_opt(s, SOL_SOCKET, SO_ACCEPTCONN), 0);

    char buf[16];
    CHECK_EQ(send(c, "ping", 4, 0), 4);
    CHECK_EQ(recv(s, buf, sizeof buf, MSG_PEEK), 4);
    int avail = -1;
    CHECK_OK(ioctl(s, FIONREAD, &avail));
    CHECK_EQ(avail, 4);
    CHECK_EQ(read(s, buf, sizeof buf), 4);
    CHECK_MEM(buf, "ping", 4);
    CHECK_ERR(recv(s, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);

    /* A second listener cannot take the port; another address cannot be
     * bound at all. */
    int other = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERR(bind(other, (struct sockaddr *)&a, sizeof a), EADDRINUSE);
    struct sockaddr_in far = lo4(0);
    far.sin_addr.s_addr = inet_addr("192.0.2.1");
    CHECK_ERR(bind(other, (struct sockaddr *)&far, sizeof far), EADDRNOTAVAIL);
    CHECK_ERR(listen(other, 1) == 0 ? connect(c, (struct sockaddr *)&a, sizeof a) : -1, EISCONN);
    close(other);

    /* shutdown(SHUT_WR) is EOF for the peer, which can still answer. */
    CHECK_OK(shutdown(c, SHUT_WR));
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 0);
    p = (struct pollfd){s, POLLIN | POLLRDHUP, 0};
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLRDHUP);
    CHECK_EQ(send(s, "pong", 4, 0), 4);
    CHECK_EQ(recv(c, buf, sizeof buf, 0), 4);
    CHECK_ERR(send(c, "x", 1, MSG_NOSIGNAL), EPIPE);

    /* Closing one end: EOF, then the first send still goes out (and draws
     * the RST); the next fails with EPIPE. */
    close(c);
    CHECK_EQ(send(s, "x", 1, MSG_NOSIGNAL), 1);
    usleep(20000);
    CHECK_ERR(send(s, "x", 1, MSG_NOSIGNAL), EPIPE);
    close(s);

    /* Closing with unread data resets the connection. */
    connected(l, &a, &c, &s);
    CHECK_EQ(send(c, "unread", 6, 0), 6);
    usleep(20000);
    close(s);
    usleep(20000);
    CHECK_ERR(recv(c, buf, sizeof buf, 0), ECONNRESET);
    close(c);
    close(l);

    /* Nobody listens there any more. */
    c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof a), ECONNREFUSED);
    close(c);
}

static void tcp_nonblocking(void) {
    struct sockaddr_in a;
    int l = listener(&a);
    CHECK_OK(fcntl(l, F_SETFL, O_NONBLOCK));
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    struct pollfd p = {c, POLLOUT, 0};
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK_EQ(p.revents, POLLOUT | POLLHUP);
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof a), EINPROGRESS);
    p = (struct pollfd){c, POLLOUT, 0};
    CHECK_EQ(poll(&p, 1, 1000), 1);
    CHECK_EQ(int_opt(c, SOL_SOCKET, SO_ERROR), 0);
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof a), EISCONN);
    p = (struct pollfd){l, POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 1000), 1);
    int s = CHECK_OK(accept4(l, NULL, NULL, SOCK_NONBLOCK));
    CHECK(fcntl(s, F_GETFL) & O_NONBLOCK);
    CHECK_ERR(accept(l, NULL, NULL), EAGAIN);

    /* Fill the connection without blocking: a short count, then EAGAIN. */
    static char big[1 << 16];
    long total = 0;
    for (;;) {
        ssize_t n = send(c, big, sizeof big, 0);
        if (n < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        total += n;
        CHECK(total < (64L << 20));
    }
    CHECK(total > 0);
    p = (struct pollfd){c, POLLOUT, 0};
    CHECK_EQ(poll(&p, 1, 0), 0);
    long got = 0;
    for (;;) {
        ssize_t n = recv(s, big, sizeof big, 0);
        if (n < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        got += n;
    }
    CHECK_EQ(got, total);
    close(s);
    close(c);

    /* A refused non-blocking connect reports through SO_ERROR. */
    c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    close(l);
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof a), EINPROGRESS);
    p = (struct pollfd){c, POLLOUT, 0};
    CHECK_EQ(poll(&p, 1, 1000), 1);
    CHECK(p.revents & POLLERR);
    CHECK_EQ(int_opt(c, SOL_SOCKET, SO_ERROR), ECONNREFUSED);
    CHECK_EQ(int_opt(c, SOL_SOCKET, SO_ERROR), 0);
    close(c);
    /* Without SO_ERROR, the next connect reports the refusal. */
    c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof a), EINPROGRESS);
    p = (struct pollfd){c, POLLOUT, 0};
    CHECK_EQ(poll(&p, 1, 1000), 1);
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof a), ECONNREFUSED);
    close(c);

    /* Shutting a listener's reading side closes it: accept fails. */
    l = listener(&a);
    CHECK_OK(shutdown(l, SHUT_RDWR));
    CHECK_ERR(accept(l, NULL, NULL), EINVAL);
    c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof a), ECONNREFUSED);
    close(c);
    close(l);
}

/* Many megabytes through a connection between two processes, both
 * directions blocking, checked byte for byte. */
static void tcp_bulk(void) {
    struct sockaddr_in a;
    int l = listener(&a);
    enum { TOTAL = 8 << 20 };
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        int s = accept(l, NULL, NULL);
        if (s < 0)
            _exit(2);
        static char buf[100000];
        ssize_t n;
        while ((n = recv(s, buf, sizeof buf, 0)) > 0)
            if (send(s, buf, (size_t)n, 0) != n)
                _exit(3);
        _exit(n == 0 ? 0 : 4);
    }
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
    static unsigned char out[TOTAL], in[TOTAL];
    for (long i = 0; i < TOTAL; i++)
        out[i] = (unsigned char)(i * 7 + i / 251);
    /* Send in pieces small enough that the echo never fills both ways. */
    long sent = 0, got = 0;
    while (got < TOTAL) {
        if (sent < TOTAL) {
            long n = TOTAL - sent < 65536 ? TOTAL - sent : 65536;
            CHECK_EQ(send(c, out + sent, (size_t)n, 0), n);
            sent += n;
        }
        while (got < sent) {
            ssize_t n = recv(c, in + got, (size_t)(sent - got), 0);
            CHECK(n > 0);
            got += n;
        }
    }
    CHECK_MEM(in, out, TOTAL);
    /* A blocking write(2) of more than the connection holds waits until
     * the echo has taken it all. */
    pid_t drain = CHECK_OK(fork());
    if (drain == 0) {
        long left = TOTAL;
        while (left > 0) {
            ssize_t n = recv(c, in, (size_t)left, 0);
            if (n <= 0)
                _exit(1);
            left -= n;
        }
        _exit(0);
    }
    CHECK_EQ(write(c, out, TOTAL), TOTAL);
    int dst;
    CHECK_EQ(waitpid(drain, &dst, 0), drain);
    CHECK(WIFEXITED(dst) && WEXITSTATUS(dst) == 0);
    CHECK_OK(shutdown(c, SHUT_WR));
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char b;
    CHECK_EQ(recv(c, &b, 1, MSG_WAITALL), 0);
    close(c);
    close(l);
}

static void udp(void) {
    int r = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in a = lo4(0);
    CHECK_OK(bind(r, (struct sockaddr *)&a, sizeof a));
    socklen_t len = sizeof a;
    CHECK_OK(getsockname(r, (struct sockaddr *)&a, &len));
    CHECK_EQ(int_opt(r, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
    CHECK_ERR(listen(r, 1), EOPNOTSUPP);

    int w = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_EQ(sendto(w, "one", 3, 0, (struct sockaddr *)&a, sizeof a), 3);
    CHECK_EQ(sendto(w, "three", 5, 0, (struct sockaddr *)&a, sizeof a), 5);
    CHECK_EQ(sendto(w, "", 0, 0, (struct sockaddr *)&a, sizeof a), 0);
    struct sockaddr_in wa;
    len = sizeof wa;
    CHECK_OK(getsockname(w, (struct sockaddr *)&wa, &len));
    CHECK(wa.sin_port != 0);
    CHECK_EQ(wa.sin_addr.s_addr, htonl(INADDR_ANY));

    char buf[16];
    struct sockaddr_in from;
    len = sizeof from;
    usleep(10000);
    int avail = -1;
    CHECK_OK(ioctl(r, FIONREAD, &avail));
    CHECK_EQ(avail, 3);
    CHECK_EQ(recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &len), 3);
    CHECK_EQ(from.sin_port, wa.sin_port);
    CHECK_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    CHECK_EQ(recv(r, buf, 2, MSG_PEEK | MSG_TRUNC), 5);
    struct iovec iov = {buf, 2};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    CHECK_EQ(recvmsg(r, &m, 0), 2);
    CHECK(m.msg_flags & MSG_TRUNC);
    CHECK_MEM(buf, "th", 2);
    CHECK_EQ(recv(r, buf, sizeof buf, 0), 0);
    CHECK_ERR(recv(r, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);

    /* writev sends one datagram; readv spreads one over its buffers. */
    int wv = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(connect(wv, (struct sockaddr *)&a, sizeof a));
    struct iovec parts[2] = {{"ab", 2}, {"cde", 3}};
    CHECK_EQ(writev(wv, parts, 2), 5);
    char x[2], y[8];
    struct iovec into[2] = {{x, 2}, {y, sizeof y}};
    CHECK_EQ(readv(r, into, 2), 5);
    CHECK_MEM(x, "ab", 2);
    CHECK_MEM(y, "cde", 3);
    CHECK_ERR(recv(r, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    close(wv);

    /* SO_RCVTIMEO bounds a blocking receive. */
    struct timeval tv = {0, 50000};
    CHECK_OK(setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    CHECK_ERR(recv(r, buf, sizeof buf, 0), EAGAIN);

    /* A connected socket takes only its peer's datagrams. */
    CHECK_OK(connect(r, (struct sockaddr *)&wa, sizeof wa));
    int stranger = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_EQ(sendto(stranger, "no", 2, 0, (struct sockaddr *)&a, sizeof a), 2);
    CHECK_EQ(sendto(w, "yes", 3, 0, (struct sockaddr *)&a, sizeof a), 3);
    CHECK_EQ(recv(r, buf, sizeof buf, 0), 3);
    CHECK_MEM(buf, "yes", 3);

    /* A connected socket hears that nobody holds its peer's port. */
    close(w);
    CHECK_EQ(send(r, "x", 1, 0), 1);
    usleep(10000);
    CHECK_ERR(recv(r, buf, sizeof buf, MSG_DONTWAIT), ECONNREFUSED);
    CHECK_ERR(recv(r, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    /* AF_UNSPEC dissolves the association. */
    struct sockaddr unspec = {0};
    unspec.sa_family = AF_UNSPEC;
    CHECK_OK(connect(r, &unspec, sizeof unspec));
    CHECK_ERR(send(r, "x", 1, 0), EDESTADDRREQ);
    close(stranger);
    close(r);
}

static void ipv6(void) {
    /* A dual-stack listener on :: takes IPv4 connections, shown v4-mapped. */
    int l = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
    CHECK_EQ(int_opt(l, IPPROTO_IPV6, IPV6_V6ONLY), 0);
    struct sockaddr_in6 a = {0};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
    int on = 1;
    CHECK_ERR(setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on), EINVAL);
    socklen_t len = sizeof a;
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
    CHECK_EQ(len, sizeof a);
    CHECK_OK(listen(l, 4));

    struct sockaddr_in a4 = lo4(ntohs(a.sin6_port));
    int c4 = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c4, (struct sockaddr *)&a4, sizeof a4));
    struct sockaddr_in6 peer;
    len = sizeof peer;
    int s4 = CHECK_OK(accept(l, (struct sockaddr *)&peer, &len));
    CHECK(IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr));
    CHECK_EQ(peer.sin6_family, AF_INET6);

    struct sockaddr_in6 l6 = {0};
    l6.sin6_family = AF_INET6;
    l6.sin6_addr = in6addr_loopback;
    l6.sin6_port = a.sin6_port;
    int c6 = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
    CHECK_OK(connect(c6, (struct sockaddr *)&l6, sizeof l6));
    len = sizeof peer;
    int s6 = CHECK_OK(accept(l, (struct sockaddr *)&peer, &len));
    CHECK(IN6_IS_ADDR_LOOPBACK(&peer.sin6_addr));
    CHECK_EQ(send(c6, "six", 3, 0), 3);
    char buf[4];
    CHECK_EQ(recv(s6, buf, sizeof buf, 0), 3);

    /* A v6-only socket cannot bind IPv4; an IPv4 address is refused on an
     * IPv6 socket's bind as the wrong family. */
    int v6only = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(v6only, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
    CHECK_EQ(int_opt(v6only, IPPROTO_IPV6, IPV6_V6ONLY), 1);
    CHECK_ERR(bind(v6only, (struct sockaddr *)&a4, sizeof a4), EINVAL);
    close(v6only);
    close(s4), close(c4), close(s6), close(c6), close(l);
}

static void sharing_and_options(void) {
    /* SO_REUSEADDR on both lets two unconnected sockets share a port;
     * SO_REUSEPORT lets two listeners share one. */
    int on = 1;
    int a = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on));
    CHECK_EQ(int_opt(a, SOL_SOCKET, SO_REUSEADDR), 1);
    struct sockaddr_in at = lo4(0);
    CHECK_OK(bind(a, (struct sockaddr *)&at, sizeof at));
    socklen_t len = sizeof at;
    CHECK_OK(getsockname(a, (struct sockaddr *)&at, &len));
    int b = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_ERR(bind(b, (struct sockaddr *)&at, sizeof at), EADDRINUSE);
    CHECK_OK(setsockopt(b, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on));
    CHECK_OK(bind(b, (struct sockaddr *)&at, sizeof at));
    close(a), close(b);

    int l1 = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    int l2 = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(setsockopt(l1, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on));
    CHECK_OK(setsockopt(l2, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on));
    struct sockaddr_in lt = lo4(0);
    CHECK_OK(bind(l1, (struct sockaddr *)&lt, sizeof lt));
    len = sizeof lt;
    CHECK_OK(getsockname(l1, (struct sockaddr *)&lt, &len));
    CHECK_OK(bind(l2, (struct sockaddr *)&lt, sizeof lt));
    CHECK_OK(listen(l1, 1));
    CHECK_OK(listen(l2, 1));
    close(l1), close(l2);

    /* Options programs set are read back as set. */
    int t = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_EQ(int_opt(t, IPPROTO_TCP, TCP_NODELAY), 0);
    CHECK_OK(setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on));
    CHECK_EQ(int_opt(t, IPPROTO_TCP, TCP_NODELAY), 1);
    CHECK_OK(setsockopt(t, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on));
    CHECK_EQ(int_opt(t, SOL_SOCKET, SO_KEEPALIVE), 1);
    CHECK_EQ(int_opt(t, SOL_SOCKET, SO_ERROR), 0);
    struct timeval tv = {2, 500000}, back;
    len = sizeof back;
    CHECK_OK(setsockopt(t, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    CHECK_OK(getsockopt(t, SOL_SOCKET, SO_SNDTIMEO, &back, &len));
    CHECK_EQ(back.tv_sec, 2);
    CHECK_EQ(back.tv_usec, 500000);
    char buf[1];
    CHECK_ERR(recv(t, buf, 1, 0), ENOTCONN);
    CHECK_ERR(send(t, buf, 1, MSG_NOSIGNAL), EPIPE);
    CHECK_ERR(getpeername(t, (struct sockaddr *)&lt, &len), ENOTCONN);
    close(t);

    /* Short and unreadable addresses and buffers. */
    int g = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in tiny = lo4(0);
    CHECK_ERR(bind(g, (struct sockaddr *)&tiny, 2), EINVAL);
    int gt = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERR(connect(gt, (struct sockaddr *)&tiny, 8), EINVAL);
    close(gt);
    CHECK_ERR(bind(g, (struct sockaddr *)8, sizeof tiny), EFAULT);
    CHECK_OK(bind(g, (struct sockaddr *)&tiny, sizeof tiny));
    len = sizeof tiny;
    CHECK_OK(getsockname(g, (struct sockaddr *)&tiny, &len));
    CHECK_ERR(sendto(g, (void *)8, 4, 0, (struct sockaddr *)&tiny, sizeof tiny), EFAULT);
    CHECK_ERR(getsockname(g, (struct sockaddr *)8, &len), EFAULT);
    close(g);

    int sv[2];
    CHECK_ERR(socketpair(AF_INET, SOCK_STREAM, 0, sv), EOPNOTSUPP);
    CHECK_ERR(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
}

int main(void) {
    tcp_basics();
    tcp_nonblocking();
    tcp_bulk();
    udp();
    ipv6();
    sharing_and_options();
    puts("inet_sockets: ok");
    return 0;
}
