/* job_control.c — stop signals, SIGCONT and what wait reports about them:
 * SIGSTOP/SIGTSTP stop a process (it runs no more), SIGCONT resumes it,
 * wait4(WUNTRACED/WCONTINUED) and waitid(WSTOPPED/WCONTINUED) report each
 * change once, the parent gets SIGCHLD unless SA_NOCLDSTOP, and SIGKILL
 * ends a stopped process. */
#include "check.h"
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

static volatile sig_atomic_t chld_count;
static volatile sig_atomic_t cont_seen;

static void on_chld(int sig) { (void)sig; chld_count++; }
static void on_usr1(int sig) { (void)sig; }

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
static void on_cont(int sig) { (void)sig; cont_seen = 1; }

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* A child that counts in shared memory until killed. It leads a process
 * group of its own, which its parent (in another group of the session)
 * could continue: terminal stop signals to an orphaned group, such as a
 * container init's, are discarded. */
static pid_t counter(volatile long *count) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGCONT, on_cont);
        for (;;) {
            (*count)++;
            if (cont_seen) {
                count[1] = 1;
            }
            sleep_ms(1);
        }
    }
    return pid;
}

static void wait_for_count(volatile long *count, long at_least) {
    for (int i = 0; i < 5000 && *count < at_least; i++) {
        sleep_ms(1);
    }
    CHECK(*count >= at_least);
}

int main(void) {
    volatile long *count = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(count != MAP_FAILED);
    struct sigaction sa = {0};
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART; /* SIGCHLD may come during a wait */
    CHECK_OK(sigaction(SIGCHLD, &sa, NULL));

    /* SIGSTOP: the child stops and runs no more; wait4 reports it once. */
    pid_t pid = counter(count);
    wait_for_count(count, 5);
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    CHECK_OK(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK(WIFSTOPPED(st));
    CHECK_EQ(WSTOPSIG(st), SIGSTOP);
    CHECK_EQ(waitpid(pid, &st, WNOHANG | WUNTRACED), 0);
    long frozen = *count;
    sleep_ms(100);
    CHECK_EQ(*count, frozen);
    for (int i = 0; i < 1000 && chld_count == 0; i++) {
        sleep_ms(1);
    }
    CHECK(chld_count >= 1);

    /* SIGCONT: it runs again, its handler runs, WCONTINUED reports it. */
    CHECK_OK(kill(pid, SIGCONT));
    CHECK_EQ(waitpid(pid, &st, WCONTINUED), pid);
    CHECK(WIFCONTINUED(st));
    wait_for_count(count, frozen + 5);
    for (int i = 0; i < 5000 && !count[1]; i++) {
        sleep_ms(1);
    }
    CHECK_EQ(count[1], 1);

    /* waitid sees a stop with CLD_STOPPED, and WNOWAIT leaves it. */
    CHECK_OK(kill(pid, SIGTSTP));
    siginfo_t si;
    memset(&si, 0, sizeof si);
    CHECK_OK(waitid(P_PID, pid, &si, WSTOPPED | WNOWAIT));
    CHECK_EQ(si.si_pid, pid);
    CHECK_EQ(si.si_code, CLD_STOPPED);
    CHECK_EQ(si.si_status, SIGTSTP);
    memset(&si, 0, sizeof si);
    CHECK_OK(waitid(P_PID, pid, &si, WSTOPPED | WNOHANG));
    CHECK_EQ(si.si_code, CLD_STOPPED);
    memset(&si, 0, sizeof si);
    CHECK_OK(waitid(P_PID, pid, &si, WSTOPPED | WNOHANG));
    CHECK_EQ(si.si_pid, 0);

    /* SIGKILL ends a stopped process. */
    CHECK_OK(kill(pid, SIGKILL));
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st));
    CHECK_EQ(WTERMSIG(st), SIGKILL);

    /* A process that stops itself, then exits once continued. */
    pid = CHECK_OK(fork());
    if (pid == 0) {
        setpgid(0, 0);
        raise(SIGTSTP);
        _exit(7);
    }
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    CHECK(WIFSTOPPED(st));
    CHECK_EQ(WSTOPSIG(st), SIGTSTP);
    CHECK_OK(kill(pid, SIGCONT));
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 7);

    /* A sleep stopped and continued keeps its deadline: it does not start
     * over (400 ms asked, stopped from 50 ms to 550 ms: it ends at the
     * continue, not 400 ms later). */
    pid = CHECK_OK(fork());
    if (pid == 0) {
        setpgid(0, 0);
        long long t0 = now_ms();
        struct timespec req = {0, 400 * 1000 * 1000};
        nanosleep(&req, NULL);
        _exit(now_ms() - t0 < 900 ? 0 : 1);
    }
    sleep_ms(50);
    CHECK_OK(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    sleep_ms(500);
    CHECK_OK(kill(pid, SIGCONT));
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);

    /* A handler interrupts a sleep: EINTR, and the time left in rem. The
     * child inherits the handler, and SIGUSR1 comes every 100 ms until it
     * exits: one sent before its sleep began (a loaded machine) is harmless. */
    struct sigaction usr = {0};
    usr.sa_handler = on_usr1;
    CHECK_OK(sigaction(SIGUSR1, &usr, NULL));
    pid = CHECK_OK(fork());
    if (pid == 0) {
        struct timespec req = {2, 0}, rem = {0, 0};
        int r = nanosleep(&req, &rem);
        _exit(r == -1 && errno == EINTR && rem.tv_sec == 1 ? 0 : 1);
    }
    while (CHECK_OK(waitpid(pid, &st, WNOHANG)) == 0) {
        sleep_ms(100);
        (void)kill(pid, SIGUSR1); /* It may have exited since. */
    }
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);

    /* SA_NOCLDSTOP: no SIGCHLD for a stop, but still for the exit. */
    sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    CHECK_OK(sigaction(SIGCHLD, &sa, NULL));
    chld_count = 0;
    pid = counter(count);
    CHECK_OK(kill(pid, SIGSTOP));
    CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
    sleep_ms(50);
    CHECK_EQ(chld_count, 0);
    CHECK_OK(kill(pid, SIGKILL));
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    /* The signal follows the exit; allow a loaded machine ten seconds. */
    long long until = now_ms() + 10000;
    while (chld_count == 0 && now_ms() < until) {
        sleep_ms(1);
    }
    CHECK_EQ(chld_count, 1);

    /* An exit's SIGCHLD is pending before the parent's wait can reap the
     * child, so its handler has run when waitpid returns: never lost, never
     * late (a race: tried often). */
    for (int i = 0; i < 100; i++) {
        chld_count = 0;
        pid = CHECK_OK(fork());
        if (pid == 0) {
            _exit(0);
        }
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        CHECK_EQ(chld_count, 1);
    }
    return 0;
}
