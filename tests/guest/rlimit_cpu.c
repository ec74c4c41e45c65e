/* rlimit_cpu: RLIMIT_CPU acts as in Linux. A child with a soft limit of
 * 1 s and a hard one of 3 s gets SIGXCPU (handled) after a second of CPU
 * time and again a second later, its soft limit moved on by a second each
 * time; a child whose soft and hard limits are both 1 s dies of SIGKILL. */
#include "check.h"
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

static volatile sig_atomic_t xcpu;

static void on_xcpu(int sig) {
    (void)sig;
    xcpu++;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burns CPU until `until` seconds of it, or `signals` SIGXCPUs. */
static void burn(double until, int signals) {
    while (cpu_seconds() < until && (signals == 0 || xcpu < signals)) {
    }
}

static int child(rlim_t soft, rlim_t hard, int handled, double until, int signals) {
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        if (handled)
            signal(SIGXCPU, on_xcpu);
        struct rlimit r = {soft, hard};
        CHECK_OK(setrlimit(RLIMIT_CPU, &r));
        burn(until, signals);
        struct rlimit now;
        CHECK_OK(getrlimit(RLIMIT_CPU, &now));
        if (handled) {
            CHECK_EQ(xcpu, signals);
            CHECK_EQ(now.rlim_cur, soft + signals);
        }
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    return st;
}

int main(void) {
    int st = child(1, 3, 1, 2.9, 2);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = child(1, 1, 0, 5, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    return 0;
}
