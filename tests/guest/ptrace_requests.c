/* ptrace_requests.c — the ptrace requests a debugger uses beyond
 * ptrace.c: PTRACE_SINGLESTEP (each step a SIGTRAP stop, rip one
 * instruction further along a nop sled), PTRACE_GETFPREGS and GETREGSET
 * NT_PRFPREG reading back an xmm register the tracee set and SETFPREGS
 * changing one it reads, PTRACE_O_TRACECLONE (the new thread attached,
 * PTRACE_EVENT_CLONE with its tid) and PTRACE_O_TRACEEXEC (the
 * PTRACE_EVENT_EXEC stop and no extra SIGTRAP). x86-64 only. */
#include "check.h"
#include <elf.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

/* Eight one-byte nops and a jump back: stepping from `sled` moves rip
 * by exactly one byte per step. */
extern char sled[];
__asm__(".text\n"
        ".globl sled\n"
        "sled:\n"
        "nop; nop; nop; nop; nop; nop; nop; nop\n"
        "jmp sled\n");

static void wait_exit(pid_t pid, int code) {
    int st;
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != code)
        FAILF("pid %d: status %#x, want exit %d", pid, st, code);
}

static void kill_tracee(pid_t pid) {
    int st;
    CHECK_EQ(kill(pid, SIGKILL), 0);
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static pid_t traced_child(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        trace_me_and_stop();
        for (;;)
            pause();
    }
    CHECK_EQ(WSTOPSIG(wait_stop(pid)), SIGSTOP);
    return pid;
}

static void singlestep(void) {
    pid_t pid = traced_child();
    struct user_regs_struct r;
    CHECK_EQ(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
    r.rip = (unsigned long)sled;
    CHECK_EQ(ptrace(PTRACE_SETREGS, pid, 0, &r), 0);
    for (int i = 1; i <= 5; i++) {
        CHECK_EQ(ptrace(PTRACE_SINGLESTEP, pid, 0, 0), 0);
        int st = wait_stop(pid);
        CHECK_EQ(WSTOPSIG(st), SIGTRAP);
        CHECK_EQ(st >> 16, 0);
        siginfo_t si;
        CHECK_EQ(ptrace(PTRACE_GETSIGINFO, pid, 0, &si), 0);
        CHECK_EQ(si.si_signo, SIGTRAP);
        CHECK_EQ(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
        CHECK_EQ(r.rip, (unsigned long)sled + i);
    }
    kill_tracee(pid);
}

static const uint32_t set_pattern[4] = {0x11223344, 0x55667788, 0x99aabbcc, 0xddeeff00};
static const uint32_t poke_pattern[4] = {0xcafef00d, 0x0badc0de, 0xfeedface, 0x12345678};

/* The child loads xmm5, stops itself with a raw kill (no libc call in
 * between to clobber it), then reports whether xmm6 holds what the tracer
 * wrote there. */
static void fp_child(void) {
    uint32_t got[4];
    long pid = getpid();
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
        _exit(90);
    __asm__ volatile("movdqu %[in], %%xmm5\n\t"
                     "pxor %%xmm6, %%xmm6\n\t"
                     "mov $62, %%eax\n\t"
                     "syscall\n\t"
                     "movdqu %%xmm6, %[out]\n\t"
                     : [out] "=m"(got)
                     : [in] "m"(set_pattern), "D"(pid), "S"((long)SIGSTOP)
                     : "rax", "rcx", "r11", "xmm5", "xmm6", "memory");
    _exit(memcmp(got, poke_pattern, sizeof got) == 0 ? 0 : 91);
}

static void fpregs(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0)
        fp_child();
    CHECK_EQ(WSTOPSIG(wait_stop(pid)), SIGSTOP);
    struct user_fpregs_struct fp;
    memset(&fp, 0, sizeof fp);
    CHECK_EQ(ptrace(PTRACE_GETFPREGS, pid, 0, &fp), 0);
    CHECK(memcmp(&fp.xmm_space[5 * 4], set_pattern, 16) == 0);
    CHECK_EQ(fp.xmm_space[6 * 4], 0);

    struct user_fpregs_struct fp2;
    memset(&fp2, 0xff, sizeof fp2);
    struct iovec iov = {&fp2, sizeof fp2};
    CHECK_EQ(ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRFPREG, &iov), 0);
    CHECK_EQ(iov.iov_len, sizeof fp2);
    CHECK(memcmp(&fp2.xmm_space[5 * 4], set_pattern, 16) == 0);
    CHECK_EQ(fp2.cwd, fp.cwd);
    CHECK_EQ(fp2.mxcsr, fp.mxcsr);

    memcpy(&fp.xmm_space[6 * 4], poke_pattern, 16);
    CHECK_EQ(ptrace(PTRACE_SETFPREGS, pid, 0, &fp), 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    wait_exit(pid, 0);
}

static void *thread_body(void *arg) {
    (void)arg;
    return (void *)(long)syscall(SYS_gettid);
}

static void trace_clone(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        trace_me_and_stop();
        pthread_t t;
        if (pthread_create(&t, NULL, thread_body, NULL) != 0)
            _exit(91);
        void *ret;
        if (pthread_join(t, &ret) != 0)
            _exit(92);
        _exit((long)ret > 0 && (long)ret != getpid() ? 0 : 93);
    }
    CHECK_EQ(WSTOPSIG(wait_stop(pid)), SIGSTOP);
    CHECK_EQ(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE), 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    int st = wait_stop(pid);
    CHECK_EQ(st >> 8, SIGTRAP | (PTRACE_EVENT_CLONE << 8));
    unsigned long tid = 0;
    CHECK_EQ(ptrace(PTRACE_GETEVENTMSG, pid, 0, &tid), 0);
    CHECK(tid > 0 && tid != (unsigned long)pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%lu", pid, tid);
    CHECK_OK(access(path, F_OK));
    /* The new thread is traced from its start: it stops with SIGSTOP. */
    st = wait_stop((pid_t)tid);
    CHECK_EQ(WSTOPSIG(st), SIGSTOP);
    CHECK_EQ(st >> 16, 0);
    CHECK_EQ(ptrace(PTRACE_CONT, (pid_t)tid, 0, 0), 0);
    CHECK_EQ(waitpid((pid_t)tid, &st, __WALL), (pid_t)tid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    wait_exit(pid, 0);
}

static void trace_exec(const char *self) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        trace_me_and_stop();
        execl(self, self, "exit7", (char *)NULL);
        _exit(92);
    }
    CHECK_EQ(WSTOPSIG(wait_stop(pid)), SIGSTOP);
    CHECK_EQ(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXEC), 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    int st = wait_stop(pid);
    CHECK_EQ(st >> 8, SIGTRAP | (PTRACE_EVENT_EXEC << 8));
    unsigned long former = 0;
    CHECK_EQ(ptrace(PTRACE_GETEVENTMSG, pid, 0, &former), 0);
    CHECK_EQ(former, (unsigned long)pid);
    /* With TRACEEXEC the legacy post-exec SIGTRAP is not sent: the next
     * thing the tracer sees is the exit. */
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    wait_exit(pid, 7);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exit7") == 0)
        return 7;
    CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    singlestep();
    fpregs();
    trace_clone();
    trace_exec(argv[0]);
    puts("ptrace_requests ok");
    return 0;
}
