/* ptrace_anything: ptrace and process_vm_readv/writev must not give a
 * guest a way to read or write memory behind the sentry's back (the stubs
 * are real host processes that their sentry threads trace). ptrace is the
 * sentry's emulation, guest-on-guest only: a pid outside the sandbox
 * cannot be named, a user cannot trace root's processes, a process that
 * is not a tracee cannot be peeked, and a TRACEME stop is seen by the
 * parent alone; process_vm_* (the sentry's emulation, guest-on-guest)
 * fail with EPERM for another user. The parent's secret stays unread and
 * unchanged. Not run natively (as root it succeeds).
 */
// native: skip
#include "check.h"
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

static volatile char secret[64] = "the parent's secret";

int main(void) {
    pid_t parent = getpid();
    pid_t kid = CHECK_OK(fork());
    if (kid == 0) {
        int bad = 0;
        /* Pids the sandbox does not have (a host's, a stub's). */
        pid_t outside[] = {99999, 4194303, -1, 0};
        for (unsigned i = 0; i < sizeof outside / sizeof outside[0]; i++)
            if (ptrace(PTRACE_SEIZE, outside[i], 0, 0) != -1 || errno != ESRCH)
                bad |= 4;
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
            bad |= 32;
        /* process_vm_* are the sentry's emulation, with Linux's access
         * check: a process of another user cannot read or write root's. */
        char got[64] = {0};
        struct iovec l = {got, sizeof got}, r = {(void *)secret, sizeof secret};
        if (process_vm_readv(parent, &l, 1, &r, 1, 0) != -1 || errno != EPERM || strstr(got, "secret"))
            bad |= 1;
        char evil[64] = "overwritten";
        struct iovec le = {evil, sizeof evil};
        if (process_vm_writev(parent, &le, 1, &r, 1, 0) != -1 || errno != EPERM)
            bad |= 2;
        if (ptrace(PTRACE_ATTACH, parent, 0, 0) != -1 || errno != EPERM)
            bad |= 8;
        errno = 0;
        long w = ptrace(PTRACE_PEEKDATA, parent, (void *)secret, 0);
        if (errno != ESRCH || w != -1)
            bad |= 16;
        _exit(bad);
    }
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    CHECK_STR((const char *)secret, "the parent's secret");
    /* PTRACE_TRACEME: the child's stop is its parent's to see and end. */
    kid = CHECK_OK(fork());
    if (kid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
            _exit(1);
        raise(SIGSTOP);
        _exit(0);
    }
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    CHECK_EQ(ptrace(PTRACE_CONT, kid, 0, 0), 0);
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
