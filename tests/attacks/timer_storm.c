/* timer_storm: a guest that arms every kind of timer at short intervals
 * (16 POSIX timers at 1 ms, an interval timer at 100 us, 32 timerfds at
 * 1 ns) must only slow itself: its own work still finishes, it can
 * disarm them, and the sandbox exits with its status. The sentry's
 * timer thread serves every sandbox process: it must not wedge. Passes
 * natively.
 */
#include "check.h"
#include <signal.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>

static volatile long ticks;
static void tick(int sig) {
    (void)sig;
    ticks++;
}

int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = tick;
    sa.sa_flags = SA_RESTART;
    CHECK_OK(sigaction(SIGALRM, &sa, NULL));
    CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
    timer_t timers[16];
    int made = 0;
    for (; made < 16; made++) {
        struct sigevent ev = {0};
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = made % 2 ? SIGALRM : SIGUSR1;
        if (timer_create(CLOCK_MONOTONIC, &ev, &timers[made]) != 0)
            break;
        struct itimerspec its = {{0, 1000000}, {0, 1}};
        CHECK_OK(timer_settime(timers[made], 0, &its, NULL));
    }
    CHECK(made > 0);
    struct itimerval it = {{0, 100}, {0, 1}};
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    int tfds[32];
    for (int i = 0; i < 32; i++) {
        tfds[i] = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
        struct itimerspec its = {{0, 1}, {0, 1}};
        CHECK_OK(timerfd_settime(tfds[i], 0, &its, NULL));
    }
    /* Work goes on under the storm. */
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 5000000; i++)
        x += i;
    pid_t kid = CHECK_OK(fork());
    if (kid == 0)
        _exit(4);
    int st;
    while (waitpid(kid, &st, 0) < 0)
        CHECK_EQ(errno, EINTR);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 4);
    /* Disarm. */
    for (int i = 0; i < made; i++)
        CHECK_OK(timer_delete(timers[i]));
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK_OK(setitimer(ITIMER_REAL, &off, NULL));
    for (int i = 0; i < 32; i++)
        close(tfds[i]);
    long seen = ticks;
    struct timespec nap = {0, 50000000};
    nanosleep(&nap, NULL);
    CHECK(ticks - seen <= 2); /* at most what was pending at disarming */
    CHECK(ticks > 0);
    return 0;
}
