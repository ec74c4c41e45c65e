/* tcp_lifecycle.c — a TCP connection's start and end on loopback: the
 * listen backlog (a connect past a full accept queue waits in SYN_SENT
 * and completes once accept makes room), a listener closed or shut with
 * connections queued (reset) and connecting (refused), shutdown of a
 * connecting socket, a refused non-blocking connect's error then EOF,
 * a connection reset before accept, TCP_DEFER_ACCEPT, the options an
 * accepted socket takes from its listener, and a socket connected to
 * its own address. Ports are picked by the kernel. */
#include "check.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

static struct sockaddr_in lo4(unsigned short port) {
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int listener(struct sockaddr_in *a, int backlog) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    *a = lo4(0);
    CHECK_OK(bind(l, (struct sockaddr *)a, sizeof *a));
    socklen_t len = sizeof *a;
    CHECK_OK(getsockname(l, (struct sockaddr *)a, &len));
    CHECK_OK(listen(l, backlog));
    return l;
}

static int nb_connect(const struct sockaddr_in *a) {
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    CHECK_ERR(connect(c, (const struct sockaddr *)a, sizeof *a), EINPROGRESS);
    return c;
}

static int revents(int fd, short events, int timeout) {
    struct pollfd p = {fd, events, 0};
    int n = CHECK_OK(poll(&p, 1, timeout));
    return n == 0 ? 0 : p.revents;
}

static int so_error(int s) {
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_ERROR, &v, &len));
    return v;
}

static int int_opt(int s, int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_OK(getsockopt(s, level, name, &v, &len));
    return v;
}

/* listen(0) queues one connection; the next connect waits (SYN_SENT: no
 * POLLOUT, EALREADY) until accept makes room; SO_SNDTIMEO ends a blocking
 * connect's wait with EINPROGRESS. */
static void backlog(void) {
    struct sockaddr_in a;
    int l = listener(&a, 0);
    int c1 = nb_connect(&a);
    CHECK_EQ(revents(c1, POLLOUT, 5000), POLLOUT);
    CHECK_EQ(revents(l, POLLIN, 5000), POLLIN);
    int c2 = nb_connect(&a);
    CHECK_EQ(revents(c2, POLLIN | POLLOUT, 100), 0);
    CHECK_ERR(connect(c2, (const struct sockaddr *)&a, sizeof a), EALREADY);
    CHECK_ERR(send(c2, "x", 1, 0), EAGAIN);
    char b;
    CHECK_ERR(recv(c2, &b, 1, 0), EAGAIN);
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    CHECK_OK(getsockopt(c2, IPPROTO_TCP, TCP_INFO, &ti, &tl));
    CHECK_EQ(ti.tcpi_state, TCP_SYN_SENT);

    int c3 = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct timeval tv = {0, 200000};
    CHECK_OK(setsockopt(c3, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    CHECK_ERR(connect(c3, (const struct sockaddr *)&a, sizeof a), EINPROGRESS);
    close(c3);

    int s1 = CHECK_OK(accept(l, NULL, NULL));
    /* The waiting SYN is taken now (Linux: at its retransmission). */
    CHECK_EQ(revents(c2, POLLOUT, 5000), POLLOUT);
    CHECK_OK(connect(c2, (const struct sockaddr *)&a, sizeof a));
    CHECK_ERR(connect(c2, (const struct sockaddr *)&a, sizeof a), EISCONN);
    CHECK_EQ(revents(l, POLLIN, 5000), POLLIN);
    int s2 = CHECK_OK(accept(l, NULL, NULL));
    CHECK_EQ(send(c2, "hi", 2, 0), 2);
    char buf[4];
    CHECK_EQ(recv(s2, buf, sizeof buf, 0), 2);
    close(s1);
    close(s2);
    close(c1);
    close(c2);
    close(l);
}

/* A listener closed (or shut for reading) with one connection queued and
 * one connector waiting: the queued one is reset, the waiting one refused;
 * each reports its error once, then EOF. */
static void listener_gone(int by_shutdown) {
    struct sockaddr_in a;
    int l = listener(&a, 0);
    int queued = nb_connect(&a);
    CHECK_EQ(revents(queued, POLLOUT, 5000), POLLOUT);
    CHECK_EQ(revents(l, POLLIN, 5000), POLLIN);
    int waiting = nb_connect(&a);
    if (by_shutdown)
        CHECK_OK(shutdown(l, SHUT_RD));
    else
        CHECK_OK(close(l));
    CHECK_EQ(revents(queued, 0, 5000), POLLHUP | POLLERR);
    CHECK_EQ(revents(queued, POLLIN | POLLOUT | POLLRDHUP, 0),
             POLLIN | POLLOUT | POLLRDHUP | POLLHUP | POLLERR);
    char c;
    CHECK_ERR(read(queued, &c, 1), ECONNRESET);
    CHECK_EQ(read(queued, &c, 1), 0);
    CHECK_EQ(revents(queued, POLLIN | POLLOUT | POLLRDHUP, 0), POLLIN | POLLOUT | POLLRDHUP | POLLHUP);
    CHECK_ERR(getpeername(queued, (struct sockaddr *)&a, &(socklen_t){sizeof a}), ENOTCONN);

    CHECK_EQ(revents(waiting, 0, 5000), POLLHUP | POLLERR);
    CHECK_EQ(so_error(waiting), ECONNREFUSED);
    CHECK_EQ(so_error(waiting), 0);
    CHECK_EQ(read(waiting, &c, 1), 0);
    CHECK_ERR(connect(waiting, (const struct sockaddr *)&a, sizeof a), ECONNABORTED);
    close(queued);
    close(waiting);
    if (by_shutdown)
        close(l);
}

/* shutdown of a connecting socket aborts the connect: closed, ECONNRESET
 * pending, POLLHUP and POLLERR. */
static void shutdown_connecting(int how) {
    struct sockaddr_in a;
    int l = listener(&a, 0);
    int c1 = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c1, (const struct sockaddr *)&a, sizeof a));
    int c2 = nb_connect(&a);
    CHECK_OK(shutdown(c2, how));
    CHECK_EQ(revents(c2, 0, 0), POLLHUP | POLLERR);
    CHECK_EQ(revents(c2, POLLIN | POLLOUT, 0), POLLOUT | POLLHUP | POLLERR);
    CHECK_EQ(so_error(c2), ECONNRESET);
    CHECK_EQ(revents(c2, POLLIN | POLLOUT, 0), POLLOUT | POLLHUP);
    close(c1);
    close(c2);
    close(l);
}

/* A blocking connect refused gives back a port bind chose (not one bound
 * by number): another socket may bind it; the next connect is refused
 * again from a new port. */
static void refused_port(void) {
    struct sockaddr_in a = lo4(0);
    int b = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(bind(b, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(b, (struct sockaddr *)&a, &(socklen_t){sizeof a}));
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in mine = lo4(0);
    CHECK_OK(bind(c, (struct sockaddr *)&mine, sizeof mine));
    CHECK_OK(getsockname(c, (struct sockaddr *)&mine, &(socklen_t){sizeof mine}));
    CHECK_ERR(connect(c, (const struct sockaddr *)&a, sizeof a), ECONNREFUSED);
    CHECK_EQ(so_error(c), 0);
    struct sockaddr_in now;
    CHECK_OK(getsockname(c, (struct sockaddr *)&now, &(socklen_t){sizeof now}));
    CHECK_EQ(now.sin_port, mine.sin_port);
    CHECK_EQ(now.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    int d = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(bind(d, (struct sockaddr *)&mine, sizeof mine));
    CHECK_ERR(connect(c, (const struct sockaddr *)&a, sizeof a), ECONNREFUSED);
    /* A port bound by number stays. */
    int e = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(d, (const struct sockaddr *)&a, sizeof a) == -1 ? 0 : -1);
    CHECK_ERR(bind(e, (struct sockaddr *)&mine, sizeof mine), EADDRINUSE);
    close(b);
    close(c);
    close(d);
    close(e);
}

/* A non-blocking connect to a port nobody listens on: ECONNREFUSED to
 * the first read (or peek, or SO_ERROR), EOF after; the next connect says
 * ECONNABORTED once the error was taken. */
static void refused(int how) {
    struct sockaddr_in a;
    int b = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    a = lo4(0);
    CHECK_OK(bind(b, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(b, (struct sockaddr *)&a, &(socklen_t){sizeof a}));
    int c = nb_connect(&a);
    CHECK_EQ(revents(c, POLLERR, 5000), POLLERR | POLLHUP);
    char ch;
    switch (how) {
    case 0:
        CHECK_EQ(so_error(c), ECONNREFUSED);
        CHECK_EQ(read(c, &ch, 1), 0);
        break;
    case 1:
        CHECK_ERR(read(c, &ch, 1), ECONNREFUSED);
        CHECK_EQ(read(c, &ch, 1), 0);
        break;
    default:
        CHECK_ERR(recv(c, &ch, 1, MSG_PEEK), ECONNREFUSED);
        CHECK_EQ(recv(c, &ch, 1, MSG_PEEK), 0);
        break;
    }
    CHECK_EQ(so_error(c), 0);
    CHECK_ERR(connect(c, (const struct sockaddr *)&a, sizeof a), ECONNABORTED);
    /* Then a fresh attempt, refused again. */
    CHECK_ERR(connect(c, (const struct sockaddr *)&a, sizeof a), EINPROGRESS);
    CHECK_ERR(connect(c, (const struct sockaddr *)&a, sizeof a), ECONNREFUSED);
    close(c);
    close(b);
}

/* A connection reset (SO_LINGER 0) before accept is still accepted, with
 * its peer's address; the accepted socket reports the reset. */
static void accept_after_reset(void) {
    struct sockaddr_in a;
    int l = listener(&a, 16);
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (const struct sockaddr *)&a, sizeof a));
    struct sockaddr_in mine;
    CHECK_OK(getsockname(c, (struct sockaddr *)&mine, &(socklen_t){sizeof mine}));
    struct linger lg = {1, 0};
    CHECK_OK(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
    CHECK_OK(close(c));
    struct sockaddr_in peer;
    socklen_t plen = sizeof peer;
    int s = CHECK_OK(accept(l, (struct sockaddr *)&peer, &plen));
    CHECK_EQ(plen, sizeof peer);
    CHECK_EQ(peer.sin_port, mine.sin_port);
    CHECK_EQ(revents(s, POLLIN, 5000), POLLIN | POLLHUP | POLLERR);
    CHECK_EQ(so_error(s), ECONNRESET);
    CHECK_EQ(so_error(s), 0);
    CHECK_ERR(getpeername(s, (struct sockaddr *)&peer, &plen), ENOTCONN);
    char ch;
    CHECK_EQ(read(s, &ch, 1), 0);
    close(s);
    close(l);
}

/* accept(2) on listener l made non-blocking for the call. */
static int accept_nb(int l) {
    int fl = CHECK_OK(fcntl(l, F_GETFL));
    CHECK_OK(fcntl(l, F_SETFL, fl | O_NONBLOCK));
    int r = accept(l, NULL, NULL);
    int e = errno;
    CHECK_OK(fcntl(l, F_SETFL, fl));
    errno = e;
    return r;
}

static long ms_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* TCP_DEFER_ACCEPT: a connection is accepted once data comes, or (with
 * no data) about the time set later. */
static void defer_accept(void) {
    struct sockaddr_in a;
    int l = listener(&a, 16);
    int secs = 1;
    CHECK_OK(setsockopt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs));
    CHECK_EQ(int_opt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT), 1);
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (const struct sockaddr *)&a, sizeof a));
    CHECK_ERR(accept_nb(l), EAGAIN);
    CHECK_EQ(revents(l, POLLIN, 0), 0);
    CHECK_EQ(write(c, "data", 4), 4);
    CHECK_EQ(revents(l, POLLIN, 5000), POLLIN);
    int s = CHECK_OK(accept(l, NULL, NULL));
    char buf[8];
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 4);
    close(s);
    close(c);

    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (const struct sockaddr *)&a, sizeof a));
    CHECK_ERR(accept_nb(l), EAGAIN);
    /* A blocking accept (and poll) returns once the time is up. */
    s = CHECK_OK(accept(l, NULL, NULL));
    long waited = ms_since(&t0);
    CHECK(waited >= 500 && waited < 10000);
    close(s);
    close(c);

    c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (const struct sockaddr *)&a, sizeof a));
    CHECK_EQ(revents(l, POLLIN, 10000), POLLIN);
    s = CHECK_OK(accept(l, NULL, NULL));
    close(s);
    close(c);
    close(l);
}

/* An accepted socket is a clone of its listener: it keeps the options set
 * on the listener (SO_PRIORITY aside). */
static void inherited_options(void) {
    struct sockaddr_in a;
    int l = listener(&a, 16);
    struct {
        int level, name, value;
    } opts[] = {
        {SOL_SOCKET, SO_KEEPALIVE, 1},       {SOL_SOCKET, SO_RCVLOWAT, 5},
        {SOL_SOCKET, SO_OOBINLINE, 1},       {IPPROTO_TCP, TCP_NODELAY, 1},
        {IPPROTO_TCP, TCP_USER_TIMEOUT, 120001}, {IPPROTO_TCP, TCP_KEEPIDLE, 100},
        {IPPROTO_TCP, TCP_KEEPINTVL, 10},    {IPPROTO_TCP, TCP_KEEPCNT, 3},
        {IPPROTO_TCP, TCP_LINGER2, 30},      {IPPROTO_TCP, TCP_NOTSENT_LOWAT, 1000},
        {IPPROTO_TCP, TCP_SYNCNT, 3},        {IPPROTO_IP, IP_TOS, 0x10},
        {IPPROTO_IP, IP_TTL, 33},
    };
    int n = sizeof opts / sizeof opts[0];
    for (int k = 0; k < n; k++)
        CHECK_OK(setsockopt(l, opts[k].level, opts[k].name, &opts[k].value, sizeof(int)));
    int prio = 3;
    CHECK_OK(setsockopt(l, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio));
    struct linger lg = {1, 7};
    CHECK_OK(setsockopt(l, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
    struct timeval tv = {3, 0};
    CHECK_OK(setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (const struct sockaddr *)&a, sizeof a));
    int s = CHECK_OK(accept(l, NULL, NULL));
    for (int k = 0; k < n; k++)
        if (int_opt(s, opts[k].level, opts[k].name) != opts[k].value)
            FAILF("option %d/%d: got %d, want %d", opts[k].level, opts[k].name,
                  int_opt(s, opts[k].level, opts[k].name), opts[k].value);
    CHECK_EQ(int_opt(s, SOL_SOCKET, SO_PRIORITY), 0);
    memset(&lg, 0, sizeof lg);
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_LINGER, &lg, &(socklen_t){sizeof lg}));
    CHECK_EQ(lg.l_onoff, 1);
    CHECK_EQ(lg.l_linger, 7);
    memset(&tv, 0, sizeof tv);
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, &(socklen_t){sizeof tv}));
    CHECK_EQ(tv.tv_sec, 3);
    /* The client's options are its own. */
    CHECK_EQ(int_opt(c, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
    close(s);
    close(c);
    close(l);
}

/* A socket connected to its own address (simultaneous open) is its own
 * peer: what it sends it reads back, then its own FIN. */
static void self_connect(void) {
    int s = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = lo4(0);
    CHECK_OK(bind(s, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(s, (struct sockaddr *)&a, &(socklen_t){sizeof a}));
    CHECK_OK(connect(s, (const struct sockaddr *)&a, sizeof a));
    struct sockaddr_in peer;
    CHECK_OK(getpeername(s, (struct sockaddr *)&peer, &(socklen_t){sizeof peer}));
    CHECK_EQ(peer.sin_port, a.sin_port);
    CHECK_EQ(peer.sin_addr.s_addr, a.sin_addr.s_addr);
    CHECK_EQ(send(s, "self", 4, 0), 4);
    CHECK_EQ(revents(s, POLLIN, 5000), POLLIN);
    char buf[8];
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 4);
    CHECK(memcmp(buf, "self", 4) == 0);
    CHECK_OK(shutdown(s, SHUT_WR));
    CHECK_EQ(recv(s, buf, sizeof buf, 0), 0);
    CHECK_ERR(send(s, "x", 1, MSG_NOSIGNAL), EPIPE);
    close(s);
}

int main(void) {
    backlog();
    listener_gone(0);
    listener_gone(1);
    shutdown_connecting(SHUT_RD);
    shutdown_connecting(SHUT_WR);
    shutdown_connecting(SHUT_RDWR);
    refused_port();
    refused(0);
    refused(1);
    refused(2);
    accept_after_reset();
    inherited_options();
    self_connect();
    defer_accept();
    return 0;
}
