/* itimer_exec: a process's timers across fork and execve, as Linux keeps
 * them in its signal_struct (man 2 fork, man 2 execve, man 2 timer_create):
 * a forked child inherits no ITIMER_REAL, ITIMER_VIRTUAL or POSIX timer and
 * the parent's stay armed; an execve keeps ITIMER_REAL and ITIMER_VIRTUAL
 * armed and deletes the POSIX timers. */
#include "check.h"
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

static long usec(struct timeval tv) {
    return tv.tv_sec * 1000000L + tv.tv_usec;
}

/* After the execve: the interval timers are still armed (their values
 * counting down from before), the POSIX timer is gone. */
static int after_exec(const char *id_arg) {
    timer_t id = (timer_t)(long)atoi(id_arg);
    struct itimerval got;
    CHECK_OK(getitimer(ITIMER_REAL, &got));
    CHECK(usec(got.it_value) > 0 && usec(got.it_value) <= 100000000L);
    CHECK_EQ(usec(got.it_interval), 7000000);
    CHECK_OK(getitimer(ITIMER_VIRTUAL, &got));
    CHECK(usec(got.it_value) > 0 && usec(got.it_value) <= 100010000L);
    struct itimerspec ts;
    CHECK_ERR(timer_gettime(id, &ts), EINVAL);
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK_OK(setitimer(ITIMER_REAL, &off, NULL));
    CHECK_OK(setitimer(ITIMER_VIRTUAL, &off, NULL));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "after-exec") == 0)
        return after_exec(argv[2]);

    /* Long enough never to fire while the program runs. */
    struct itimerval real = {{7, 0}, {100, 0}}, virt = {{0, 0}, {100, 0}};
    CHECK_OK(setitimer(ITIMER_REAL, &real, NULL));
    CHECK_OK(setitimer(ITIMER_VIRTUAL, &virt, NULL));
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_NONE;
    timer_t id;
    CHECK_OK(timer_create(CLOCK_MONOTONIC, &sev, &id));
    struct itimerspec ts = {{0, 0}, {100, 0}};
    CHECK_OK(timer_settime(id, 0, &ts, NULL));

    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        struct itimerval c;
        struct itimerspec cs;
        if (getitimer(ITIMER_REAL, &c) != 0 || usec(c.it_value) != 0 || usec(c.it_interval) != 0)
            _exit(1);
        if (getitimer(ITIMER_VIRTUAL, &c) != 0 || usec(c.it_value) != 0)
            _exit(2);
        if (timer_gettime(id, &cs) != -1 || errno != EINVAL)
            _exit(3);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);

    /* The parent's timers are untouched by the child's exit. */
    struct itimerval got;
    CHECK_OK(getitimer(ITIMER_REAL, &got));
    CHECK(usec(got.it_value) > 0);
    CHECK_OK(timer_gettime(id, &ts));
    CHECK(ts.it_value.tv_sec > 0);

    char arg[16];
    snprintf(arg, sizeof arg, "%ld", (long)id);
    execl("/proc/self/exe", argv[0], "after-exec", arg, (char *)NULL);
    FAILF("execl: %s", strerror(errno));
}
