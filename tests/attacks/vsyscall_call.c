/* vsyscall_call: calling into the legacy vsyscall page (which the host
 * kernel emulates without a system-call stop) killed the ptrace stub with
 * its own seccomp filter and ended the sandbox with a platform failure.
 * Where the host emulates vsyscalls, time() and gettimeofday() there work
 * as in Linux; where it does not (vsyscall=none), the call faults
 * (SIGSEGV) in a child. The sandbox survives either way.
 */
#include "check.h"
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

typedef long (*vtime_fn)(long *);
typedef int (*vgtod_fn)(struct timeval *, void *);
typedef long (*vgetcpu_fn)(unsigned *, unsigned *, void *);

int main(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        long t = ((vtime_fn)0xffffffffff600400UL)(NULL);
        struct timeval tv;
        int r = ((vgtod_fn)0xffffffffff600000UL)(&tv, NULL);
        unsigned cpu = 999;
        long g = ((vgetcpu_fn)0xffffffffff600800UL)(&cpu, NULL, NULL);
        long now = time(NULL);
        if (r != 0 || g != 0 || cpu >= 4096)
            _exit(2);
        if (t < now - 5 || t > now + 5 || tv.tv_sec < now - 5 || tv.tv_sec > now + 5)
            _exit(3);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0) || (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV));
    /* Still alive: another process runs. */
    pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(7);
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    return 0;
}
