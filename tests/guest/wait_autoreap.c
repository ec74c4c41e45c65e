/* wait_autoreap.c — a parent that ignores SIGCHLD (SIG_IGN) or sets
 * SA_NOCLDWAIT has its children reaped as they die: no zombie is left,
 * wait blocks until the last child is gone and then fails with ECHILD,
 * and their CPU time is not counted in RUSAGE_CHILDREN; with
 * SA_NOCLDWAIT the handler still gets SIGCHLD. A child whose exit signal
 * is not SIGCHLD stays a zombie for __WCLONE. By default a zombie is
 * left, which is no child to a wait that does not ask for exits. */
#define _GNU_SOURCE
#include "check.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

static volatile sig_atomic_t got_sigchld;

static void on_sigchld(int sig) {
    (void)sig;
    got_sigchld = 1;
}

/* A child that spins on the CPU for about `ms` milliseconds, then exits 0. */
static pid_t spinning_child(int ms) {
    pid_t pid = fork();
    if (pid == 0) {
        struct timespec start, now;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
        do {
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
        } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
        _exit(0);
    }
    CHECK(pid > 0);
    return pid;
}

static long children_usec(void) {
    struct rusage ru;
    CHECK_OK(getrusage(RUSAGE_CHILDREN, &ru));
    return ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec;
}

static void ignored(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    CHECK_OK(sigaction(SIGCHLD, &sa, NULL));
    long before = children_usec();
    pid_t pid = spinning_child(300);
    /* Blocks until the child is gone, then finds no child. */
    CHECK_ERR(waitpid(-1, NULL, 0), ECHILD);
    CHECK_ERR(waitpid(pid, NULL, WNOHANG), ECHILD);
    CHECK_ERR(kill(pid, 0), ESRCH);
    CHECK(children_usec() - before < 100000);

    /* A clone child with another exit signal (blocked here) is still left
     * a zombie. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_OK(sigprocmask(SIG_BLOCK, &usr1, NULL));
    long c = syscall(SYS_clone, (long)SIGUSR1, 0L, 0L, 0L, 0L);
    if (c == 0)
        _exit(4);
    CHECK(c > 0);
    int st = 0;
    CHECK_EQ(waitpid((pid_t)c, &st, __WCLONE), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 4);
    sa.sa_handler = SIG_DFL;
    CHECK_OK(sigaction(SIGCHLD, &sa, NULL));
}

static void nocldwait(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_NOCLDWAIT;
    CHECK_OK(sigaction(SIGCHLD, &sa, NULL));
    got_sigchld = 0;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    CHECK(pid > 0);
    int r;
    do {
        r = waitpid(-1, NULL, 0);
    } while (r == -1 && errno == EINTR);
    CHECK_EQ(r, -1);
    CHECK_EQ(errno, ECHILD);
    /* The handler ran (or runs at the latest when the signal is taken). */
    for (int i = 0; i < 500 && !got_sigchld; i++)
        usleep(1000);
    CHECK_EQ(got_sigchld, 1);
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    CHECK_OK(sigaction(SIGCHLD, &sa, NULL));
}

static void default_leaves_zombie(void) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(6);
    CHECK(pid > 0);
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    CHECK_OK(waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
    CHECK_OK(kill(pid, 0));
    /* A zombie is no child to a wait that does not ask for exits. */
    CHECK_ERR(waitid(P_ALL, 0, &si, WSTOPPED | WCONTINUED), ECHILD);
    CHECK_ERR(waitid(P_PID, pid, &si, WSTOPPED), ECHILD);
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 6);
}

int main(void) {
    ignored();
    nocldwait();
    default_leaves_zombie();
    return 0;
}
