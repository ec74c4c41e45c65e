/* waiting.c — files that are waited on: epoll (level, edge, one-shot),
 * eventfd, socketpair, poll on a pipe whose writer closed, memfd_create
 * with a shared mapping, sendfile, timerfd, signalfd and sigtimedwait. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
    /* eventfd: counter and semaphore semantics. */
    int efd = CHECK_OK(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    uint64_t v = 0;
    CHECK_ERR(read(efd, &v, 8), EAGAIN);
    v = 3;
    CHECK_EQ(write(efd, &v, 8), 8);
    v = 4;
    CHECK_EQ(write(efd, &v, 8), 8);
    CHECK_EQ(read(efd, &v, 8), 8);
    CHECK_EQ(v, 7);
    CHECK_ERR(read(efd, &v, 4), EINVAL);
    int sem = CHECK_OK(eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK));
    CHECK_EQ(read(sem, &v, 8), 8);
    CHECK_EQ(v, 1);

    /* epoll over a pipe and the eventfd. */
    int p[2];
    CHECK_OK(pipe2(p, O_NONBLOCK));
    int ep = CHECK_OK(epoll_create1(EPOLL_CLOEXEC));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 11};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = 22;
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
    CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
    struct epoll_event out[4];
    CHECK_EQ(epoll_wait(ep, out, 4, 0), 0);
    CHECK_ERR(epoll_wait(ep, out, 0, 0), EINVAL);
    CHECK_EQ(write(p[1], "x", 1), 1);
    CHECK_EQ(epoll_wait(ep, out, 4, 1000), 1);
    CHECK_EQ(out[0].data.u64, 11);
    CHECK_EQ(epoll_wait(ep, out, 4, 0), 1); /* level-triggered: again */
    v = 1;
    CHECK_EQ(write(efd, &v, 8), 8);
    int n = CHECK_OK(epoll_wait(ep, out, 4, 1000));
    CHECK_EQ(n, 2);
    CHECK_EQ(epoll_wait(ep, out, 4, 0), 1); /* the edge-triggered one is quiet */
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = 33;
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
    CHECK_EQ(epoll_wait(ep, out, 4, 0), 1);
    CHECK_EQ(out[0].data.u64, 33);
    CHECK_EQ(epoll_wait(ep, out, 4, 0), 0); /* one shot */
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);

    /* poll: a pipe whose writer is gone reports POLLHUP. */
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_OK(close(p[1]));
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    CHECK_EQ(poll(&pf, 1, 1000), 1);
    CHECK(pf.revents & POLLHUP);

    /* socketpair: both directions, then shutdown. */
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_EQ(send(sv[0], "ping", 4, 0), 4);
    char buf[8] = {0};
    CHECK_EQ(recv(sv[1], buf, sizeof buf, 0), 4);
    CHECK_MEM(buf, "ping", 4);
    CHECK_EQ(write(sv[1], "pong", 4), 4);
    CHECK_EQ(read(sv[0], buf, 4), 4);
    CHECK_MEM(buf, "pong", 4);
    int type = 0;
    socklen_t len = sizeof type;
    CHECK_OK(getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &type, &len));
    CHECK_EQ(type, SOCK_STREAM);
    CHECK_OK(shutdown(sv[0], SHUT_WR));
    CHECK_EQ(read(sv[1], buf, 4), 0);
    CHECK_ERR(send(p[0], "x", 1, 0), ENOTSOCK);

    /* memfd: a shared mapping and the file agree. */
    int m = CHECK_OK(memfd_create("waiting", MFD_CLOEXEC));
    CHECK_OK(ftruncate(m, 4096));
    char *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
    CHECK(map != MAP_FAILED);
    memcpy(map, "mapped", 6);
    CHECK_EQ(pread(m, buf, 6, 0), 6);
    CHECK_MEM(buf, "mapped", 6);
    CHECK_EQ(pwrite(m, "FILE", 4, 0), 4);
    CHECK_MEM(map, "FILE", 4);

    /* sendfile from the memfd into a pipe, at an explicit offset. */
    int q[2];
    CHECK_OK(pipe(q));
    off_t off = 1;
    CHECK_EQ(sendfile(q[1], m, &off, 3), 3);
    CHECK_EQ(off, 4);
    CHECK_EQ(read(q[0], buf, 3), 3);
    CHECK_MEM(buf, "ILE", 3);

    /* timerfd: an interval timer counts expirations and polls readable. */
    int tfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
    struct itimerspec its = {{0, 10000000}, {0, 10000000}};
    CHECK_OK(timerfd_settime(tfd, 0, &its, NULL));
    CHECK_EQ(read(tfd, &v, 8), 8);
    CHECK(v >= 1);
    struct pollfd tp = {.fd = tfd, .events = POLLIN};
    CHECK_EQ(poll(&tp, 1, 1000), 1);
    struct itimerspec cur;
    CHECK_OK(timerfd_gettime(tfd, &cur));
    CHECK_EQ(cur.it_interval.tv_nsec, 10000000);

    /* Blocked signals read from a signalfd, or taken by sigtimedwait. */
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGUSR1);
    sigaddset(&ss, SIGUSR2);
    CHECK_OK(sigprocmask(SIG_BLOCK, &ss, NULL));
    int sfd = CHECK_OK(signalfd(-1, &ss, SFD_NONBLOCK));
    struct signalfd_siginfo si;
    CHECK_ERR(read(sfd, &si, sizeof si), EAGAIN);
    CHECK_OK(kill(getpid(), SIGUSR1));
    CHECK_EQ(read(sfd, &si, sizeof si), sizeof si);
    CHECK_EQ(si.ssi_signo, SIGUSR1);
    CHECK_OK(kill(getpid(), SIGUSR2));
    siginfo_t info;
    CHECK_EQ(sigwaitinfo(&ss, &info), SIGUSR2);
    struct timespec zero = {0, 1000000};
    CHECK_ERR(sigtimedwait(&ss, &info, &zero), EAGAIN);
    return 0;
}
