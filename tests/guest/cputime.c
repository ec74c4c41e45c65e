/* cputime.c — CPU time counts the program's own work: a thread spinning
 * in user code (few system calls) advances CLOCK_THREAD_CPUTIME_ID,
 * CLOCK_PROCESS_CPUTIME_ID, getrusage and times; a child's spinning shows
 * in wait4's rusage and then in the parent's RUSAGE_CHILDREN and times'
 * cutime, and in the raw waitid's rusage. Each spin lasts SPIN_MS of wall
 * time and must yield at least MIN_CPU_MS of CPU time (a loaded machine
 * may run it a fraction of the time). */
#include "check.h"
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>

#define SPIN_MS 300
#define MIN_CPU_MS 10

static long long ns(clockid_t c) {
    struct timespec ts;
    CHECK_OK(clock_gettime(c, &ts));
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long tv_ms(struct timeval tv) {
    return tv.tv_sec * 1000LL + tv.tv_usec / 1000;
}

static volatile unsigned long sink;

/* Spins in user code for SPIN_MS of wall time, looking at the clock only
 * every few million iterations. */
static void spin(void) {
    long long end = ns(CLOCK_MONOTONIC) + SPIN_MS * 1000000LL;
    do {
        for (unsigned long i = 0; i < 5000000; i++)
            sink += i;
    } while (ns(CLOCK_MONOTONIC) < end);
}

static long long spun_thread_ns;

static void *spinner(void *arg) {
    (void)arg;
    long long t0 = ns(CLOCK_THREAD_CPUTIME_ID);
    spin();
    spun_thread_ns = ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    return NULL;
}

int main(void) {
    alarm(30);
    long hz = sysconf(_SC_CLK_TCK);
    CHECK(hz > 0);

    /* This thread spins. */
    struct rusage ru0, ru1;
    CHECK_OK(getrusage(RUSAGE_SELF, &ru0));
    struct tms tms0, tms1;
    CHECK(times(&tms0) != (clock_t)-1);
    long long t0 = ns(CLOCK_THREAD_CPUTIME_ID), p0 = ns(CLOCK_PROCESS_CPUTIME_ID);
    spin();
    long long t1 = ns(CLOCK_THREAD_CPUTIME_ID), p1 = ns(CLOCK_PROCESS_CPUTIME_ID);
    CHECK_OK(getrusage(RUSAGE_SELF, &ru1));
    CHECK(times(&tms1) != (clock_t)-1);
    if (t1 - t0 < MIN_CPU_MS * 1000000LL)
        FAILF("thread CPU time grew %lld ns over a %d ms spin", t1 - t0, SPIN_MS);
    CHECK(p1 - p0 >= t1 - t0 - 1000000LL);
    CHECK(tv_ms(ru1.ru_utime) - tv_ms(ru0.ru_utime) >= MIN_CPU_MS);
    CHECK((tms1.tms_utime + tms1.tms_stime) - (tms0.tms_utime + tms0.tms_stime) >= MIN_CPU_MS * hz / 1000);
    struct rusage th;
    CHECK_OK(getrusage(RUSAGE_THREAD, &th));
    CHECK(tv_ms(th.ru_utime) >= MIN_CPU_MS);

    /* Another thread spins: its own clock grows, and the process's. */
    pthread_t t;
    p0 = ns(CLOCK_PROCESS_CPUTIME_ID);
    CHECK_EQ(pthread_create(&t, NULL, spinner, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    p1 = ns(CLOCK_PROCESS_CPUTIME_ID);
    CHECK(spun_thread_ns >= MIN_CPU_MS * 1000000LL);
    CHECK(p1 - p0 >= spun_thread_ns - 1000000LL);

    /* A child spins: its usage comes back with wait4, then counts among
     * the parent's children. */
    struct rusage c0;
    CHECK_OK(getrusage(RUSAGE_CHILDREN, &c0));
    CHECK_EQ(tv_ms(c0.ru_utime) + tv_ms(c0.ru_stime), 0);
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        spin();
        _exit(0);
    }
    int st;
    struct rusage cru;
    CHECK_EQ(wait4(child, &st, 0, &cru), child);
    CHECK_EQ(st, 0);
    long long child_ms = tv_ms(cru.ru_utime) + tv_ms(cru.ru_stime);
    if (child_ms < MIN_CPU_MS)
        FAILF("wait4 rusage of a child that spun %d ms: %lld ms", SPIN_MS, child_ms);
    struct rusage c1;
    CHECK_OK(getrusage(RUSAGE_CHILDREN, &c1));
    CHECK(tv_ms(c1.ru_utime) + tv_ms(c1.ru_stime) >= child_ms);
    struct tms tms2;
    CHECK(times(&tms2) != (clock_t)-1);
    CHECK(tms2.tms_cutime + tms2.tms_cstime >= MIN_CPU_MS * hz / 1000);

    /* The raw waitid's fifth argument is the child's rusage too. */
    child = CHECK_OK(fork());
    if (child == 0) {
        spin();
        _exit(0);
    }
    siginfo_t si;
    struct rusage wru;
    CHECK_OK(syscall(SYS_waitid, P_PID, child, &si, WEXITED, &wru));
    CHECK_EQ(si.si_pid, child);
    child_ms = tv_ms(wru.ru_utime) + tv_ms(wru.ru_stime);
    if (child_ms < MIN_CPU_MS)
        FAILF("waitid rusage of a child that spun %d ms: %lld ms", SPIN_MS, child_ms);
    return 0;
}
