/* kill_exiting.c — a process that is exiting or a zombie still exists
 * for kill(2): kill(pid, sig) and kill(-pgid, sig) succeed (and do
 * nothing) until its parent reaps it, then fail with ESRCH. Python's
 * multiprocessing and the stress harness kill process groups whose
 * members are ending; an EPERM or ESRCH there is an exception. */
#include "check.h"
#include <signal.h>
#include <sys/wait.h>

int main(void) {
    alarm(60);
    for (int round = 0; round < 200; round++) {
        pid_t c = CHECK_OK(fork());
        if (c == 0) {
            setpgid(0, 0);
            _exit(7);
        }
        CHECK_OK(setpgid(c, c)); /* the child asks for the same group */
        /* Until it is reaped, through its exit and as a zombie, it is
         * there to be signalled, alone in its group. */
        for (;;) {
            CHECK_EQ(kill(c, 0), 0);
            CHECK_EQ(kill(-c, 0), 0);
            siginfo_t si = {0};
            CHECK_OK(waitid(P_PID, c, &si, WEXITED | WNOWAIT | WNOHANG));
            if (si.si_pid == c)
                break;
        }
        CHECK_EQ(kill(c, SIGTERM), 0);
        CHECK_EQ(kill(-c, SIGKILL), 0);
        int st;
        CHECK_EQ(waitpid(c, &st, 0), c);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
        CHECK_ERR(kill(c, 0), ESRCH);
        CHECK_ERR(kill(-c, 0), ESRCH);
    }
    return 0;
}
