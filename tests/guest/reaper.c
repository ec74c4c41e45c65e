/* reaper.c — what happens to a process's children when it exits: they
 * are adopted by the nearest subreaper (PR_SET_CHILD_SUBREAPER), which
 * getppid then names, which can wait for them (including ones that had
 * already died) and hears of them by SIGCHLD; a child that asked for a
 * parent-death signal (PR_SET_PDEATHSIG) gets it, from its dying parent;
 * neither setting is inherited by fork. */
#include "check.h"
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

static int report[2];

static void on_pdeath(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    int msg[3] = {sig, si->si_pid, (int)getppid()};
    if (write(report[1], msg, sizeof msg) != sizeof msg)
        _exit(9);
}

/* A middle process that starts one grandchild and exits; returns the
 * grandchild's pid, read from a pipe. `dead_first`: the grandchild exits
 * (with 5) before the middle does. */
static pid_t orphan(int dead_first) {
    int p[2], ready[2];
    CHECK_OK(pipe(p));
    CHECK_OK(pipe(ready));
    pid_t middle = CHECK_OK(fork());
    if (middle == 0) {
        int sub = -1;
        if (prctl(PR_GET_CHILD_SUBREAPER, &sub) != 0 || sub != 0)
            _exit(3);
        pid_t g = fork();
        if (g == 0) {
            if (dead_first)
                _exit(5);
            struct sigaction sa = {0};
            sa.sa_sigaction = on_pdeath;
            sa.sa_flags = SA_SIGINFO;
            sigaction(SIGUSR1, &sa, NULL);
            int got = -1;
            if (prctl(PR_GET_PDEATHSIG, &got) != 0 || got != 0)
                _exit(4);
            prctl(PR_SET_PDEATHSIG, SIGUSR1);
            /* Tell the middle process it may exit, then wait to be
             * signalled. */
            if (write(ready[1], "r", 1) != 1)
                _exit(6);
            for (int i = 0; i < 500; i++)
                usleep(10000);
            _exit(7);
        }
        if (write(p[1], &g, sizeof g) != sizeof g)
            _exit(2);
        char r;
        if (dead_first) {
            /* Let the grandchild die, unreaped (WNOWAIT). */
            siginfo_t si;
            if (waitid(P_PID, (id_t)g, &si, WEXITED | WNOWAIT) != 0)
                _exit(2);
        } else if (read(ready[0], &r, 1) != 1) {
            _exit(2);
        }
        _exit(0);
    }
    pid_t g;
    CHECK_EQ(read(p[0], &g, sizeof g), sizeof g);
    int st;
    CHECK_EQ(waitpid(middle, &st, 0), middle);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(p[0]);
    close(p[1]);
    close(ready[0]);
    close(ready[1]);
    return g;
}

int main(void) {
    CHECK_OK(prctl(PR_SET_CHILD_SUBREAPER, 1));
    int sub = -1;
    CHECK_OK(prctl(PR_GET_CHILD_SUBREAPER, &sub));
    CHECK_EQ(sub, 1);
    CHECK_OK(pipe(report));

    /* A live orphan: adopted by us, signalled by its dying parent. */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    CHECK_OK(sigprocmask(SIG_BLOCK, &chld, NULL));
    pid_t g = orphan(0);
    int msg[3];
    CHECK_EQ(read(report[0], msg, sizeof msg), sizeof msg);
    CHECK_EQ(msg[0], SIGUSR1);
    CHECK(msg[1] != getpid());
    CHECK_EQ(msg[2], getpid());
    CHECK_OK(kill(g, SIGKILL));
    int st;
    CHECK_EQ(waitpid(g, &st, 0), g);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

    /* A dead one: its zombie passes to us, and we hear of it. */
    siginfo_t si;
    struct timespec ts = {0, 0};
    while (sigtimedwait(&chld, &si, &ts) > 0) {
    }
    g = orphan(1);
    struct timespec wait5 = {5, 0};
    int found = 0;
    while (!found && sigtimedwait(&chld, &si, &wait5) == SIGCHLD)
        found = si.si_pid == g;
    CHECK(found);
    CHECK_EQ(si.si_code, CLD_EXITED);
    CHECK_EQ(si.si_status, 5);
    CHECK_EQ(waitpid(g, &st, 0), g);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
    CHECK_ERR(waitpid(-1, &st, WNOHANG), ECHILD);
    puts("reaper: ok");
    return 0;
}
