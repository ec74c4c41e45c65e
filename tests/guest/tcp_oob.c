/* tcp_oob.c — TCP urgent data (MSG_OOB) over loopback as Linux: the last
 * byte of a send(MSG_OOB) is the urgent byte; recv(MSG_OOB) takes it
 * (EINVAL when there is none, it was taken, or SO_OOBINLINE keeps it in
 * the stream); normal reads stop at the mark and skip the urgent byte;
 * SIOCATMARK; FIONREAD counts only the bytes before a mark not read
 * past (none at the mark, even once the byte is taken), all of them with
 * SO_OOBINLINE; POLLPRI, select's exceptfds and EPOLLPRI while it waits;
 * SIGURG to the F_SETOWN owner; a later urgent byte replaces the mark. */
#include "check.h"
#include "tcp_loopback.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>

static volatile sig_atomic_t sigurgs;

static void on_sigurg(int sig) {
    (void)sig;
    sigurgs++;
}

/* A connected pair: the client (the sender, TCP_NODELAY) in c, the
 * server's end in s. */
static void connected(int *c, int *s) {
    int port;
    int l = tcp_listener(&port);
    *c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    int one = 1;
    CHECK_OK(setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
    struct sockaddr_in a = loopback(port);
    CHECK_OK(connect(*c, (struct sockaddr *)&a, sizeof(a)));
    *s = CHECK_OK(accept(l, NULL, NULL));
    close(l);
}

static int at_mark(int fd) {
    int v = -1;
    CHECK_OK(ioctl(fd, SIOCATMARK, &v));
    return v;
}

static int inq(int fd) {
    int v = -1;
    CHECK_OK(ioctl(fd, FIONREAD, &v));
    return v;
}

static short revents(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLPRI};
    CHECK_OK(poll(&p, 1, 0));
    return p.revents;
}

/* Waits (up to 2 s) for the urgent byte to arrive. */
static void wait_pri(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLPRI};
    CHECK_EQ(poll(&p, 1, 2000), 1);
    CHECK(p.revents & POLLPRI);
}

static void settle(void) {
    usleep(20000);
}

static void basics(void) {
    int c, s;
    char buf[16];
    connected(&c, &s);
    CHECK_ERR(recv(s, buf, 1, MSG_OOB), EINVAL);
    CHECK_ERR(recv(s, buf, 1, MSG_OOB | MSG_DONTWAIT), EINVAL);
    CHECK_EQ(at_mark(s), 0);
    CHECK_EQ(revents(s) & POLLPRI, 0);
    CHECK_EQ(send(c, "ab", 2, 0), 2);
    CHECK_EQ(send(c, "cX", 2, MSG_OOB), 2);
    CHECK_EQ(send(c, "de", 2, 0), 2);
    wait_pri(s);
    settle();
    CHECK_EQ(revents(s), POLLIN | POLLPRI);

    /* select: the urgent byte is an exceptional condition. */
    fd_set rd, ex;
    FD_ZERO(&rd);
    FD_ZERO(&ex);
    FD_SET(s, &rd);
    FD_SET(s, &ex);
    struct timeval tv = {0, 0};
    CHECK_EQ(select(s + 1, &rd, NULL, &ex, &tv), 2);
    CHECK(FD_ISSET(s, &rd) && FD_ISSET(s, &ex));

    /* epoll reports EPOLLPRI. */
    int ep = CHECK_OK(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLIN | EPOLLPRI, .data.fd = s};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
    struct epoll_event got;
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 1);
    CHECK_EQ(got.events, EPOLLIN | EPOLLPRI);

    /* A read (even a peek) stops at the mark. */
    CHECK_EQ(at_mark(s), 0);
    CHECK_EQ(inq(s), 3);
    CHECK_EQ(recv(s, buf, sizeof(buf), MSG_PEEK), 3);
    CHECK_EQ(recv(s, buf, 1, 0), 1);
    CHECK_EQ(inq(s), 2);
    CHECK_EQ(recv(s, buf + 1, sizeof(buf) - 1, 0), 2);
    CHECK(memcmp(buf, "abc", 3) == 0);
    CHECK_EQ(at_mark(s), 1);
    CHECK_EQ(inq(s), 0);

    /* recv(MSG_OOB): peeked, then taken, then gone; recvmsg says MSG_OOB. */
    buf[0] = 0;
    CHECK_EQ(recv(s, buf, 1, MSG_OOB | MSG_PEEK), 1);
    CHECK_EQ(buf[0], 'X');
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    buf[0] = 0;
    CHECK_EQ(recvmsg(s, &m, MSG_OOB), 1);
    CHECK_EQ(buf[0], 'X');
    CHECK_EQ(m.msg_flags, MSG_OOB);
    CHECK_ERR(recv(s, buf, 1, MSG_OOB), EINVAL);
    CHECK_EQ(revents(s), POLLIN);
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 1);
    CHECK_EQ(got.events, EPOLLIN);
    FD_ZERO(&ex);
    FD_SET(s, &ex);
    CHECK_EQ(select(s + 1, NULL, NULL, &ex, &tv), 0);

    /* Still at the mark until the next read passes it. */
    CHECK_EQ(at_mark(s), 1);
    CHECK_EQ(inq(s), 0);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 2);
    CHECK(memcmp(buf, "de", 2) == 0);
    CHECK_EQ(at_mark(s), 0);
    CHECK_EQ(send(c, "fg", 2, 0), 2);
    settle();
    CHECK_EQ(inq(s), 2);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 2);
    CHECK_ERR(recv(s, buf, 1, MSG_DONTWAIT), EAGAIN);
    close(ep);

    /* Urgent data goes both ways; a zero-length OOB receive takes the
     * byte and reports MSG_TRUNC. */
    CHECK_EQ(send(s, "Q", 1, MSG_OOB), 1);
    wait_pri(c);
    iov.iov_len = 0;
    m.msg_flags = 0;
    CHECK_EQ(recvmsg(c, &m, MSG_OOB), 0);
    CHECK_EQ(m.msg_flags, MSG_OOB | MSG_TRUNC);
    CHECK_ERR(recv(c, buf, 1, MSG_OOB), EINVAL);
    close(c);
    close(s);
}

/* Reading past an urgent byte nobody took loses it: the stream skips it. */
static void skipped(void) {
    int c, s;
    char buf[16];
    connected(&c, &s);
    CHECK_EQ(send(c, "abc", 3, MSG_OOB), 3);
    wait_pri(s);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 2);
    CHECK(memcmp(buf, "ab", 2) == 0);
    /* Only the urgent byte is left: not readable. */
    CHECK_EQ(revents(s), POLLPRI);
    CHECK_ERR(recv(s, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
    CHECK_EQ(revents(s), 0);
    CHECK_ERR(recv(s, buf, 1, MSG_OOB), EINVAL);
    CHECK_EQ(at_mark(s), 0);
    CHECK_EQ(send(c, "z", 1, 0), 1);
    settle();
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 1);
    CHECK_EQ(buf[0], 'z');
    close(c);
    close(s);
}

/* A later urgent byte replaces the mark: the old one is plain data, or
 * dropped when the reader stands at it. */
static void replaced(void) {
    int c, s;
    char buf[16];
    connected(&c, &s);
    CHECK_EQ(send(c, "A", 1, MSG_OOB), 1);
    wait_pri(s);
    CHECK_EQ(send(c, "B", 1, MSG_OOB), 1);
    settle();
    CHECK_EQ(recv(s, buf, 1, MSG_OOB), 1);
    CHECK_EQ(buf[0], 'B');
    CHECK_ERR(recv(s, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);

    CHECK_EQ(send(c, "x", 1, 0), 1);
    CHECK_EQ(send(c, "C", 1, MSG_OOB), 1);
    wait_pri(s);
    CHECK_EQ(send(c, "D", 1, MSG_OOB), 1);
    settle();
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 2);
    CHECK(memcmp(buf, "xC", 2) == 0);
    CHECK_EQ(at_mark(s), 1);
    CHECK_EQ(recv(s, buf, 1, MSG_OOB), 1);
    CHECK_EQ(buf[0], 'D');
    close(c);
    close(s);
}

/* SO_OOBINLINE: the urgent byte stays in the stream; reads still stop at
 * the mark; an accepted socket inherits the listener's setting. */
static void inline_data(void) {
    int port;
    int l = tcp_listener(&port);
    int one = 1;
    CHECK_OK(setsockopt(l, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)));
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = loopback(port);
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
    int s = CHECK_OK(accept(l, NULL, NULL));
    close(l);
    int v = 0;
    socklen_t n = sizeof(v);
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_OOBINLINE, &v, &n));
    CHECK_EQ(v, 1);
    char buf[16];
    CHECK_EQ(send(c, "abc", 3, MSG_OOB), 3);
    wait_pri(s);
    CHECK_ERR(recv(s, buf, 1, MSG_OOB), EINVAL);
    CHECK_EQ(inq(s), 3);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 2);
    CHECK_EQ(at_mark(s), 1);
    CHECK_EQ(inq(s), 1);
    CHECK_EQ(revents(s), POLLIN | POLLPRI);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 1);
    CHECK_EQ(buf[0], 'c');
    CHECK_EQ(at_mark(s), 0);
    CHECK_EQ(revents(s), 0);
    close(c);
    close(s);
}

/* SIGURG goes to the F_SETOWN owner (a process, or a group when
 * negative); without an owner nobody is signalled. */
static void sigurg(void) {
    struct sigaction sa = {.sa_handler = on_sigurg};
    CHECK_OK(sigaction(SIGURG, &sa, NULL));
    int c, s;
    char ch;
    connected(&c, &s);
    CHECK_EQ(fcntl(s, F_GETOWN), 0);
    sigurgs = 0;
    CHECK_EQ(send(c, "a", 1, MSG_OOB), 1);
    wait_pri(s);
    settle();
    CHECK_EQ(sigurgs, 0);
    CHECK_EQ(recv(s, &ch, 1, MSG_OOB), 1);

    CHECK_OK(fcntl(s, F_SETOWN, getpid()));
    CHECK_EQ(fcntl(s, F_GETOWN), getpid());
    CHECK_EQ(send(c, "b", 1, MSG_OOB), 1);
    wait_pri(s);
    settle();
    CHECK_EQ(sigurgs, 1);
    /* Plain data does not signal. */
    CHECK_EQ(send(c, "c", 1, 0), 1);
    settle();
    CHECK_EQ(sigurgs, 1);

    CHECK_OK(fcntl(s, F_SETOWN, -getpgrp()));
    CHECK_EQ(fcntl(s, F_GETOWN), -getpgrp());
    CHECK_EQ(send(c, "d", 1, MSG_OOB), 1);
    settle();
    CHECK_EQ(sigurgs, 2);

    /* F_SETOWN_EX: a thread owner; F_GETOWN_EX reads it back. */
    struct f_owner_ex ex = {.type = F_OWNER_TID, .pid = gettid()};
    CHECK_OK(fcntl(s, F_SETOWN_EX, &ex));
    memset(&ex, 0, sizeof(ex));
    CHECK_OK(fcntl(s, F_GETOWN_EX, &ex));
    CHECK_EQ(ex.type, F_OWNER_TID);
    CHECK_EQ(ex.pid, gettid());
    CHECK_EQ(send(c, "e", 1, MSG_OOB), 1);
    settle();
    CHECK_EQ(sigurgs, 3);
    ex.type = 7;
    CHECK_ERR(fcntl(s, F_SETOWN_EX, &ex), EINVAL);
    CHECK_ERR(fcntl(s, F_SETOWN, 0x3fffffff), ESRCH);
    /* No owner: nobody is told. */
    CHECK_OK(fcntl(s, F_SETOWN, 0));
    CHECK_EQ(fcntl(s, F_GETOWN), 0);
    CHECK_EQ(send(c, "f", 1, MSG_OOB), 1);
    settle();
    CHECK_EQ(sigurgs, 3);
    close(c);
    close(s);
}

static void errors(void) {
    char ch;
    int port;
    int l = tcp_listener(&port);
    CHECK_ERR(recv(l, &ch, 1, MSG_OOB), ENOTCONN);
    CHECK_EQ(at_mark(l), 0);
    close(l);
    int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in a = loopback(9);
    CHECK_ERR(sendto(u, "x", 1, MSG_OOB, (struct sockaddr *)&a, sizeof(a)), EOPNOTSUPP);
    close(u);
}

int main(void) {
    basics();
    skipped();
    replaced();
    inline_data();
    sigurg();
    errors();
    return 0;
}
