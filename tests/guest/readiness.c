/* readiness.c — waits that must end: wait4 on a child that stopped itself
 * and that another process of the session continues (with and without
 * WUNTRACED/WCONTINUED, a multi-threaded child too); a blocking receive
 * with SO_RCVTIMEO on TCP, UDP and Unix sockets times out, and an ignored
 * signal (a child's SIGCHLD) does not interrupt it; edge-triggered
 * epoll reports the file's whole current mask; an eventfd whose counter is
 * at its maximum is not writable. An alarm ends a hang. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <poll.h>

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A process that sends `sig` to `pid` after `ms`. */
static pid_t signal_later(pid_t pid, int sig, long ms) {
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        nap_ms(ms);
        _exit(kill(pid, sig) == 0 ? 0 : 1);
    }
    return p;
}

static void reap_ok(pid_t p) {
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK_EQ(st, 0);
}

static void *idle_thread(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* A child that stops itself, then exits 3 a little after it is continued
 * (so the parent sees the continue before the exit). */
static pid_t self_stopping_child(int threaded) {
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        if (threaded) {
            pthread_t t;
            if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
                _exit(1);
        }
        raise(SIGSTOP);
        nap_ms(100);
        _exit(3);
    }
    return c;
}

static void stop_and_continue(void) {
    for (int threaded = 0; threaded < 2; threaded++) {
        /* Waiting only for the exit: the stop is not reported; the
         * SIGCONT another process sends lets the child exit. */
        pid_t c = self_stopping_child(threaded);
        pid_t k = signal_later(c, SIGCONT, 200);
        int st;
        CHECK_EQ(waitpid(c, &st, 0), c);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), 3);
        reap_ok(k);

        /* WUNTRACED sees the stop, WCONTINUED the continue, then the exit. */
        c = self_stopping_child(threaded);
        CHECK_EQ(waitpid(c, &st, WUNTRACED), c);
        CHECK(WIFSTOPPED(st));
        CHECK_EQ(WSTOPSIG(st), SIGSTOP);
        k = signal_later(c, SIGCONT, 100);
        CHECK_EQ(waitpid(c, &st, WCONTINUED), c);
        CHECK(WIFCONTINUED(st));
        CHECK_EQ(waitpid(c, &st, WUNTRACED | WCONTINUED), c);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), 3);
        reap_ok(k);
    }
}

/* The parent stops its child and then continues its whole process group
 * (kill(0, SIGCONT), the sender included) or the child's own group
 * (killpg), while waiting for it. */
static void continue_by_group(void) {
    for (int own_group = 0; own_group < 2; own_group++) {
        pid_t c = CHECK_OK(fork());
        if (c == 0) {
            for (int i = 0; i < 40; i++)
                nap_ms(10);
            _exit(4);
        }
        if (own_group)
            CHECK_OK(setpgid(c, c));
        CHECK_OK(kill(c, SIGSTOP));
        int st;
        CHECK_EQ(waitpid(c, &st, WUNTRACED), c);
        CHECK(WIFSTOPPED(st));
        if (own_group)
            CHECK_OK(killpg(c, SIGCONT));
        else
            CHECK_OK(kill(0, SIGCONT));
        CHECK_EQ(waitpid(c, &st, 0), c);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), 4);
    }
}

static void receive_timeouts(void) {
    struct timeval tv = {0, 100000};
    char buf[8];

    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_OK(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    CHECK_ERR(read(sv[0], buf, sizeof buf), EAGAIN);
    CHECK_ERR(recv(sv[0], buf, sizeof buf, 0), EAGAIN);
    /* A child's exit (SIGCHLD, ignored by default) during the wait does
     * not interrupt it: Linux drops an ignored signal when it is sent. */
    pid_t quick = CHECK_OK(fork());
    if (quick == 0) {
        nap_ms(30);
        _exit(0);
    }
    CHECK_ERR(read(sv[0], buf, sizeof buf), EAGAIN);
    reap_ok(quick);
    struct timeval back;
    socklen_t blen = sizeof back;
    CHECK_OK(getsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &back, &blen));
    CHECK_EQ(blen, sizeof back);
    CHECK_EQ(back.tv_sec * 1000000 + back.tv_usec, 100000);
    struct timeval bad = {0, 1000000};
    CHECK_ERR(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof bad), EDOM);
    close(sv[0]);
    close(sv[1]);

    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    CHECK_OK(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    struct iovec iov = {buf, sizeof buf};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    CHECK_ERR(recvmsg(sv[0], &mh, 0), EAGAIN);
    CHECK_EQ(write(sv[1], "z", 1), 1);
    CHECK_EQ(recvmsg(sv[0], &mh, 0), 1);
    close(sv[0]);
    close(sv[1]);

    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(listen(l, 1));
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
    int s = CHECK_OK(accept(l, NULL, NULL));
    CHECK_OK(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    CHECK_ERR(recv(c, buf, sizeof buf, 0), EAGAIN);
    CHECK_ERR(read(c, buf, sizeof buf), EAGAIN);
    close(s);
    close(c);
    close(l);

    int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    struct sockaddr_in ua = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_OK(bind(u, (struct sockaddr *)&ua, sizeof ua));
    CHECK_ERR(recvfrom(u, buf, sizeof buf, 0, NULL, NULL), EAGAIN);
    close(u);
}

static void edge_triggered_mask(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    int ep = CHECK_OK(epoll_create1(0));
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.fd = sv[0]};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev));
    struct epoll_event got;
    /* Writable at once: reported once. */
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLOUT);
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 0);
    /* Data arrives: the event carries the whole mask, IN and OUT. */
    CHECK_EQ(write(sv[1], "x", 1), 1);
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLIN | EPOLLOUT);
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 0);
    /* More data: a new edge, again the whole mask. */
    CHECK_EQ(write(sv[1], "y", 1), 1);
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLIN | EPOLLOUT);
    close(ep);
    close(sv[0]);
    close(sv[1]);

    /* An eventfd: each write is an edge, reported with the whole mask;
     * a read that leaves it writable is one too. */
    int e = CHECK_OK(eventfd(0, EFD_NONBLOCK));
    ep = CHECK_OK(epoll_create1(0));
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
    ev.data.fd = e;
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev));
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLOUT);
    uint64_t one = 1;
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(write(e, &one, sizeof one), 8);
        CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
        CHECK_EQ(got.events, EPOLLIN | EPOLLOUT);
        CHECK_EQ(epoll_wait(ep, &got, 1, 0), 0);
    }
    uint64_t v;
    CHECK_EQ(read(e, &v, sizeof v), 8);
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLOUT);
    close(ep);
    close(e);

    /* A UDP socket: a datagram's arrival reports IN|OUT. */
    int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in ua = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t ulen = sizeof ua;
    CHECK_OK(bind(u, (struct sockaddr *)&ua, sizeof ua));
    CHECK_OK(getsockname(u, (struct sockaddr *)&ua, &ulen));
    ep = CHECK_OK(epoll_create1(0));
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
    ev.data.fd = u;
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, u, &ev));
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLOUT);
    CHECK_EQ(sendto(u, "d", 1, 0, (struct sockaddr *)&ua, sizeof ua), 1);
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLIN | EPOLLOUT);
    close(ep);
    close(u);

    /* A pipe's read end: IN then IN|HUP when the writer goes. */
    int p[2];
    CHECK_OK(pipe(p));
    ep = CHECK_OK(epoll_create1(0));
    ev.events = EPOLLIN | EPOLLET;
    ev.data.fd = p[0];
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    CHECK_EQ(write(p[1], "x", 1), 1);
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLIN);
    close(p[1]);
    CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
    CHECK_EQ(got.events, EPOLLIN | EPOLLHUP);
    close(ep);
    close(p[0]);
}

static void eventfd_at_max(void) {
    int e = CHECK_OK(eventfd(0, EFD_NONBLOCK));
    uint64_t v = UINT64_MAX - 1;
    CHECK_EQ(write(e, &v, sizeof v), 8);
    struct pollfd p = {e, POLLIN | POLLOUT, 0};
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK_EQ(p.revents, POLLIN);
    v = 1;
    CHECK_ERR(write(e, &v, sizeof v), EAGAIN);
    CHECK_EQ(read(e, &v, sizeof v), 8);
    CHECK_EQ(v, UINT64_MAX - 1);
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK_EQ(p.revents, POLLOUT);
    v = UINT64_MAX;
    CHECK_ERR(write(e, &v, sizeof v), EINVAL);
    close(e);
}

int main(void) {
    alarm(30);
    stop_and_continue();
    continue_by_group();
    receive_timeouts();
    edge_triggered_mask();
    eventfd_at_max();
    return 0;
}
