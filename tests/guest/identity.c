/* identity.c — ids, uname, sysinfo, rlimits, affinity, randomness, clocks. */
#include "check.h"

#include <sched.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>

/* Parse "Key:\tA\tB\tC\tD" from /proc/self/status. */
static void status_ids(const char *key, long out[4]) {
    static char st[8192];
    CHECK(read_file("/proc/self/status", st, sizeof st) > 0);
    char needle[32];
    snprintf(needle, sizeof needle, "\n%s:", key);
    char *l = strstr(st, needle);
    if (!l)
        FAILF("/proc/self/status has no %s: line", key);
    if (sscanf(l + strlen(needle), "%ld %ld %ld %ld", &out[0], &out[1],
               &out[2], &out[3]) != 4)
        FAILF("cannot parse /proc/self/status %s: line", key);
}

static long long ts_ns(const struct timespec *t) {
    return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

int main(void) {
    /* pids. */
    pid_t pid = getpid();
    CHECK(pid > 0);
    CHECK_EQ(syscall(SYS_gettid), pid);
    CHECK_EQ(syscall(SYS_getpid), pid);
    CHECK(getppid() >= 0);
    CHECK(getpgrp() >= 0); /* 0 if the leader is outside our pid namespace */
    CHECK(getsid(0) >= 0);
    CHECK_EQ(getpgid(0), getpgrp());
    CHECK_ERR(getpgid(-1), ESRCH);

    /* credentials agree with /proc/self/status. */
    long ids[4];
    status_ids("Uid", ids);
    CHECK_EQ(ids[0], getuid());
    CHECK_EQ(ids[1], geteuid());
    status_ids("Gid", ids);
    CHECK_EQ(ids[0], getgid());
    CHECK_EQ(ids[1], getegid());
    uid_t r, e, s;
    CHECK_OK(getresuid(&r, &e, &s));
    CHECK_EQ(r, getuid());
    CHECK_EQ(e, geteuid());
    gid_t gr, ge, gs;
    CHECK_OK(getresgid(&gr, &ge, &gs));
    CHECK_EQ(gr, getgid());
    CHECK_EQ(ge, getegid());
    int ng = CHECK_OK(getgroups(0, NULL));
    CHECK(ng >= 0);

    /* uname. */
    struct utsname u;
    CHECK_OK(uname(&u));
    CHECK_STR(u.sysname, "Linux");
    CHECK_STR(u.machine, "x86_64");
    CHECK(strlen(u.release) > 0);
    CHECK(strlen(u.nodename) > 0);
    {
        char hn[256];
        CHECK_OK(gethostname(hn, sizeof hn));
        CHECK_STR(hn, u.nodename);
    }

    /* sysinfo. */
    struct sysinfo si;
    CHECK_OK(sysinfo(&si));
    CHECK(si.totalram > 0);
    CHECK(si.freeram <= si.totalram);
    CHECK(si.uptime > 0);
    CHECK(si.mem_unit >= 1);
    CHECK(si.procs >= 1);

    /* rlimits. */
    struct rlimit rl, rl2;
    CHECK_OK(getrlimit(RLIMIT_NOFILE, &rl));
    CHECK(rl.rlim_cur <= rl.rlim_max);
    CHECK(rl.rlim_cur >= 3);
    CHECK_OK(prlimit(0, RLIMIT_NOFILE, NULL, &rl2));
    CHECK_EQ(rl2.rlim_cur, rl.rlim_cur);
    CHECK_EQ(rl2.rlim_max, rl.rlim_max);
    CHECK_OK(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl2));
    CHECK_EQ(rl2.rlim_cur, rl.rlim_cur);
    /* lower the soft limit and read it back. */
    struct rlimit lower = {rl.rlim_cur > 64 ? 64 : rl.rlim_cur, rl.rlim_max};
    CHECK_OK(setrlimit(RLIMIT_NOFILE, &lower));
    CHECK_OK(getrlimit(RLIMIT_NOFILE, &rl2));
    CHECK_EQ(rl2.rlim_cur, lower.rlim_cur);
    CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
    struct rlimit bad = {10, 5}; /* cur > max */
    CHECK_ERR(setrlimit(RLIMIT_NOFILE, &bad), EINVAL);
    CHECK_ERR(getrlimit(999, &rl2), EINVAL);
    CHECK_OK(getrlimit(RLIMIT_STACK, &rl2));
    CHECK(rl2.rlim_cur > 0);

    /* affinity. */
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CHECK_OK(sched_getaffinity(0, sizeof cs, &cs));
    CHECK(CPU_COUNT(&cs) >= 1);
    long nb = CHECK_OK(syscall(SYS_sched_getaffinity, 0, sizeof cs, &cs));
    CHECK(nb > 0 && nb <= (long)sizeof cs && nb % 8 == 0);
    CHECK_OK(sched_yield());
    {
        unsigned cpu = 9999, node = 9999;
        CHECK_OK(syscall(SYS_getcpu, &cpu, &node, NULL));
        CHECK(cpu < CPU_SETSIZE);
    }

    /* getrandom. */
    unsigned char rnd[64], rnd2[64];
    memset(rnd, 0, sizeof rnd);
    CHECK_EQ(getrandom(rnd, sizeof rnd, 0), 64);
    int nonzero = 0;
    for (int i = 0; i < 64; i++)
        nonzero |= rnd[i];
    CHECK(nonzero != 0);
    CHECK_EQ(getrandom(rnd2, sizeof rnd2, GRND_NONBLOCK), 64);
    CHECK(memcmp(rnd, rnd2, 64) != 0);
    CHECK_ERR(getrandom(rnd, sizeof rnd, 0x1000), EINVAL);

    /* clocks. */
    struct timespec t0, t1, res;
    CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t0));
    for (int i = 0; i < 1000; i++) {
        CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t1));
        CHECK(ts_ns(&t1) >= ts_ns(&t0));
        t0 = t1;
    }
    CHECK(t1.tv_nsec >= 0 && t1.tv_nsec < 1000000000L);
    CHECK_OK(clock_getres(CLOCK_MONOTONIC, &res));
    CHECK(ts_ns(&res) > 0 && ts_ns(&res) <= 1000000);
    struct timespec rt;
    CHECK_OK(clock_gettime(CLOCK_REALTIME, &rt));
    time_t now = time(NULL);
    CHECK(rt.tv_sec - now <= 1 && now - rt.tv_sec <= 1);
    CHECK(rt.tv_sec > 1600000000); /* after 2020 */
    /* raw syscall path too (bypassing the vDSO). */
    struct timespec rt2;
    CHECK_OK(syscall(SYS_clock_gettime, CLOCK_REALTIME, &rt2));
    CHECK(rt2.tv_sec - rt.tv_sec <= 1);
    CHECK_OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t0));
    CHECK(ts_ns(&t0) >= ts_ns(&t1));
    CHECK_OK(clock_gettime(CLOCK_BOOTTIME, &t0));
    CHECK_OK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0));
    CHECK_OK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0));
    CHECK_ERR(clock_gettime(12345, &t0), EINVAL);
    CHECK_ERR(syscall(SYS_clock_gettime, 12345, &t0), EINVAL);

    /* gettimeofday consistent with CLOCK_REALTIME. */
    struct timeval tv;
    CHECK_OK(clock_gettime(CLOCK_REALTIME, &rt));
    CHECK_OK(gettimeofday(&tv, NULL));
    CHECK(tv.tv_usec >= 0 && tv.tv_usec < 1000000);
    {
        long long a = ts_ns(&rt) / 1000;
        long long b = (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
        CHECK(b >= a && b - a < 1000000); /* within a second, not backward */
    }
    CHECK_OK(syscall(SYS_gettimeofday, &tv, NULL));

    /* nanosleep 10 ms elapses >= 10 ms. */
    CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t0));
    struct timespec req = {0, 10 * 1000 * 1000}, rem = {0, 0};
    CHECK_OK(nanosleep(&req, &rem));
    CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t1));
    CHECK(ts_ns(&t1) - ts_ns(&t0) >= 10 * 1000 * 1000);
    CHECK(ts_ns(&t1) - ts_ns(&t0) < 2LL * 1000 * 1000 * 1000);
    struct timespec badreq = {0, 1000000000L};
    CHECK_ERR(nanosleep(&badreq, NULL), EINVAL);
    badreq.tv_sec = -1;
    badreq.tv_nsec = 0;
    CHECK_ERR(nanosleep(&badreq, NULL), EINVAL);
    /* clock_nanosleep absolute in the past returns immediately. */
    CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t0));
    CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t0, NULL), 0);
    t0.tv_nsec += 5 * 1000 * 1000;
    if (t0.tv_nsec >= 1000000000L) {
        t0.tv_sec++;
        t0.tv_nsec -= 1000000000L;
    }
    CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t0, NULL), 0);
    CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t1));
    CHECK(ts_ns(&t1) >= ts_ns(&t0));

    /* getrusage / times. */
    struct rusage ru;
    CHECK_OK(getrusage(RUSAGE_SELF, &ru));
    CHECK(ru.ru_maxrss > 0);
    CHECK_ERR(getrusage(42, &ru), EINVAL);

    /* umask round trip. */
    mode_t old = umask(027);
    CHECK_EQ(umask(old), 027);
    return 0;
}
