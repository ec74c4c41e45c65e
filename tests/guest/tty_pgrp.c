/* tty_pgrp.c — job control of a terminal's ioctls, as Linux's
 * tty_check_change: TIOCGPGRP answers a background group; TIOCSPGRP from
 * one stops it with SIGTTOU (restarted once continued), is interrupted
 * (EINTR) when SIGTTOU is caught without SA_RESTART, goes through when
 * SIGTTOU is blocked or ignored, and fails with ENOTTY (tcsetattr with
 * EIO) from an orphaned group. TIOCSPGRP refuses an unknown group
 * (ESRCH), a group of another session (EPERM), a negative one (EINVAL);
 * both refuse a terminal that is not the caller's (ENOTTY). */
#include "check.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>

static volatile sig_atomic_t caught;

static void on_ttou(int sig) {
    (void)sig;
    caught++;
}

static int open_master(char *name, size_t len) {
    int m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
    CHECK_OK(grantpt(m));
    CHECK_OK(unlockpt(m));
    CHECK_EQ(ptsname_r(m, name, len), 0);
    return m;
}

/* In a background group of the session of terminal `s`. */
static void background(int s) {
    CHECK_OK(setpgid(0, 0));
    pid_t me = getpgrp();
    CHECK_EQ(tcgetpgrp(s), getppid());

    struct sigaction sa = {0};
    sa.sa_handler = on_ttou;
    CHECK_OK(sigaction(SIGTTOU, &sa, NULL));
    CHECK_ERR(tcsetpgrp(s, me), EINTR);
    CHECK_EQ(caught, 1);
    CHECK_EQ(tcgetpgrp(s), getppid());

    sigset_t ttou;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    CHECK_OK(sigprocmask(SIG_BLOCK, &ttou, NULL));
    CHECK_OK(tcsetpgrp(s, me));
    CHECK_EQ(tcgetpgrp(s), me);
    CHECK_OK(tcsetpgrp(s, getppid())); /* from the foreground */
    CHECK_OK(sigprocmask(SIG_UNBLOCK, &ttou, NULL));
    CHECK_EQ(caught, 1);

    signal(SIGTTOU, SIG_IGN);
    CHECK_OK(tcsetpgrp(s, me));
    CHECK_EQ(tcgetpgrp(s), me);
    CHECK_OK(tcsetpgrp(s, getppid()));

    /* Stopped here; the leader makes this group the foreground and
     * continues it, and the call then succeeds. */
    signal(SIGTTOU, SIG_DFL);
    CHECK_OK(tcsetpgrp(s, me));
    CHECK_EQ(tcgetpgrp(s), me);
}

/* In a group orphaned by its leader's exit, reporting on `out`. */
static void orphaned(int s, int out, pid_t parent) {
    for (int i = 0; i < 500 && getppid() == parent; i++)
        usleep(10000);
    CHECK(getppid() != parent);
    signal(SIGTTOU, SIG_DFL);
    CHECK_ERR(tcsetpgrp(s, getpgrp()), ENOTTY);
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    CHECK_ERR(tcsetattr(s, TCSANOW, &t), EIO);
    CHECK_EQ(write(out, "k", 1), 1);
}

static void leader(const char *name, pid_t other_session) {
    CHECK_OK(setsid());
    int s = CHECK_OK(open(name, O_RDWR));
    CHECK_EQ(tcgetpgrp(s), getpid());

    int none = 0x3ffffff0, neg = -1;
    CHECK_ERR(ioctl(s, TIOCSPGRP, &none), ESRCH);
    CHECK_ERR(ioctl(s, TIOCSPGRP, &neg), EINVAL);
    CHECK_ERR(tcsetpgrp(s, other_session), EPERM);
    char name2[64];
    int m2 = open_master(name2, sizeof name2);
    int s2 = CHECK_OK(open(name2, O_RDWR | O_NOCTTY));
    CHECK_ERR(tcgetpgrp(s2), ENOTTY);
    CHECK_ERR(tcsetpgrp(s2, getpid()), ENOTTY);
    close(s2);
    close(m2);

    pid_t bg = CHECK_OK(fork());
    if (bg == 0) {
        background(s);
        _exit(0);
    }
    setpgid(bg, bg);
    int st;
    CHECK_EQ(waitpid(bg, &st, WUNTRACED), bg);
    CHECK(WIFSTOPPED(st));
    CHECK_EQ(WSTOPSIG(st), SIGTTOU);
    CHECK_OK(tcsetpgrp(s, bg));
    CHECK_OK(kill(bg, SIGCONT));
    CHECK_EQ(waitpid(bg, &st, 0), bg);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    signal(SIGTTOU, SIG_IGN);
    CHECK_OK(tcsetpgrp(s, getpid()));
    signal(SIGTTOU, SIG_DFL);

    int p[2];
    CHECK_OK(pipe(p));
    pid_t mid = CHECK_OK(fork());
    if (mid == 0) {
        CHECK_OK(setpgid(0, 0));
        pid_t parent = getpid();
        if (CHECK_OK(fork()) == 0) {
            close(p[0]);
            orphaned(s, p[1], parent);
            _exit(0);
        }
        _exit(0);
    }
    close(p[1]);
    CHECK_EQ(waitpid(mid, &st, 0), mid);
    char ok = 0;
    CHECK_EQ(read(p[0], &ok, 1), 1);
    CHECK_EQ(ok, 'k');
}

int main(void) {
    char name[64];
    int m = open_master(name, sizeof name);
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        close(m);
        leader(name, getpgid(getppid()));
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
