/* bad_register_state: register states the host refuses to load must
 * become the errno or signal Linux gives, never a platform failure
 * (`PTRACE_SETREGS: Input/output error` ended the whole sandbox).
 * - arch_prctl(ARCH_SET_FS/GS) with a base outside user space: EPERM;
 * - clone(CLONE_SETTLS) with such a base: EPERM, no child;
 * - rt_sigreturn of a frame whose xstate header (XSTATE_BV) is garbage,
 *   or whose MXCSR has a reserved bit: the process dies of SIGSEGV.
 * Afterwards the sandbox still runs processes.
 */
#include "check.h"
#include <asm/prctl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>

static int corrupt; /* 1: XSTATE_BV, 2: MXCSR, 3: drop the xstate magic */

static void handler(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    ucontext_t *uc = ctx;
    unsigned char *fp = (unsigned char *)uc->uc_mcontext.fpregs;
    if (corrupt == 1)
        memset(fp + 512, 0xff, 8); /* every XSTATE_BV bit, reserved ones too */
    else if (corrupt == 2)
        *(uint32_t *)(fp + 24) |= 0x80000000u; /* a reserved MXCSR bit */
    else
        memset(fp + 464, 0, 48); /* no FP_XSTATE_MAGIC1: legacy area only */
}

/* Returns the child's wait status after it raises a signal whose handler
 * corrupts the frame with `how`. */
static int run(int how) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        corrupt = how;
        struct sigaction sa = {0};
        sa.sa_sigaction = handler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGUSR1, &sa, NULL);
        raise(SIGUSR1);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    return st;
}

static char stack[65536];
static int child_fn(void *arg) {
    (void)arg;
    return 0;
}

int main(void) {
    unsigned long bad = 0x800000000000UL;
    CHECK_ERR(syscall(SYS_arch_prctl, ARCH_SET_FS, bad), EPERM);
    CHECK_ERR(syscall(SYS_arch_prctl, ARCH_SET_GS, 0xffff800000000000UL), EPERM);
    int flags = CLONE_SETTLS | SIGCHLD;
    CHECK_ERR(clone(child_fn, stack + sizeof stack, flags, NULL, NULL, (void *)bad, NULL), EPERM);
    CHECK_ERR(waitpid(-1, NULL, WNOHANG), ECHILD);

    int st = run(1);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    st = run(2);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    st = run(3);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
