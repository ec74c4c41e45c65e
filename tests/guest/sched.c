/* sched.c — nice values and scheduling policies: getpriority/setpriority
 * (clamping, inheritance, errors, /proc/self/stat's nice field), and the
 * SCHED_OTHER policy's parameters. */
#include "check.h"
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* Field 19 of /proc/self/stat: the nice value. */
static int proc_nice(void) {
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    CHECK(f != NULL);
    CHECK(fgets(buf, sizeof buf, f) != NULL);
    fclose(f);
    char *p = strrchr(buf, ')');
    CHECK(p != NULL);
    int field = 2;
    for (; *p && field < 19; p++) {
        if (*p == ' ') {
            field++;
        }
    }
    return atoi(p);
}

int main(void) {
    errno = 0;
    CHECK_EQ(getpriority(PRIO_PROCESS, 0), 0);
    CHECK_EQ(errno, 0);
    CHECK_OK(setpriority(PRIO_PROCESS, 0, 5));
    CHECK_EQ(getpriority(PRIO_PROCESS, 0), 5);
    CHECK_EQ(getpriority(PRIO_PROCESS, getpid()), 5);
    CHECK_EQ(proc_nice(), 5);
    CHECK_OK(setpriority(PRIO_PROCESS, 0, 100));
    CHECK_EQ(getpriority(PRIO_PROCESS, 0), 19);
    CHECK_OK(setpriority(PRIO_PGRP, 0, 19));
    CHECK_EQ(getpriority(PRIO_PGRP, 0), 19);
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        /* Children inherit the nice value. */
        _exit(getpriority(PRIO_PROCESS, 0) == 19 ? 0 : 1);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (geteuid() == 0) {
        /* Raising priority needs CAP_SYS_NICE, which root holds. */
        CHECK_OK(setpriority(PRIO_PROCESS, 0, -3));
        CHECK_EQ(getpriority(PRIO_PROCESS, 0), -3);
        CHECK_OK(setpriority(PRIO_PROCESS, 0, 0));
    }
    errno = 0;
    CHECK_ERR(getpriority(PRIO_PROCESS, 999999), ESRCH);
    CHECK_ERR(getpriority(7, 0), EINVAL);
    CHECK_ERR(setpriority(7, 0, 0), EINVAL);

    CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
    CHECK_EQ(sched_get_priority_max(SCHED_FIFO), 99);
    CHECK_EQ(sched_get_priority_min(SCHED_RR), 1);
    CHECK_EQ(sched_get_priority_max(SCHED_OTHER), 0);
    CHECK_EQ(sched_get_priority_min(SCHED_BATCH), 0);
    CHECK_ERR(sched_get_priority_max(42), EINVAL);
    struct sched_param sp = {.sched_priority = 7};
    CHECK_OK(sched_getparam(0, &sp));
    CHECK_EQ(sp.sched_priority, 0);
    CHECK_OK(sched_setscheduler(0, SCHED_OTHER, &sp));
    CHECK_OK(sched_setparam(0, &sp));
    sp.sched_priority = 1;
    CHECK_ERR(sched_setscheduler(0, SCHED_OTHER, &sp), EINVAL);
    sp.sched_priority = 0;
    CHECK_ERR(sched_setscheduler(0, SCHED_FIFO, &sp), EINVAL);
    CHECK_ERR(sched_setscheduler(0, 42, &sp), EINVAL);
    CHECK_ERR(sched_getscheduler(-1), EINVAL);
    CHECK_ERR(sched_getscheduler(999999), ESRCH);
    return 0;
}
