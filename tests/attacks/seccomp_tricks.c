/* seccomp_tricks: a guest's own seccomp filters must never land on the
 * sentry or a stub (a filter that kills every call would then take the
 * sandbox down, or one that allows what the sentry's filter forbids
 * would widen it). Whatever the sandbox does with them — serve them for
 * the guest, or refuse them as unsupported — the guest keeps running,
 * other processes of the sandbox are unaffected, and the sandbox exits
 * with the guest's status. Not run natively: a filter that kills every
 * call would end the test there by design.
 */
// native: skip
#include "check.h"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

int main(void) {
    /* A filter that kills on every system call but exit_group. */
    struct sock_filter kill_all[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {sizeof kill_all / sizeof *kill_all, kill_all};
    pid_t kid = CHECK_OK(fork());
    if (kid == 0) {
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
        /* Applied: this getpid kills us (SIGSYS); refused: we exit 3. */
        syscall(SYS_getpid);
        _exit(r == 0 ? 4 : 3);
    }
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK((WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) || (WIFEXITED(st) && WEXITSTATUS(st) == 3));
    /* Garbage filters and modes. */
    struct sock_fprog bad = {0xffff, (struct sock_filter *)0x1000};
    CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &bad) == -1);
    CHECK(syscall(SYS_seccomp, 99, 0, NULL) == -1);
    CHECK(prctl(PR_SET_SECCOMP, 99, 0, 0, 0) == -1);
    /* Strict mode in a child: only read, write, exit and sigreturn remain. */
    kid = CHECK_OK(fork());
    if (kid == 0) {
        long r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
        syscall(SYS_getppid);
        syscall(SYS_exit, r == 0 ? 4 : 3);
    }
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) || (WIFEXITED(st) && WEXITSTATUS(st) == 3));
    /* We, and the sandbox, go on. */
    CHECK(getpid() > 0);
    kid = CHECK_OK(fork());
    if (kid == 0)
        _exit(9);
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 9);
    return 0;
}
