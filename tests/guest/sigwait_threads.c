/* sigwait_threads.c — a process-directed signal that every thread blocks
 * is pending for the whole process (Linux's shared_pending): whichever
 * thread waits for it in sigwait/sigtimedwait or reads it from a signalfd
 * takes it, whoever sent it (the waiter's own process, another thread,
 * another process) and whether it was sent before or during the wait; a
 * thread that unblocks it later runs its handler. Python's
 * `signal.sigwait` in a thread hung without this. An alarm ends a hang. */
#include "check.h"
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

static int waited_sig;
static volatile sig_atomic_t handled_by;

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static sigset_t only(int sig) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    return s;
}

static void *sigwaiter(void *arg) {
    (void)arg;
    sigset_t s = only(SIGUSR1);
    int sig = 0;
    CHECK_EQ(sigwait(&s, &sig), 0);
    waited_sig = sig;
    return NULL;
}

static void *timed_waiter(void *arg) {
    (void)arg;
    sigset_t s = only(SIGUSR2);
    siginfo_t si;
    struct timespec ts = {10, 0};
    waited_sig = CHECK_OK(sigtimedwait(&s, &si, &ts));
    CHECK_EQ(si.si_code, SI_USER);
    return NULL;
}

static void *fd_reader(void *arg) {
    int fd = *(int *)arg;
    struct signalfd_siginfo rec;
    CHECK_EQ(read(fd, &rec, sizeof rec), (long)sizeof rec);
    waited_sig = (int)rec.ssi_signo;
    return NULL;
}

static void *fd_poller(void *arg) {
    int fd = *(int *)arg;
    struct pollfd p = {fd, POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 10000), 1);
    struct signalfd_siginfo rec;
    CHECK_EQ(read(fd, &rec, sizeof rec), (long)sizeof rec);
    waited_sig = (int)rec.ssi_signo;
    return NULL;
}

static void *killer(void *arg) {
    (void)arg;
    nap_ms(100);
    CHECK_OK(kill(getpid(), SIGUSR1));
    return NULL;
}

static void on_usr1(int sig) {
    (void)sig;
    handled_by = (sig_atomic_t)syscall(SYS_gettid);
}

static void *unblocker(void *arg) {
    (void)arg;
    sigset_t s = only(SIGUSR1);
    CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
    for (int i = 0; i < 1000 && !handled_by; i++)
        nap_ms(5);
    CHECK_EQ(handled_by, syscall(SYS_gettid));
    return NULL;
}

int main(void) {
    alarm(20);
    sigset_t both = only(SIGUSR1);
    sigaddset(&both, SIGUSR2);
    CHECK_OK(sigprocmask(SIG_BLOCK, &both, NULL));
    pthread_t t;

    /* The main thread sends while a second thread waits in sigwait. */
    waited_sig = 0;
    CHECK_EQ(pthread_create(&t, NULL, sigwaiter, NULL), 0);
    nap_ms(100);
    CHECK_OK(kill(getpid(), SIGUSR1));
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(waited_sig, SIGUSR1);

    /* Sent before anyone waits: pending for the process (sigpending in
     * every thread), taken by the thread that waits later. */
    CHECK_OK(kill(getpid(), SIGUSR1));
    sigset_t pend;
    CHECK_OK(sigpending(&pend));
    CHECK(sigismember(&pend, SIGUSR1));
    waited_sig = 0;
    CHECK_EQ(pthread_create(&t, NULL, sigwaiter, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(waited_sig, SIGUSR1);
    CHECK_OK(sigpending(&pend));
    CHECK(!sigismember(&pend, SIGUSR1));

    /* Python's test: another thread sends while the main thread waits. */
    CHECK_EQ(pthread_create(&t, NULL, killer, NULL), 0);
    sigset_t s1 = only(SIGUSR1);
    int sig = 0;
    CHECK_EQ(sigwait(&s1, &sig), 0);
    CHECK_EQ(sig, SIGUSR1);
    CHECK_EQ(pthread_join(t, NULL), 0);

    /* Another process sends while a thread waits in sigtimedwait. */
    waited_sig = 0;
    CHECK_EQ(pthread_create(&t, NULL, timed_waiter, NULL), 0);
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        nap_ms(100);
        _exit(kill(getppid(), SIGUSR2) == 0 ? 0 : 1);
    }
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK_EQ(st, 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(waited_sig, SIGUSR2);

    /* A thread blocked reading a signalfd, and one polling it. */
    sigset_t s2 = only(SIGUSR2);
    int fd = CHECK_OK(signalfd(-1, &s2, SFD_CLOEXEC));
    void *(*readers[2])(void *) = {fd_reader, fd_poller};
    for (int i = 0; i < 2; i++) {
        waited_sig = 0;
        CHECK_EQ(pthread_create(&t, NULL, readers[i], &fd), 0);
        nap_ms(100);
        CHECK_OK(kill(getpid(), SIGUSR2));
        CHECK_EQ(pthread_join(t, NULL), 0);
        CHECK_EQ(waited_sig, SIGUSR2);
    }
    close(fd);

    /* Pending for the process while every thread blocks it; a thread
     * that unblocks it then runs the handler. */
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
    CHECK_OK(kill(getpid(), SIGUSR1));
    CHECK_EQ(pthread_create(&t, NULL, unblocker, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_OK(sigpending(&pend));
    CHECK(!sigismember(&pend, SIGUSR1));
    return 0;
}
