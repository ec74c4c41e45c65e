/* idle_epoll.c — a guest blocked in epoll_wait on 100 idle files (pipes,
 * Unix socket pairs and loopback TCP connections) wakes only at its
 * timeout, with nothing to report.
 *
 *     idle_epoll [MS]    (default 500)
 *
 * Prints "blocked" on stdout just before it waits, so a test can measure
 * what the wait costs (the sentry's CPU time while the guest is idle). */
#define _GNU_SOURCE
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#define PIPES 50
#define UNIX_PAIRS 40
#define TCP_CONNS 10

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void watch(int ep, int fd, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.fd = fd};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
}

int main(int argc, char **argv) {
    int ms = argc > 1 ? atoi(argv[1]) : 500;
    int ep = CHECK_OK(epoll_create1(EPOLL_CLOEXEC));
    int watched = 0;

    for (int i = 0; i < PIPES; i++) {
        int p[2];
        CHECK_OK(pipe(p));
        watch(ep, p[0], EPOLLIN);
        watched++;
    }
    for (int i = 0; i < UNIX_PAIRS; i++) {
        int sv[2];
        CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        watch(ep, sv[0], EPOLLIN | EPOLLRDHUP);
        watched++;
    }
    int lis = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_OK(bind(lis, (struct sockaddr *)&addr, sizeof addr));
    CHECK_OK(listen(lis, TCP_CONNS));
    socklen_t len = sizeof addr;
    CHECK_OK(getsockname(lis, (struct sockaddr *)&addr, &len));
    for (int i = 0; i < TCP_CONNS; i++) {
        int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
        CHECK_OK(connect(c, (struct sockaddr *)&addr, sizeof addr));
        int s = CHECK_OK(accept(lis, NULL, NULL));
        watch(ep, s, EPOLLIN);
        watched++;
    }
    CHECK_EQ(watched, PIPES + UNIX_PAIRS + TCP_CONNS);

    printf("blocked\n");
    fflush(stdout);
    long long start = now_ms();
    struct epoll_event evs[16];
    CHECK_EQ(epoll_wait(ep, evs, 16, ms), 0);
    long long took = now_ms() - start;
    CHECK(took >= ms - 1);
    printf("woke after %lld ms\n", took);
    return 0;
}
