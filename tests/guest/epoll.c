/* epoll.c — epoll as Linux has it where it is easy to get wrong: nested
 * instances (loops and chains deeper than five are refused with ELOOP),
 * a file added, deleted and added again (reported once), epoll_wait
 * interrupted by a signal (EINTR, never restarted, even with SA_RESTART or
 * after SIGSTOP and SIGCONT; an ignored signal does not end it), and a
 * signalfd whose new mask makes it readable (its pollers wake). */
#define _GNU_SOURCE
#include "check.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int watch(int ep, int fd, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.fd = fd};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void loops_are_refused(void) {
    int a = CHECK_OK(epoll_create1(0)), b = CHECK_OK(epoll_create1(0));
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_OK(watch(a, b, EPOLLIN));
    CHECK_ERR(watch(b, a, EPOLLIN), ELOOP);
    CHECK_OK(watch(b, p[0], EPOLLIN));
    CHECK_EQ(write(p[1], "x", 1), 1);
    struct pollfd pfd = {.fd = a, .events = POLLIN};
    CHECK_EQ(poll(&pfd, 1, 1000), 1);
    struct epoll_event ev;
    CHECK_EQ(epoll_wait(a, &ev, 1, 1000), 1);
    CHECK_EQ(ev.data.fd, b);
    close(a), close(b), close(p[0]), close(p[1]);
}

/* A chain of `n` instances, each watching the next, linked from the top
 * down or from the bottom up: the result of the last link tried. */
static int chain(int n, int top_down) {
    int ep[8], r = 0;
    for (int i = 0; i < n; i++)
        ep[i] = CHECK_OK(epoll_create1(0));
    for (int j = 0; j < n - 1 && r == 0; j++) {
        int i = top_down ? j : n - 2 - j;
        r = watch(ep[i], ep[i + 1], EPOLLIN) == 0 ? 0 : errno;
    }
    for (int i = 0; i < n; i++)
        close(ep[i]);
    return r;
}

static void deep_chains_are_refused(void) {
    for (int top_down = 0; top_down < 2; top_down++) {
        CHECK_EQ(chain(5, top_down), 0);
        CHECK_EQ(chain(6, top_down), ELOOP);
    }
}

static void add_delete_add_reports_once(void) {
    int ep = CHECK_OK(epoll_create1(0));
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_EQ(write(p[1], "x", 1), 1);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(watch(ep, p[0], EPOLLIN));
        CHECK_OK(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    }
    CHECK_OK(watch(ep, p[0], EPOLLIN));
    struct epoll_event ev[4];
    CHECK_EQ(epoll_wait(ep, ev, 4, 0), 1);
    close(ep), close(p[0]), close(p[1]);
}

static void on_alarm(int sig) { (void)sig; }

static void a_handled_signal_ends_the_wait_with_eintr(void) {
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    CHECK_OK(sigaction(SIGALRM, &sa, NULL));
    int ep = CHECK_OK(epoll_create1(0));
    struct itimerval it = {.it_value = {.tv_usec = 50000}};
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    struct epoll_event ev;
    long long t0 = now_ms();
    CHECK_ERR(epoll_wait(ep, &ev, 1, 3000), EINTR);
    CHECK(now_ms() - t0 < 2000);
    close(ep);
}

static void an_ignored_signal_does_not_end_the_wait(void) {
    signal(SIGCHLD, SIG_DFL);
    int ep = CHECK_OK(epoll_create1(0));
    pid_t child = CHECK_OK(fork());
    if (child == 0)
        _exit(0);
    struct epoll_event ev;
    CHECK_EQ(epoll_wait(ep, &ev, 1, 300), 0);
    CHECK_EQ(waitpid(child, NULL, 0), child);
    close(ep);
}

static void a_stop_and_continue_ends_the_wait_with_eintr(void) {
    int ep = CHECK_OK(epoll_create1(0));
    int p[2];
    CHECK_OK(pipe(p));
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        CHECK_EQ(write(p[1], "w", 1), 1);
        struct epoll_event ev;
        int r = epoll_wait(ep, &ev, 1, 5000);
        _exit(r == -1 && errno == EINTR ? 0 : 1);
    }
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    usleep(100000);
    int status;
    CHECK_OK(kill(child, SIGSTOP));
    CHECK_EQ(waitpid(child, &status, WUNTRACED), child);
    CHECK(WIFSTOPPED(status));
    long long t0 = now_ms();
    CHECK_OK(kill(child, SIGCONT));
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(now_ms() - t0 < 3000);
    close(ep), close(p[0]), close(p[1]);
}

static void *widen_mask(void *arg) {
    usleep(100000);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    CHECK_EQ(signalfd(*(int *)arg, &set, 0), *(int *)arg);
    return NULL;
}

static void a_new_signalfd_mask_wakes_its_pollers(void) {
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    CHECK_OK(sigprocmask(SIG_BLOCK, &set, &old));
    CHECK_OK(raise(SIGUSR1));
    sigemptyset(&set);
    int sfd = CHECK_OK(signalfd(-1, &set, SFD_CLOEXEC));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, widen_mask, &sfd), 0);
    struct pollfd pfd = {.fd = sfd, .events = POLLIN};
    long long t0 = now_ms();
    CHECK_EQ(poll(&pfd, 1, 3000), 1);
    CHECK(now_ms() - t0 < 2000);
    CHECK_EQ(pthread_join(t, NULL), 0);
    struct signalfd_siginfo si;
    CHECK_EQ(read(sfd, &si, sizeof si), (ssize_t)sizeof si);
    CHECK_EQ(si.ssi_signo, SIGUSR1);
    CHECK_OK(sigprocmask(SIG_SETMASK, &old, NULL));
    close(sfd);
}

int main(void) {
    loops_are_refused();
    deep_chains_are_refused();
    add_delete_add_reports_once();
    a_handled_signal_ends_the_wait_with_eintr();
    an_ignored_signal_does_not_end_the_wait();
    a_stop_and_continue_ends_the_wait_with_eintr();
    a_new_signalfd_mask_wakes_its_pollers();
    return 0;
}
