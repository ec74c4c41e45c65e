/* proc_load.c — /proc's load and time counters follow real work:
 * /proc/self/stat's utime grows while the process spins and its cutime
 * once it has waited for a spinning child; /proc/stat's cpu line grows
 * and it counts context switches, processes and a running task; the
 * 1-minute /proc/loadavg rises above 0.5 while four threads spin (Linux
 * samples every 5 s; a bounded wait, not a timing assertion). */
#include "check.h"
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#define TICKS_MIN 10 /* 100 ms of the 300 ms of CPU a spin takes */

static long long cpu_ms(clockid_t c) {
    struct timespec ts;
    CHECK_OK(clock_gettime(c, &ts));
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static volatile unsigned long sink;

/* Spins until `ms` of this process's CPU time passed (at most 30 s wall). */
static void spin_cpu(long long ms) {
    long long until = cpu_ms(CLOCK_PROCESS_CPUTIME_ID) + ms;
    time_t give_up = time(NULL) + 30;
    while (cpu_ms(CLOCK_PROCESS_CPUTIME_ID) < until && time(NULL) < give_up)
        for (int i = 0; i < 1000000; i++)
            sink += i;
}

/* Field `n` (1-based, as proc(5) numbers them) of /proc/self/stat. */
static unsigned long long self_stat(int n) {
    char buf[4096];
    CHECK_OK(read_file("/proc/self/stat", buf, sizeof buf));
    char *p = strrchr(buf, ')');
    CHECK(p != NULL);
    p += 2; /* field 3 */
    for (int i = 3; i < n; i++) {
        p = strchr(p, ' ');
        CHECK(p != NULL);
        p++;
    }
    return strtoull(p, NULL, 10);
}

/* The value after `key ` in /proc/stat. */
static unsigned long long proc_stat(const char *key) {
    static char buf[65536];
    CHECK_OK(read_file("/proc/stat", buf, sizeof buf));
    char want[64];
    snprintf(want, sizeof want, "\n%s ", key);
    char *p = strstr(buf, want);
    CHECK(p != NULL);
    return strtoull(p + strlen(want), NULL, 10);
}

/* user + system of /proc/stat's `cpu` line. */
static unsigned long long stat_cpu_busy(void) {
    char buf[4096];
    CHECK_OK(read_file("/proc/stat", buf, sizeof buf));
    unsigned long long user, nice, system;
    CHECK_EQ(sscanf(buf, "cpu %llu %llu %llu", &user, &nice, &system), 3);
    return user + system;
}

static volatile int stop;

static void *spinner(void *arg) {
    (void)arg;
    while (!stop)
        sink++;
    return NULL;
}

int main(void) {
    alarm(90);

    /* utime grows with the process's own spinning. */
    unsigned long long utime0 = self_stat(14), busy0 = stat_cpu_busy();
    spin_cpu(300);
    unsigned long long utime1 = self_stat(14);
    if (utime1 < utime0 + TICKS_MIN)
        FAILF("utime %llu -> %llu after 300 ms of spinning", utime0, utime1);
    CHECK(stat_cpu_busy() >= busy0 + TICKS_MIN);
    CHECK_EQ(self_stat(20), 1); /* num_threads */
    CHECK(self_stat(23) > 0);   /* vsize */
    CHECK(self_stat(24) > 0);   /* rss */

    /* cutime: a spinning child, once waited for. */
    CHECK_EQ(self_stat(16), 0);
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        spin_cpu(300);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK_EQ(st, 0);
    unsigned long long cutime = self_stat(16);
    if (cutime < TICKS_MIN)
        FAILF("cutime %llu after waiting for a child that spun 300 ms", cutime);

    /* /proc/stat's counters. */
    CHECK(proc_stat("ctxt") > 0);
    CHECK(proc_stat("processes") >= 2);
    CHECK(proc_stat("procs_running") >= 1);
    unsigned long long btime = proc_stat("btime");
    CHECK(btime > 0 && btime <= (unsigned long long)time(NULL));

    /* The load average rises while four threads spin. */
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, spinner, NULL), 0);
    double one = 0, five, fifteen;
    int running, total, last;
    for (int i = 0; i < 60 && one <= 0.5; i++) {
        char buf[256];
        CHECK_OK(read_file("/proc/loadavg", buf, sizeof buf));
        CHECK_EQ(sscanf(buf, "%lf %lf %lf %d/%d %d", &one, &five, &fifteen, &running, &total, &last), 6);
        CHECK(running >= 1 && running <= total);
        if (one <= 0.5)
            sleep(1);
    }
    stop = 1;
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    if (one <= 0.5)
        FAILF("the 1-minute load stayed at %.2f with four threads spinning for 60 s", one);
    return 0;
}
