/* ptrace_anything: ptrace and process_vm_readv/writev of any process —
 * the sandbox's init, our parent, a child, ourselves — must not give a
 * guest a way to read or write another process's memory behind the
 * sentry's back (the stubs are real host processes that their sentry
 * threads trace). Each attempt fails, and a secret in the parent's memory
 * stays unread and unchanged. Not run natively (as root it succeeds).
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
        char got[64] = {0};
        struct iovec l = {got, sizeof got}, r = {(void *)secret, sizeof secret};
        if (process_vm_readv(parent, &l, 1, &r, 1, 0) != -1 || strstr(got, "secret"))
            bad |= 1;
        char evil[64] = "overwritten";
        struct iovec le = {evil, sizeof evil};
        if (process_vm_writev(parent, &le, 1, &r, 1, 0) != -1)
            bad |= 2;
        if (ptrace(PTRACE_ATTACH, parent, 0, 0) != -1)
            bad |= 4;
        if (ptrace(PTRACE_SEIZE, 1, 0, 0) != -1)
            bad |= 8;
        errno = 0;
        long w = ptrace(PTRACE_PEEKDATA, parent, (void *)secret, 0);
        if (errno == 0 && w != -1)
            bad |= 16;
        _exit(bad);
    }
    int st;
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    CHECK_STR((const char *)secret, "the parent's secret");
    /* PTRACE_TRACEME then exec: the child must not be traced by anyone. */
    kid = CHECK_OK(fork());
    if (kid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) == 0) {
            /* Then a tracer would see this stop; nobody may. */
            raise(SIGSTOP);
        }
        _exit(0);
    }
    CHECK_EQ(waitpid(kid, &st, 0), kid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
