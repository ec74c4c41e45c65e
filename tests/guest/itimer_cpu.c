/* itimer_cpu: ITIMER_VIRTUAL and ITIMER_PROF as in Linux (man 2 setitimer).
 * A spinning process gets SIGVTALRM / SIGPROF again and again, each timer
 * reloaded with its interval, within a bounded CPU budget; getitimer reports
 * the time left (a new value plus a tick, as Linux) and the interval; a one-shot timer fires once and then reads
 * as disarmed; a sleeping process gets no SIGVTALRM (it counts user CPU time
 * only); a forked child does not inherit the timers; bad arguments are
 * EINVAL. */
#include "check.h"
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

static volatile sig_atomic_t vtalrm, prof;

static void on_signal(int sig) {
    if (sig == SIGVTALRM)
        vtalrm++;
    else if (sig == SIGPROF)
        prof++;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins in user code until `*count` reaches `want` or `budget` more seconds
 * of CPU time are used; returns the count. */
static int spin_until(volatile sig_atomic_t *count, int want, double budget) {
    double end = cpu_seconds() + budget;
    volatile unsigned long x = 0;
    while (*count < want && cpu_seconds() < end) {
        for (int i = 0; i < 200000; i++)
            x++;
    }
    return *count;
}

static long usec(struct timeval tv) {
    return tv.tv_sec * 1000000L + tv.tv_usec;
}

static void periodic(int which, volatile sig_atomic_t *count) {
    struct itimerval it = {{0, 50000}, {0, 50000}}, got, old;
    CHECK_OK(getitimer(which, &got));
    CHECK_EQ(usec(got.it_value), 0);
    CHECK_EQ(usec(got.it_interval), 0);
    CHECK_OK(setitimer(which, &it, NULL));
    CHECK_OK(getitimer(which, &got));
    /* Linux adds a tick (1 to 10 ms) to a new value, not to the interval. */
    CHECK(usec(got.it_value) > 0 && usec(got.it_value) <= 60000);
    CHECK_EQ(usec(got.it_interval), 50000);
    /* 5 periods of 50 ms need 0.25 s of CPU time; allow 3 s. */
    CHECK(spin_until(count, 5, 3.0) >= 5);
    CHECK_OK(getitimer(which, &got));
    CHECK(usec(got.it_value) > 0 && usec(got.it_value) <= 50000);
    CHECK_EQ(usec(got.it_interval), 50000);
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK_OK(setitimer(which, &off, &old));
    CHECK(usec(old.it_value) > 0 && usec(old.it_value) <= 50000);
    CHECK_EQ(usec(old.it_interval), 50000);
    CHECK_OK(getitimer(which, &got));
    CHECK_EQ(usec(got.it_value), 0);
    int before = *count;
    spin_until(count, before + 1, 0.2);
    CHECK_EQ(*count, before);
}

int main(void) {
    signal(SIGVTALRM, on_signal);
    signal(SIGPROF, on_signal);

    periodic(ITIMER_VIRTUAL, &vtalrm);
    periodic(ITIMER_PROF, &prof);

    /* One shot: fires once, then reads as disarmed. */
    struct itimerval once = {{0, 0}, {0, 20000}}, got;
    int before = prof;
    CHECK_OK(setitimer(ITIMER_PROF, &once, NULL));
    CHECK_EQ(spin_until(&prof, before + 1, 2.0), before + 1);
    spin_until(&prof, before + 2, 0.2);
    CHECK_EQ(prof, before + 1);
    CHECK_OK(getitimer(ITIMER_PROF, &got));
    CHECK_EQ(usec(got.it_value), 0);

    /* A sleeping process uses no user CPU time: no SIGVTALRM. */
    struct itimerval v = {{0, 0}, {0, 100000}};
    before = vtalrm;
    CHECK_OK(setitimer(ITIMER_VIRTUAL, &v, NULL));
    struct timespec nap = {0, 300000000};
    CHECK_OK(nanosleep(&nap, NULL));
    CHECK_EQ(vtalrm, before);
    CHECK_OK(getitimer(ITIMER_VIRTUAL, &got));
    CHECK(usec(got.it_value) > 50000 && usec(got.it_value) <= 110000);

    /* A child does not inherit the timers. */
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        struct itimerval c;
        if (getitimer(ITIMER_VIRTUAL, &c) != 0 || usec(c.it_value) != 0)
            _exit(1);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK_OK(setitimer(ITIMER_VIRTUAL, &off, NULL));

    /* Bad arguments. */
    struct itimerval bad = {{0, 0}, {0, 1000000}};
    CHECK_ERR(setitimer(ITIMER_VIRTUAL, &bad, NULL), EINVAL);
    CHECK_ERR(setitimer(99, &once, NULL), EINVAL);
    CHECK_ERR(getitimer(99, &got), EINVAL);
    return 0;
}
