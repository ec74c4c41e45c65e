/* unix_oob.c — MSG_OOB on AF_UNIX stream sockets as Linux 5.15+ has it
 * (CONFIG_AF_UNIX_OOB): the last byte of a send(MSG_OOB) is the one
 * urgent byte; recv(MSG_OOB) takes it without waiting (EINVAL when there
 * is none or SO_OOBINLINE keeps it in the stream); a normal read stops at
 * the mark, even once the byte was taken, and drops an urgent byte it
 * meets first; a later urgent byte makes the earlier one ordinary data;
 * SIOCATMARK, FIONREAD, POLLPRI/EPOLLPRI while it waits; SIGURG to the
 * receiver's F_SETOWN owner; datagram and seqpacket sockets refuse it
 * (SIOCATMARK too). */
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>

static volatile sig_atomic_t sigurgs;

static void on_sigurg(int sig) {
    (void)sig;
    sigurgs++;
}

/* A non-blocking stream pair: fd[0] sends, fd[1] receives. */
static void pair(int fd[2]) {
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd));
}

static void unpair(int fd[2]) {
    close(fd[0]);
    close(fd[1]);
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

static void sends(int fd, const char *s, int flags) {
    CHECK_EQ(send(fd, s, strlen(s), flags), (long)strlen(s));
}

/* recv of at most `len` bytes with `flags` gives `want` (a string), or
 * fails with -`want_len` when that is negative. A peek first sees the
 * same, as the kernel's selftest checks both. */
static void recv_is(int fd, int len, int flags, const char *want, int want_len) {
    for (int peek = 1; peek >= 0; peek--) {
        char buf[32] = {0};
        int f = flags | (peek ? MSG_PEEK : 0);
        errno = 0;
        int n = recv(fd, buf, len, f);
        if (want_len < 0) {
            if (n != -1 || errno != -want_len)
                FAILF("recv(%d, flags %#x) = %d errno %d, want errno %d", len, f, n, errno, -want_len);
        } else if (n != want_len || memcmp(buf, want, want_len) != 0) {
            FAILF("recv(%d, flags %#x) = %d \"%.*s\", want %d \"%s\"", len, f, n, n > 0 ? n : 0, buf, want_len, want);
        }
    }
}

static void basics(void) {
    int fd[2];
    char buf[16];
    pair(fd);
    CHECK_ERR(recv(fd[1], buf, 1, MSG_OOB), EINVAL);
    CHECK_ERR(send(fd[0], "", 0, MSG_OOB), EOPNOTSUPP);
    CHECK_EQ(at_mark(fd[1]), 0);
    CHECK_EQ(revents(fd[1]), 0);

    sends(fd[0], "abc", MSG_OOB);
    sends(fd[0], "de", 0);
    CHECK_EQ(revents(fd[1]), POLLIN | POLLPRI);
    CHECK_EQ(revents(fd[0]) & POLLPRI, 0);
    CHECK_EQ(inq(fd[1]), 5);
    int ep = CHECK_OK(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLPRI, .data.fd = fd[1]}, got;
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd[1], &ev));
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 1);
    CHECK_EQ(got.events, EPOLLPRI);

    /* A read, even with room and MSG_WAITALL, stops at the mark. */
    CHECK_EQ(at_mark(fd[1]), 0);
    recv_is(fd[1], 16, MSG_WAITALL, "ab", 2);
    CHECK_EQ(at_mark(fd[1]), 1);
    CHECK_EQ(inq(fd[1]), 3);

    /* recv(MSG_OOB): peeked, taken (recvmsg says MSG_OOB), then gone. */
    CHECK_EQ(recv(fd[1], buf, 1, MSG_OOB | MSG_PEEK), 1);
    CHECK_EQ(buf[0], 'c');
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    buf[0] = 0;
    CHECK_EQ(recvmsg(fd[1], &m, MSG_OOB), 1);
    CHECK_EQ(buf[0], 'c');
    CHECK_EQ(m.msg_flags, MSG_OOB);
    CHECK_ERR(recv(fd[1], buf, 1, MSG_OOB), EINVAL);
    CHECK_EQ(revents(fd[1]), POLLIN);
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 0);
    CHECK_EQ(inq(fd[1]), 2);

    /* Still at the mark until a read passes it. */
    CHECK_EQ(at_mark(fd[1]), 1);
    recv_is(fd[1], 16, 0, "de", 2);
    CHECK_EQ(at_mark(fd[1]), 0);
    CHECK_ERR(recv(fd[1], buf, 1, 0), EAGAIN);

    /* Urgent data goes both ways. */
    sends(fd[1], "Q", MSG_OOB);
    CHECK_EQ(revents(fd[0]), POLLIN | POLLPRI);
    CHECK_EQ(at_mark(fd[0]), 1);
    recv_is(fd[0], 1, MSG_OOB, "Q", 1);

    /* A receive with no room still takes the byte (and counts it). */
    sends(fd[0], "R", MSG_OOB);
    iov.iov_len = 0;
    m.msg_flags = 0;
    CHECK_EQ(recvmsg(fd[1], &m, MSG_OOB), 1);
    CHECK_EQ(m.msg_flags, MSG_OOB);
    CHECK_ERR(recv(fd[1], buf, 1, MSG_OOB), EINVAL);
    close(ep);
    unpair(fd);
}

/* The cases of the kernel's selftest (net/af_unix/msg_oob.c). */
static void selftest_cases(void) {
    int fd[2];

    pair(fd); /* oob_drop: a read drops the urgent byte it meets first. */
    sends(fd[0], "x", MSG_OOB);
    CHECK_EQ(at_mark(fd[1]), 1);
    recv_is(fd[1], 1, 0, "", -EAGAIN);
    recv_is(fd[1], 1, MSG_OOB, "", -EINVAL);
    CHECK_EQ(revents(fd[1]), 0);
    unpair(fd);

    pair(fd); /* oob_ahead_break */
    sends(fd[0], "hello", MSG_OOB);
    sends(fd[0], "world", 0);
    recv_is(fd[1], 1, MSG_OOB, "o", 1);
    recv_is(fd[1], 9, 0, "hell", 4); /* the mark splits even once taken */
    recv_is(fd[1], 5, 0, "world", 5);
    unpair(fd);

    pair(fd); /* oob_break_drop */
    sends(fd[0], "hello", MSG_OOB);
    sends(fd[0], "world", 0);
    recv_is(fd[1], 10, 0, "hell", 4);
    recv_is(fd[1], 10, 0, "world", 5);
    recv_is(fd[1], 1, MSG_OOB, "", -EINVAL);
    unpair(fd);

    pair(fd); /* ex_oob_break: a replaced urgent byte is plain data. */
    sends(fd[0], "hello", MSG_OOB);
    sends(fd[0], "wor", MSG_OOB);
    sends(fd[0], "ld", 0);
    recv_is(fd[1], 10, 0, "hellowo", 7);
    recv_is(fd[1], 1, MSG_OOB, "r", 1);
    recv_is(fd[1], 2, 0, "ld", 2);
    unpair(fd);

    pair(fd); /* ex_oob_drop */
    sends(fd[0], "x", MSG_OOB);
    sends(fd[0], "y", MSG_OOB);
    recv_is(fd[1], 1, 0, "x", 1);
    recv_is(fd[1], 1, MSG_OOB, "y", 1);
    unpair(fd);

    pair(fd); /* ex_oob_drop_2 */
    sends(fd[0], "x", MSG_OOB);
    sends(fd[0], "y", MSG_OOB);
    recv_is(fd[1], 1, MSG_OOB, "y", 1);
    recv_is(fd[1], 1, 0, "x", 1);
    unpair(fd);

    pair(fd); /* ex_oob_ahead_break: a taken byte's place is skipped. */
    sends(fd[0], "hello", MSG_OOB);
    sends(fd[0], "wor", MSG_OOB);
    recv_is(fd[1], 1, MSG_OOB, "r", 1);
    sends(fd[0], "ld", MSG_OOB);
    recv_is(fd[1], 10, 0, "hellowol", 8);
    recv_is(fd[1], 1, MSG_OOB, "d", 1);
    unpair(fd);

    pair(fd); /* two taken bytes in a row split reads once */
    sends(fd[0], "a", MSG_OOB);
    recv_is(fd[1], 1, MSG_OOB, "a", 1);
    sends(fd[0], "b", MSG_OOB);
    recv_is(fd[1], 1, MSG_OOB, "b", 1);
    CHECK_EQ(at_mark(fd[1]), 1);
    CHECK_EQ(inq(fd[1]), 0);
    CHECK_EQ(revents(fd[1]), POLLIN); /* the taken bytes' places are queued */
    sends(fd[0], "cd", 0);
    recv_is(fd[1], 10, 0, "cd", 2);
    CHECK_EQ(revents(fd[1]), 0);
    unpair(fd);
}

/* SO_OOBINLINE: the urgent byte stays in the stream; recv(MSG_OOB) is
 * EINVAL, yet reads still stop at the mark and POLLPRI shows it. */
static void inline_oob(void) {
    int fd[2], one = 1;
    pair(fd);
    CHECK_OK(setsockopt(fd[1], SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)));
    sends(fd[0], "abc", MSG_OOB);
    sends(fd[0], "de", 0);
    CHECK_EQ(revents(fd[1]), POLLIN | POLLPRI);
    recv_is(fd[1], 1, MSG_OOB, "", -EINVAL);
    CHECK_EQ(at_mark(fd[1]), 0);
    recv_is(fd[1], 16, 0, "ab", 2);
    CHECK_EQ(at_mark(fd[1]), 1);
    CHECK_EQ(inq(fd[1]), 3);
    recv_is(fd[1], 16, 0, "cde", 3);
    CHECK_EQ(revents(fd[1]), 0);
    CHECK_EQ(at_mark(fd[1]), 0);

    /* The option may be turned off with the byte queued. */
    sends(fd[0], "xy", MSG_OOB);
    int zero = 0;
    CHECK_OK(setsockopt(fd[1], SOL_SOCKET, SO_OOBINLINE, &zero, sizeof(zero)));
    recv_is(fd[1], 16, 0, "x", 1);
    recv_is(fd[1], 1, MSG_OOB, "y", 1);
    unpair(fd);
}

/* SIGURG goes to the receiving socket's F_SETOWN owner, set before or
 * after the connection exists; the sender's owner gets none. */
static void sigurg(void) {
    struct sigaction sa = {.sa_handler = on_sigurg};
    CHECK_OK(sigaction(SIGURG, &sa, NULL));
    int fd[2];
    pair(fd);
    CHECK_OK(fcntl(fd[0], F_SETOWN, getpid()));
    sends(fd[0], "a", MSG_OOB);
    CHECK_EQ(sigurgs, 0);
    CHECK_OK(fcntl(fd[1], F_SETOWN, getpid()));
    sends(fd[0], "b", 0);
    CHECK_EQ(sigurgs, 0);
    sends(fd[0], "c", MSG_OOB);
    CHECK_EQ(sigurgs, 1);
    CHECK_OK(fcntl(fd[1], F_SETOWN, 0));
    sends(fd[0], "d", MSG_OOB);
    CHECK_EQ(sigurgs, 1);
    unpair(fd);

    /* A client whose owner was set before connect(2). */
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "husk-unix-oob-%d", getpid());
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1);
    int l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
    CHECK_OK(listen(l, 1));
    int c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_OK(fcntl(c, F_SETOWN, getpid()));
    CHECK_OK(connect(c, (struct sockaddr *)&a, alen));
    int s = CHECK_OK(accept(l, NULL, NULL));
    sends(s, "z", MSG_OOB);
    CHECK_EQ(sigurgs, 2);
    char b;
    CHECK_EQ(recv(c, &b, 1, MSG_OOB), 1);
    CHECK_EQ(b, 'z');
    close(s);
    close(c);
    close(l);
    signal(SIGURG, SIG_DFL);
}

/* A blocking read waits past a dropped urgent byte for real data, and
 * MSG_WAITALL stops at the mark. */
static void blocking(void) {
    int fd[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, fd));
    sends(fd[0], "x", MSG_OOB);
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        usleep(50000);
        sends(fd[0], "late", 0);
        _exit(0);
    }
    char buf[8] = {0};
    CHECK_EQ(recv(fd[1], buf, sizeof(buf), 0), 4);
    CHECK(memcmp(buf, "late", 4) == 0);
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK_EQ(st, 0);
    /* MSG_WAITALL returns at the mark rather than waiting past it. */
    sends(fd[0], "ab", MSG_OOB);
    CHECK_EQ(recv(fd[1], buf, sizeof(buf), MSG_WAITALL), 1);
    CHECK_EQ(buf[0], 'a');
    CHECK_EQ(recv(fd[1], buf, 1, MSG_OOB), 1);
    CHECK_EQ(buf[0], 'b');
    /* The peer gone, the rest reads as EOF. */
    close(fd[0]);
    CHECK_EQ(recv(fd[1], buf, sizeof(buf), 0), 0);
    close(fd[1]);
}

/* Message sockets have no urgent data. */
static void message_sockets(void) {
    int types[] = {SOCK_DGRAM, SOCK_SEQPACKET};
    for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        int fd[2];
        char b;
        CHECK_OK(socketpair(AF_UNIX, types[i] | SOCK_NONBLOCK, 0, fd));
        CHECK_ERR(send(fd[0], "x", 1, MSG_OOB), EOPNOTSUPP);
        CHECK_ERR(recv(fd[1], &b, 1, MSG_OOB), EOPNOTSUPP);
        int v;
        CHECK_ERR(ioctl(fd[1], SIOCATMARK, &v), EOPNOTSUPP);
        unpair(fd);
    }
}

int main(void) {
    basics();
    selftest_cases();
    inline_oob();
    sigurg();
    blocking();
    message_sockets();
    printf("unix_oob: ok\n");
    return 0;
}
