/* seccomp_trace.c — SECCOMP_RET_TRACE under a tracer, as Linux 4.8+: with
 * PTRACE_O_TRACESECCOMP the thread stops with PTRACE_EVENT_SECCOMP
 * (GETEVENTMSG and GET_SYSCALL_INFO give the filter's RET_DATA, rax reads
 * -ENOSYS), the tracer may let the call run, change its number or
 * arguments, or skip it (number -1, rax then the result), and a changed
 * call is filtered again (TRACE then allows). PTRACE_SYSCALL puts the
 * seccomp stop between the entry and exit stops; the exit stop comes for
 * a call the policy refused too. Without the option: ENOSYS, no stop. */
#include "check.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/user.h>

#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARG0_OFF offsetof(struct seccomp_data, args[0])
/* The descriptor whose writes are traced (to /dev/null). */
#define TRACED_FD 100

/* RET_DATA values: what the tracer does at each stop. */
enum {
    LET_RUN = 1,      /* getppid: runs unchanged */
    TO_GETPID = 2,    /* getuid: becomes getpid */
    TO_REFUSED = 3,   /* geteuid: becomes getgid, which the filter refuses (EPERM) */
    SKIP_VALUE = 4,   /* gettid: skipped, rax 4242 */
    SKIP_ENOSYS = 5,  /* getpgrp: skipped, rax left as it was (-ENOSYS) */
    SHORTEN = 6,      /* write(TRACED_FD, buf, 10): count becomes 3 */
    TO_TRACED = 7,    /* getegid: becomes getppid, TRACE again: runs, no stop */
};

static void install_filter(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | LET_RUN),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getuid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | TO_GETPID),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_geteuid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | TO_REFUSED),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | SKIP_VALUE),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpgrp, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | SKIP_ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getegid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | TO_TRACED),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getgid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TRACED_FD, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | SHORTEN),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = {.len = sizeof f / sizeof f[0], .filter = f};
    CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    CHECK_OK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p));
}

/* The traced child: each call's result shows what its tracer did. */
static void tracee(pid_t parent, int expect_stops) {
    int null = CHECK_OK(open("/dev/null", O_WRONLY));
    CHECK_EQ(dup2(null, TRACED_FD), TRACED_FD);
    trace_me_and_stop();
    install_filter();
    if (!expect_stops) {
        /* No tracer asked for the event: ENOSYS, nothing ran. */
        CHECK_ERR(syscall(SYS_getppid), ENOSYS);
        CHECK_ERR(syscall(SYS_write, TRACED_FD, "0123456789", 10), ENOSYS);
        _exit(0);
    }
    CHECK_EQ(syscall(SYS_getppid), parent);
    CHECK_EQ(syscall(SYS_getuid), getpid());
    CHECK_ERR(syscall(SYS_geteuid), EPERM);
    CHECK_EQ(syscall(SYS_gettid), 4242);
    CHECK_ERR(syscall(SYS_getpgrp), ENOSYS);
    CHECK_EQ(syscall(SYS_write, TRACED_FD, "0123456789", 10), 3);
    CHECK_EQ(syscall(SYS_getegid), parent);
    _exit(0);
}

static struct user_regs_struct regs_of(pid_t pid) {
    struct user_regs_struct r;
    CHECK_OK(ptrace(PTRACE_GETREGS, pid, 0, &r));
    return r;
}

/* At a seccomp stop of `pid` with RET_DATA `want`: checks what the tracer
 * sees, then does the stop's action. */
static void at_seccomp_stop(pid_t pid, unsigned long want) {
    unsigned long msg = 0;
    CHECK_OK(ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg));
    CHECK_EQ(msg, want);
    struct user_regs_struct r = regs_of(pid);
    CHECK_EQ((long)r.rax, -ENOSYS);
    struct __ptrace_syscall_info info;
    memset(&info, 0, sizeof info);
    long n = CHECK_OK(ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info));
    CHECK_EQ(n, offsetof(struct __ptrace_syscall_info, seccomp.ret_data) + sizeof(info.seccomp.ret_data));
    CHECK_EQ(info.op, PTRACE_SYSCALL_INFO_SECCOMP);
    CHECK_EQ(info.seccomp.nr, r.orig_rax);
    CHECK_EQ(info.seccomp.ret_data, want);
    CHECK_EQ(info.seccomp.args[0], r.rdi);
    switch (want) {
    case LET_RUN:
        CHECK_EQ(r.orig_rax, SYS_getppid);
        return;
    case TO_GETPID:
        r.orig_rax = SYS_getpid;
        break;
    case TO_REFUSED:
        r.orig_rax = SYS_getgid;
        break;
    case SKIP_VALUE:
        r.orig_rax = -1;
        r.rax = 4242;
        break;
    case SKIP_ENOSYS:
        CHECK_OK(ptrace(PTRACE_POKEUSER, pid, offsetof(struct user_regs_struct, orig_rax), -1L));
        return;
    case SHORTEN:
        CHECK_EQ(r.orig_rax, SYS_write);
        CHECK_EQ(r.rdx, 10);
        r.rdx = 3;
        break;
    case TO_TRACED:
        r.orig_rax = SYS_getppid;
        break;
    default:
        FAILF("unexpected RET_DATA %lu", want);
    }
    CHECK_OK(ptrace(PTRACE_SETREGS, pid, 0, &r));
}

/* Traces a child through the calls of `tracee`, resuming with PTRACE_CONT
 * (seccomp stops only) or PTRACE_SYSCALL (entry, seccomp, exit). */
static void run_traced(int syscall_stops) {
    pid_t parent = getpid();
    pid_t pid = CHECK_OK(fork());
    if (pid == 0)
        tracee(parent, 1);
    int st = wait_stop(pid);
    CHECK_EQ(WSTOPSIG(st), SIGSTOP);
    CHECK_OK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD));
    int req = syscall_stops ? PTRACE_SYSCALL : PTRACE_CONT;
    CHECK_OK(ptrace(req, pid, 0, 0));
    unsigned long next = LET_RUN;
    /* With syscall stops, where the tracee is: 0 outside a call, 1 after
     * its entry stop, 2 after its seccomp stop. */
    int phase = 0;
    for (;;) {
        CHECK_EQ(waitpid(pid, &st, __WALL), pid);
        if (WIFEXITED(st)) {
            CHECK_EQ(WEXITSTATUS(st), 0);
            break;
        }
        CHECK(WIFSTOPPED(st));
        int what = st >> 8;
        if (what == (SIGTRAP | (PTRACE_EVENT_SECCOMP << 8))) {
            if (syscall_stops)
                CHECK_EQ(phase, 1);
            phase = 2;
            at_seccomp_stop(pid, next++);
        } else if (what == (SIGTRAP | 0x80)) {
            CHECK(syscall_stops);
            struct __ptrace_syscall_info info;
            CHECK_OK(ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info));
            if (info.op == PTRACE_SYSCALL_INFO_ENTRY) {
                CHECK_EQ(phase, 0);
                phase = 1;
            } else {
                CHECK_EQ(info.op, PTRACE_SYSCALL_INFO_EXIT);
                /* A refused call (TO_REFUSED's getgid) exits with its
                 * error, a skipped one with the tracer's value. */
                if (phase == 2 && next - 1 == TO_REFUSED)
                    CHECK_EQ(info.exit.rval, -EPERM);
                if (phase == 2 && next - 1 == SKIP_VALUE)
                    CHECK_EQ(info.exit.rval, 4242);
                phase = 0;
            }
        } else {
            FAILF("unexpected stop %#x", st);
        }
        CHECK_OK(ptrace(req, pid, 0, 0));
    }
    CHECK_EQ(next, TO_TRACED + 1);
}

/* A tracer without PTRACE_O_TRACESECCOMP: TRACE fails with ENOSYS. */
static void without_the_option(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0)
        tracee(getppid(), 0);
    wait_stop(pid);
    CHECK_OK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD));
    CHECK_OK(ptrace(PTRACE_CONT, pid, 0, 0));
    int st;
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAILF("child status %#x", st);
}

/* PTRACE_SEIZE takes the option too. */
static void seize_accepts_the_option(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        pause();
        _exit(0);
    }
    CHECK_OK(ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESECCOMP));
    CHECK_OK(kill(pid, SIGKILL));
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
}

int main(void) {
    run_traced(0);
    run_traced(1);
    without_the_option();
    seize_accepts_the_option();
    puts("seccomp_trace: ok");
    return 0;
}
