/* extreme_times.c — timeouts and timer values as far in the future as the
 * types allow (tv_sec = INT64_MAX): Linux accepts them and simply waits;
 * a kernel that adds them to its clock must not overflow. Each wait here
 * is ended by a signal from a short POSIX timer. */
#include "check.h"
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>

static timer_t waker;
static void on_usr1(int sig) { (void)sig; }

/* Arms the waker: SIGUSR1 in 100 ms. */
static void wake_soon(void) {
    struct itimerspec its = {{0, 0}, {0, 100000000}};
    CHECK_OK(timer_settime(waker, 0, &its, NULL));
}

int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR1;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &waker));
    const struct timespec forever = {INT64_MAX, 999999999};

    wake_soon();
    CHECK_ERR(nanosleep(&forever, NULL), EINTR);
    wake_soon();
    CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &forever, NULL), EINTR);

    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_OK(sigprocmask(SIG_BLOCK, &usr2, NULL));
    wake_soon();
    CHECK_ERR(sigtimedwait(&usr2, NULL, &forever), EINTR);

    int tfd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));
    struct itimerspec far = {forever, forever};
    CHECK_OK(timerfd_settime(tfd, 0, &far, NULL));
    uint64_t ticks;
    wake_soon();
    CHECK_ERR(read(tfd, &ticks, sizeof ticks), EINTR);
    close(tfd);

    timer_t t;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, NULL, &t));
    CHECK_OK(timer_settime(t, 0, &far, NULL));
    struct itimerspec left;
    CHECK_OK(timer_gettime(t, &left));
    CHECK(left.it_value.tv_sec > (1L << 31));
    CHECK_OK(timer_delete(t));

    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct timeval tv = {INT64_MAX, 0};
    CHECK_OK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    char b;
    wake_soon();
    CHECK_ERR(recv(s, &b, 1, 0), EINTR);
    close(s);

    int ep = CHECK_OK(epoll_create1(0));
    struct epoll_event out;
    wake_soon();
    CHECK_ERR(syscall(SYS_epoll_pwait2, ep, &out, 1, &forever, NULL, 8), EINTR);
    close(ep);
    struct pollfd none = {-1, 0, 0};
    wake_soon();
    CHECK_ERR(ppoll(&none, 1, &forever, NULL), EINTR);
    /* futex waits until a relative or an absolute (realtime) far end. */
    int word = 0;
    wake_soon();
    CHECK_ERR(syscall(SYS_futex, &word, FUTEX_WAIT, 0, &forever, NULL, 0), EINTR);
    wake_soon();
    CHECK_ERR(syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 0, &forever, NULL, ~0u), EINTR);
    puts("extreme_times: ok");
    return 0;
}
