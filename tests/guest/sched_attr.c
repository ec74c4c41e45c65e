/* sched_attr.c — scheduling policies and I/O priorities as Linux:
 * sched_setattr/sched_getattr (struct sched_attr's size protocol, E2BIG
 * with the kernel's size written back, policies OTHER, BATCH, IDLE, FIFO,
 * RR with their priority ranges, the nice value, RESET_ON_FORK across
 * fork), the privilege rules for an unprivileged caller (real-time and
 * lower nice values need CAP_SYS_NICE or RLIMIT_RTPRIO/RLIMIT_NICE,
 * leaving SCHED_IDLE likewise, another user's threads EPERM), and
 * ioprio_get/ioprio_set (classes, IOPRIO_WHO_*, EPERM for the RT class). */
#include "check.h"
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

#define FLAG_RESET_ON_FORK 0x01
#define FLAG_KEEP_POLICY 0x08
#define FLAG_KEEP_PARAMS 0x10

static long setattr(pid_t pid, struct attr *a, unsigned flags) { return syscall(SYS_sched_setattr, pid, a, flags); }
static long getattr(pid_t pid, struct attr *a, unsigned size, unsigned flags) {
    return syscall(SYS_sched_getattr, pid, a, size, flags);
}

static struct attr make(uint32_t policy, int nice, uint32_t prio) {
    struct attr a;
    memset(&a, 0, sizeof a);
    a.size = 48;
    a.policy = policy;
    a.nice = nice;
    a.priority = prio;
    return a;
}

static struct attr current(pid_t pid) {
    struct attr a;
    memset(&a, 0xff, sizeof a);
    CHECK_OK(getattr(pid, &a, sizeof a, 0));
    return a;
}

static int wait_status(pid_t pid) {
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void check_sizes(void) {
    struct attr a = current(0);
    CHECK_EQ(a.size, 56);
    CHECK_EQ(a.policy, SCHED_OTHER);
    CHECK_EQ(a.priority, 0);
    /* A short buffer gets the first 48 bytes, size 48. */
    char buf[64];
    memset(buf, 0x55, sizeof buf);
    CHECK_OK(getattr(0, (struct attr *)buf, 48, 0));
    CHECK_EQ(((struct attr *)buf)->size, 48);
    CHECK_EQ((unsigned char)buf[48], 0x55);
    CHECK_ERR(getattr(0, &a, 47, 0), EINVAL);
    CHECK_ERR(getattr(0, &a, 4097, 0), EINVAL);
    CHECK_ERR(getattr(0, &a, sizeof a, 1), EINVAL);
    CHECK_ERR(getattr(-1, &a, sizeof a, 0), EINVAL);
    CHECK_ERR(getattr(0, NULL, sizeof a, 0), EINVAL);
    CHECK_ERR(getattr(0x3fffffff, &a, sizeof a, 0), ESRCH);
    CHECK_ERR(getattr(0, (struct attr *)8, sizeof a, 0), EFAULT);

    /* setattr's size: 0 means 48; below 48 or above a page is E2BIG with
     * the kernel's size written back; a larger struct with non-zero
     * bytes past ours is E2BIG, with zeros it is fine. */
    struct attr s = make(SCHED_OTHER, 0, 0);
    s.size = 0;
    CHECK_OK(setattr(0, &s, 0));
    s.size = 20;
    CHECK_ERR(setattr(0, &s, 0), E2BIG);
    CHECK_EQ(s.size, 56);
    s.size = 8192;
    CHECK_ERR(setattr(0, &s, 0), E2BIG);
    CHECK_EQ(s.size, 56);
    struct {
        struct attr a;
        uint64_t extra;
    } big;
    memset(&big, 0, sizeof big);
    big.a.size = sizeof big;
    CHECK_OK(setattr(0, &big.a, 0));
    big.extra = 1;
    CHECK_ERR(setattr(0, &big.a, 0), E2BIG);
    CHECK_EQ(big.a.size, 56);
    s = make(SCHED_OTHER, 0, 0);
    CHECK_ERR(setattr(0, &s, 1), EINVAL);
    CHECK_ERR(setattr(-1, &s, 0), EINVAL);
    CHECK_ERR(setattr(0, NULL, 0), EINVAL);
    CHECK_ERR(setattr(0x3fffffff, &s, 0), ESRCH);
    CHECK_ERR(setattr(0, (struct attr *)8, 0), EFAULT);
}

static void check_policies(void) {
    struct attr s = make(SCHED_BATCH, 3, 0);
    CHECK_OK(setattr(0, &s, 0));
    struct attr a = current(0);
    CHECK_EQ(a.policy, SCHED_BATCH);
    CHECK_EQ(a.nice, 3);
    CHECK_EQ(sched_getscheduler(0), SCHED_BATCH);
    CHECK_EQ(getpriority(PRIO_PROCESS, 0), 3);
    /* Nice values are clamped. */
    s = make(SCHED_OTHER, 100, 0);
    CHECK_OK(setattr(0, &s, 0));
    CHECK_EQ(current(0).nice, 19);
    /* Priority ranges: 0 for the normal policies, 1..99 for FIFO and RR. */
    s = make(SCHED_OTHER, 0, 1);
    CHECK_ERR(setattr(0, &s, 0), EINVAL);
    s = make(SCHED_FIFO, 0, 0);
    CHECK_ERR(setattr(0, &s, 0), EINVAL);
    s = make(SCHED_RR, 0, 100);
    CHECK_ERR(setattr(0, &s, 0), EINVAL);
    s = make(4, 0, 0); /* no policy 4 */
    CHECK_ERR(setattr(0, &s, 0), EINVAL);
    s = make(SCHED_OTHER, 0, 0);
    s.flags = 0x80; /* no such flag */
    CHECK_ERR(setattr(0, &s, 0), EINVAL);

    if (geteuid() != 0)
        return;
    /* Privileged: real-time policies. */
    s = make(SCHED_FIFO, 0, 10);
    CHECK_OK(setattr(0, &s, 0));
    a = current(0);
    CHECK_EQ(a.policy, SCHED_FIFO);
    CHECK_EQ(a.priority, 10);
    CHECK_EQ(sched_getscheduler(0), SCHED_FIFO);
    struct sched_param p = {.sched_priority = -1};
    CHECK_OK(sched_getparam(0, &p));
    CHECK_EQ(p.sched_priority, 10);
    p.sched_priority = 20;
    CHECK_OK(sched_setparam(0, &p));
    CHECK_EQ(current(0).priority, 20);
    CHECK_EQ(sched_getscheduler(0), SCHED_FIFO);
    p.sched_priority = 5;
    CHECK_OK(sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &p));
    CHECK_EQ(sched_getscheduler(0), SCHED_RR | SCHED_RESET_ON_FORK);
    a = current(0);
    CHECK_EQ(a.flags & FLAG_RESET_ON_FORK, FLAG_RESET_ON_FORK);
    struct timespec ts;
    CHECK_OK(sched_rr_get_interval(0, &ts));
    CHECK(ts.tv_sec > 0 || ts.tv_nsec > 0);
    /* KEEP_POLICY changes only the priority. */
    s = make(SCHED_OTHER, 0, 7);
    s.flags = FLAG_KEEP_POLICY | FLAG_RESET_ON_FORK;
    CHECK_OK(setattr(0, &s, 0));
    a = current(0);
    CHECK_EQ(a.policy, SCHED_RR);
    CHECK_EQ(a.priority, 7);
    /* A child of a reset-on-fork real-time thread starts normal. */
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        struct attr c = current(0);
        _exit(c.policy == SCHED_OTHER && c.priority == 0 && c.nice == 0 && (c.flags & FLAG_RESET_ON_FORK) == 0
                  ? 0
                  : 1);
    }
    CHECK_EQ(wait_status(pid), 0);
    /* Without reset-on-fork the child inherits the policy. */
    s = make(SCHED_FIFO, 0, 3);
    CHECK_OK(setattr(0, &s, 0));
    pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(sched_getscheduler(0) == SCHED_FIFO && current(0).priority == 3 ? 0 : 1);
    CHECK_EQ(wait_status(pid), 0);
    /* KEEP_PARAMS: Linux then leaves the policy and its parameters as
     * they are and changes only the reset-on-fork flag. */
    s = make(SCHED_RR, 0, 0);
    s.flags = FLAG_KEEP_PARAMS | FLAG_RESET_ON_FORK;
    CHECK_OK(setattr(0, &s, 0));
    a = current(0);
    CHECK_EQ(a.policy, SCHED_FIFO);
    CHECK_EQ(a.priority, 3);
    CHECK_EQ(sched_getscheduler(0), SCHED_FIFO | SCHED_RESET_ON_FORK);
    s = make(SCHED_OTHER, -5, 0);
    CHECK_OK(setattr(0, &s, 0));
    CHECK_EQ(current(0).nice, -5);
    CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
    s = make(SCHED_OTHER, 0, 0);
    CHECK_OK(setattr(0, &s, 0));
}

/* An unprivileged process (RLIMIT_RTPRIO and RLIMIT_NICE 0). */
static void check_unprivileged(void) {
    if (geteuid() != 0)
        return;
    pid_t root_pid = getpid();
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        struct rlimit zero = {0, 0};
        CHECK_OK(setrlimit(RLIMIT_RTPRIO, &zero));
        CHECK_OK(setrlimit(RLIMIT_NICE, &zero));
        CHECK_OK(setresuid(65534, 65534, 65534));
        struct attr s = make(SCHED_FIFO, 0, 1);
        CHECK_ERR(setattr(0, &s, 0), EPERM);
        struct sched_param p = {.sched_priority = 1};
        CHECK_ERR(sched_setscheduler(0, SCHED_RR, &p), EPERM);
        s = make(SCHED_OTHER, 5, 0);
        CHECK_OK(setattr(0, &s, 0));
        s = make(SCHED_OTHER, 2, 0); /* a lower nice value */
        CHECK_ERR(setattr(0, &s, 0), EPERM);
        s = make(SCHED_BATCH, 6, 0);
        CHECK_OK(setattr(0, &s, 0));
        s = make(SCHED_IDLE, 6, 0);
        CHECK_OK(setattr(0, &s, 0));
        CHECK_EQ(sched_getscheduler(0), SCHED_IDLE);
        /* Leaving SCHED_IDLE needs RLIMIT_NICE to allow the nice value. */
        s = make(SCHED_OTHER, 6, 0);
        CHECK_ERR(setattr(0, &s, 0), EPERM);
        /* Another user's process. */
        s = make(SCHED_OTHER, 0, 0);
        CHECK_ERR(setattr(root_pid, &s, 0), EPERM);
        /* The class RT of I/O priorities. */
        CHECK_ERR(syscall(SYS_ioprio_set, 1, 0, (1 << 13) | 4), EPERM);
        CHECK_OK(syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 4));
        CHECK_ERR(syscall(SYS_ioprio_set, 1, root_pid, (2 << 13) | 4), EPERM);
        _exit(0);
    }
    CHECK_EQ(wait_status(pid), 0);
}

static void check_ioprio(void) {
    enum { WHO_PROCESS = 1, WHO_PGRP, WHO_USER };
    const int BE = 2 << 13, IDLE = 3 << 13, RT = 1 << 13;
    CHECK_EQ(syscall(SYS_ioprio_get, WHO_PROCESS, 0), 0);
    CHECK_OK(syscall(SYS_ioprio_set, WHO_PROCESS, 0, BE | 6));
    CHECK_EQ(syscall(SYS_ioprio_get, WHO_PROCESS, 0), BE | 6);
    CHECK_EQ(syscall(SYS_ioprio_get, WHO_PROCESS, getpid()), BE | 6);
    CHECK_OK(syscall(SYS_ioprio_set, WHO_PROCESS, 0, IDLE));
    CHECK_EQ(syscall(SYS_ioprio_get, WHO_PROCESS, 0), IDLE);
    CHECK_ERR(syscall(SYS_ioprio_set, WHO_PROCESS, 0, 1), EINVAL);      /* NONE with a level */
    CHECK_ERR(syscall(SYS_ioprio_set, WHO_PROCESS, 0, 4 << 13), EINVAL); /* no class 4 */
    CHECK_ERR(syscall(SYS_ioprio_set, 4, 0, BE), EINVAL);
    CHECK_ERR(syscall(SYS_ioprio_set, 0, 0, BE), EINVAL);
    CHECK_ERR(syscall(SYS_ioprio_get, 4, 0), EINVAL);
    CHECK_ERR(syscall(SYS_ioprio_get, WHO_PROCESS, 0x3fffffff), ESRCH);
    CHECK_ERR(syscall(SYS_ioprio_set, WHO_PROCESS, 0x3fffffff, BE), ESRCH);
    CHECK_ERR(syscall(SYS_ioprio_get, WHO_PGRP, 0x3fffffff), ESRCH);
    /* Children inherit it. */
    CHECK_OK(syscall(SYS_ioprio_set, WHO_PROCESS, 0, BE | 1));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(syscall(SYS_ioprio_get, WHO_PROCESS, 0) == (BE | 1) ? 0 : 1);
    CHECK_EQ(wait_status(pid), 0);
    /* A process group of its own: the group form sees our value; unset
     * (class NONE) it reports the class and level the nice value implies. */
    pid = CHECK_OK(fork());
    if (pid == 0) {
        CHECK_OK(setpgid(0, 0));
        if (syscall(SYS_ioprio_get, WHO_PGRP, 0) != (BE | 1))
            _exit(1);
        CHECK_OK(syscall(SYS_ioprio_set, WHO_PROCESS, 0, 0));
        CHECK_OK(setpriority(PRIO_PROCESS, 0, 5));
        if (syscall(SYS_ioprio_get, WHO_PGRP, 0) != (BE | 5))
            _exit(2);
        if (syscall(SYS_ioprio_get, WHO_PROCESS, 0) != 0)
            _exit(3);
        CHECK_OK(syscall(SYS_ioprio_set, WHO_PGRP, 0, BE | 2));
        if (syscall(SYS_ioprio_get, WHO_PROCESS, 0) != (BE | 2))
            _exit(4);
        _exit(0);
    }
    CHECK_EQ(wait_status(pid), 0);
    if (geteuid() == 0) {
        CHECK_OK(syscall(SYS_ioprio_set, WHO_PROCESS, 0, RT | 3));
        CHECK_EQ(syscall(SYS_ioprio_get, WHO_PROCESS, 0), RT | 3);
        CHECK(syscall(SYS_ioprio_get, WHO_USER, 0) >= 0);
    }
    CHECK_OK(syscall(SYS_ioprio_set, WHO_PROCESS, 0, 0));
}

int main(void) {
    check_sizes();
    check_policies();
    check_unprivileged();
    check_ioprio();
    return 0;
}
