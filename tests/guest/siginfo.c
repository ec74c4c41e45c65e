/* siginfo.c — what a signal carries: the sender's pid and uid (kill:
 * SI_USER, tgkill: SI_TKILL), a queued value (sigqueue: SI_QUEUE),
 * real-time signals queued once per send and in order while standard ones
 * merge, a child's exit, death and status in SIGCHLD (CLD_EXITED,
 * CLD_KILLED), a POSIX timer's value (SI_TIMER), SIGPIPE raised by the
 * writer itself, the same fields in signalfd records, and the rule that
 * only a process itself may claim SI_USER in rt_sigqueueinfo. */
#include "check.h"
#include <signal.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

static volatile sig_atomic_t seen;
static volatile siginfo_t last;
static int values[8];

static void on_info(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    memcpy((void *)&last, si, sizeof *si);
    if (seen < 8)
        values[seen] = si->si_value.sival_int;
    seen++;
}

static void handle(int sig) {
    struct sigaction sa = {0};
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO;
    CHECK_OK(sigaction(sig, &sa, NULL));
}

static void block(int sig, int how) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    CHECK_OK(sigprocmask(how, &s, NULL));
}

static void sender_ids(void) {
    handle(SIGUSR1);
    seen = 0;
    CHECK_OK(kill(getpid(), SIGUSR1));
    CHECK_EQ(seen, 1);
    CHECK_EQ(last.si_code, SI_USER);
    CHECK_EQ(last.si_pid, getpid());
    CHECK_EQ(last.si_uid, getuid());

    CHECK_OK(syscall(SYS_tgkill, getpid(), gettid(), SIGUSR1));
    CHECK_EQ(last.si_code, SI_TKILL);
    CHECK_EQ(last.si_pid, getpid());

    union sigval v = {.sival_int = 42};
    CHECK_OK(sigqueue(getpid(), SIGUSR1, v));
    CHECK_EQ(last.si_code, SI_QUEUE);
    CHECK_EQ(last.si_value.sival_int, 42);
    CHECK_EQ(last.si_pid, getpid());
}

static void queueing(void) {
    /* Real-time signals queue each send, delivered in order. */
    int rt = SIGRTMIN + 1;
    handle(rt);
    block(rt, SIG_BLOCK);
    seen = 0;
    for (int i = 1; i <= 3; i++) {
        union sigval v = {.sival_int = i};
        CHECK_OK(sigqueue(getpid(), rt, v));
    }
    sigset_t pending;
    CHECK_OK(sigpending(&pending));
    CHECK(sigismember(&pending, rt));
    block(rt, SIG_UNBLOCK);
    CHECK_EQ(seen, 3);
    CHECK_EQ(values[0], 1);
    CHECK_EQ(values[1], 2);
    CHECK_EQ(values[2], 3);
    CHECK_OK(sigpending(&pending));
    CHECK(!sigismember(&pending, rt));

    /* A standard signal sent twice while blocked arrives once, with the
     * first sender's value. */
    handle(SIGUSR2);
    block(SIGUSR2, SIG_BLOCK);
    seen = 0;
    union sigval a = {.sival_int = 7}, b = {.sival_int = 8};
    CHECK_OK(sigqueue(getpid(), SIGUSR2, a));
    CHECK_OK(sigqueue(getpid(), SIGUSR2, b));
    block(SIGUSR2, SIG_UNBLOCK);
    CHECK_EQ(seen, 1);
    CHECK_EQ(values[0], 7);
}

static void from_a_child(void) {
    block(SIGUSR2, SIG_BLOCK);
    block(SIGCHLD, SIG_BLOCK);
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        kill(getppid(), SIGUSR2);
        _exit(7);
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    siginfo_t si;
    struct timespec ts = {5, 0};
    CHECK_EQ(sigtimedwait(&set, &si, &ts), SIGUSR2);
    CHECK_EQ(si.si_code, SI_USER);
    CHECK_EQ(si.si_pid, child);
    CHECK_EQ(si.si_uid, getuid());

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    CHECK_EQ(sigtimedwait(&set, &si, &ts), SIGCHLD);
    CHECK_EQ(si.si_code, CLD_EXITED);
    CHECK_EQ(si.si_pid, child);
    CHECK_EQ(si.si_status, 7);
    CHECK_EQ(waitpid(child, NULL, 0), child);

    child = CHECK_OK(fork());
    if (child == 0) {
        pause();
        _exit(0);
    }
    CHECK_OK(kill(child, SIGTERM));
    CHECK_EQ(sigtimedwait(&set, &si, &ts), SIGCHLD);
    CHECK_EQ(si.si_code, CLD_KILLED);
    CHECK_EQ(si.si_pid, child);
    CHECK_EQ(si.si_status, SIGTERM);
    CHECK_EQ(waitpid(child, NULL, 0), child);
    block(SIGCHLD, SIG_UNBLOCK);

    /* Only a process itself may claim kill(2)'s code. */
    child = CHECK_OK(fork());
    if (child == 0) {
        pause();
        _exit(0);
    }
    siginfo_t forged = {0};
    forged.si_code = SI_USER;
    forged.si_pid = 1;
    CHECK_ERR(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &forged), EPERM);
    forged.si_code = SI_QUEUE;
    CHECK_OK(syscall(SYS_rt_sigqueueinfo, child, SIGTERM, &forged));
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

static void through_signalfd(void) {
    block(SIGUSR1, SIG_BLOCK);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    int fd = CHECK_OK(signalfd(-1, &set, SFD_NONBLOCK));
    union sigval v = {.sival_int = 99};
    CHECK_OK(sigqueue(getpid(), SIGUSR1, v));
    struct signalfd_siginfo r;
    CHECK_EQ(read(fd, &r, sizeof r), sizeof r);
    CHECK_EQ(r.ssi_signo, SIGUSR1);
    CHECK_EQ(r.ssi_code, SI_QUEUE);
    CHECK_EQ(r.ssi_pid, getpid());
    CHECK_EQ(r.ssi_uid, getuid());
    CHECK_EQ(r.ssi_int, 99);
    CHECK_ERR(read(fd, &r, sizeof r), EAGAIN);
    close(fd);
    block(SIGUSR1, SIG_UNBLOCK);
}

static void timer_value(void) {
    int sig = SIGRTMIN + 2;
    block(sig, SIG_BLOCK);
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    ev.sigev_value.sival_ptr = (void *)(uintptr_t)0x1234;
    timer_t t;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
    struct itimerspec its = {{0, 0}, {0, 10000000}};
    CHECK_OK(timer_settime(t, 0, &its, NULL));
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    siginfo_t si;
    CHECK_EQ(sigwaitinfo(&set, &si), sig);
    CHECK_EQ(si.si_code, SI_TIMER);
    CHECK_EQ((uintptr_t)si.si_value.sival_ptr, 0x1234);

    /* A periodic timer whose signal waits blocked queues it once; later
     * expiries are overruns, not more signals. (Disarming it drops the
     * pending one on Linux 6.12 and later, keeps it before: at most one
     * arrives either way.) */
    handle(sig);
    seen = 0;
    struct itimerspec fast = {{0, 1000000}, {0, 1000000}};
    CHECK_OK(timer_settime(t, 0, &fast, NULL));
    usleep(50000);
    struct itimerspec off = {{0, 0}, {0, 0}};
    CHECK_OK(timer_settime(t, 0, &off, NULL));
    CHECK_OK(sigprocmask(SIG_UNBLOCK, &set, NULL));
    CHECK(seen <= 1);
    CHECK_OK(timer_delete(t));
}

static void sigpipe_from_self(void) {
    handle(SIGPIPE);
    int p[2];
    CHECK_OK(pipe(p));
    close(p[0]);
    seen = 0;
    CHECK_ERR(write(p[1], "x", 1), EPIPE);
    CHECK_EQ(seen, 1);
    CHECK_EQ(last.si_code, SI_USER);
    CHECK_EQ(last.si_pid, getpid());
    close(p[1]);
}

/* Signals that sigsuspend's mask lets through are acted on under that
 * mask: a pending ignored one is dropped (the wait goes on until a
 * handler runs), a pending fatal one kills. */
static void suspend_mask(void) {
    alarm(10);
    sigset_t set, orig;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    CHECK_OK(sigprocmask(SIG_BLOCK, &set, &orig));
    signal(SIGTERM, SIG_IGN);
    CHECK_OK(kill(getpid(), SIGTERM));
    handle(SIGUSR1);
    seen = 0;
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        usleep(100000);
        kill(getppid(), SIGUSR1);
        _exit(0);
    }
    CHECK_ERR(sigsuspend(&orig), EINTR);
    CHECK_EQ(seen, 1);
    CHECK_EQ(last.si_signo, SIGUSR1);
    CHECK_EQ(waitpid(child, NULL, 0), child);
    CHECK_OK(sigprocmask(SIG_SETMASK, &orig, NULL));
    signal(SIGTERM, SIG_DFL);

    child = CHECK_OK(fork());
    if (child == 0) {
        sigprocmask(SIG_BLOCK, &set, NULL);
        kill(getpid(), SIGTERM);
        sigset_t none;
        sigemptyset(&none);
        sigsuspend(&none);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    alarm(0);
}

int main(void) {
    sender_ids();
    queueing();
    from_a_child();
    through_signalfd();
    timer_value();
    sigpipe_from_self();
    suspend_mask();
    puts("siginfo: ok");
    return 0;
}
