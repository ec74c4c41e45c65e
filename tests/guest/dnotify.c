/* dnotify.c — directory change notification, fcntl(F_NOTIFY) (man 2
 * fcntl, "File and directory change notification"): ENOTDIR off a
 * directory (a mask without events removes, on any file), EBADF through
 * O_PATH, the int argument; the caller becomes the owner unless one is
 * set; the F_SETSIG signal with si_fd, POLL_MSG and its band, or plain
 * SIGIO; DN_CREATE, DN_DELETE, DN_MODIFY, DN_ATTRIB and DN_RENAME (a
 * rename within the directory; a move out is a deletion), for entries of
 * the directory only, not a subdirectory's; a notification without
 * DN_MULTISHOT ends after its first event; a second F_NOTIFY adds events
 * and takes the descriptor it came through; a mask without events, or
 * closing any descriptor of the description, removes it. In /tmp, or in
 * the directory argv[1] names. */
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static char dir[256];

static char *at(const char *name) {
    static char path[2][512];
    static int which;
    which ^= 1;
    snprintf(path[which], sizeof path[which], "%s/%s", dir, name);
    return path[which];
}

static void touch(const char *name) {
    int fd = CHECK_OK(open(at(name), O_WRONLY | O_CREAT | O_EXCL, 0644));
    CHECK_OK(close(fd));
}

/* The next pending signal of `set` within `ms` milliseconds: its info,
 * or si_signo 0 if none came. */
static siginfo_t next(const sigset_t *set, int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = sigtimedwait(set, &si, &ts);
    if (r < 0) {
        CHECK_EQ(errno, EAGAIN);
        si.si_signo = 0;
    }
    return si;
}

/* One F_SETSIG signal for `fd`, now. */
static void expect_one(const sigset_t *set, int sig, int fd) {
    siginfo_t si = next(set, 2000);
    CHECK_EQ(si.si_signo, sig);
    CHECK_EQ(si.si_code, POLL_MSG);
    CHECK_EQ(si.si_fd, fd);
    CHECK_EQ(si.si_band, POLLIN | POLLRDNORM | POLLMSG);
    CHECK_EQ(next(set, 0).si_signo, 0);
}

static void expect_none(const sigset_t *set) {
    CHECK_EQ(next(set, 0).si_signo, 0);
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s/dnotify.XXXXXX", argc > 1 ? argv[1] : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    int sig = SIGRTMIN;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigaddset(&set, SIGIO);
    CHECK_OK(sigprocmask(SIG_BLOCK, &set, NULL));

    /* Argument checks. */
    touch("file");
    int ffd = CHECK_OK(open(at("file"), O_RDONLY));
    errno = 0;
    CHECK_EQ(fcntl(ffd, F_NOTIFY, DN_CREATE), -1);
    CHECK_EQ(errno, ENOTDIR);
    CHECK_EQ(fcntl(ffd, F_NOTIFY, 0x100), -1);
    CHECK_EQ(errno, ENOTDIR);
    CHECK_EQ(fcntl(ffd, F_NOTIFY, 0), 0);
    CHECK_EQ(fcntl(ffd, F_NOTIFY, DN_MULTISHOT), 0);
    /* The argument is an int: the upper half of the register is not read. */
    CHECK_EQ(syscall(SYS_fcntl, ffd, F_NOTIFY, 0x100000000UL), 0);
    errno = 0;
    CHECK_EQ(syscall(SYS_fcntl, ffd, F_NOTIFY, 0x100000000UL | DN_CREATE), -1);
    CHECK_EQ(errno, ENOTDIR);
    CHECK_OK(close(ffd));
    int pfd = CHECK_OK(open(dir, O_PATH | O_DIRECTORY));
    errno = 0;
    CHECK_EQ(fcntl(pfd, F_NOTIFY, DN_CREATE), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_OK(close(pfd));
    CHECK_OK(mkdir(at("sub"), 0755));

    /* An owner already set stays. */
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        pause();
        _exit(0);
    }
    int ofd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    CHECK_OK(fcntl(ofd, F_SETOWN, child));
    CHECK_EQ(fcntl(ofd, F_NOTIFY, DN_ATTRIB), 0);
    CHECK_EQ(fcntl(ofd, F_GETOWN), child);
    CHECK_EQ(fcntl(ofd, F_NOTIFY, 0), 0);
    CHECK_OK(close(ofd));
    CHECK_OK(kill(child, SIGKILL));
    CHECK_OK(waitpid(child, NULL, 0));

    int dfd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_MULTISHOT), 0);
    CHECK_EQ(fcntl(dfd, F_GETOWN), 0);
    CHECK_OK(fcntl(dfd, F_SETSIG, sig));

    /* Create and delete, every time, signalled with the descriptor;
     * F_NOTIFY made the caller the owner. */
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_CREATE | DN_DELETE | DN_MULTISHOT), 0);
    CHECK_EQ(fcntl(dfd, F_GETOWN), getpid());
    touch("a");
    expect_one(&set, sig, dfd);
    CHECK_OK(unlink(at("a")));
    expect_one(&set, sig, dfd);
    CHECK_OK(mkdir(at("d"), 0755));
    expect_one(&set, sig, dfd);
    CHECK_OK(rmdir(at("d")));
    expect_one(&set, sig, dfd);
    /* Nothing for what happens in a subdirectory. */
    touch("sub/x");
    CHECK_OK(unlink(at("sub/x")));
    expect_none(&set);
    /* A mask without events removes the notification. */
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_MULTISHOT), 0);
    touch("b");
    expect_none(&set);

    /* Without DN_MULTISHOT only the first event signals. */
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_CREATE), 0);
    touch("c");
    expect_one(&set, sig, dfd);
    touch("d");
    expect_none(&set);

    /* A second F_NOTIFY adds its events to the first's. */
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_ATTRIB | DN_MULTISHOT), 0);
    touch("e");
    expect_one(&set, sig, dfd);
    CHECK_OK(chmod(at("e"), 0600));
    expect_one(&set, sig, dfd);
    CHECK_OK(unlink(at("e")));
    expect_none(&set);
    CHECK_EQ(fcntl(dfd, F_NOTIFY, 0), 0);

    /* DN_MODIFY: a write to an entry, not its creation nor a
     * subdirectory's entry. */
    touch("sub/m");
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_MODIFY | DN_MULTISHOT), 0);
    touch("m");
    expect_none(&set);
    int mfd = CHECK_OK(open(at("m"), O_WRONLY));
    CHECK_EQ(write(mfd, "x", 1), 1);
    expect_one(&set, sig, dfd);
    CHECK_OK(close(mfd));
    mfd = CHECK_OK(open(at("sub/m"), O_WRONLY));
    CHECK_EQ(write(mfd, "x", 1), 1);
    CHECK_OK(close(mfd));
    expect_none(&set);
    CHECK_OK(truncate(at("m"), 0));
    expect_one(&set, sig, dfd);
    CHECK_EQ(fcntl(dfd, F_NOTIFY, 0), 0);

    /* DN_RENAME: a rename within the directory; a move out of it is
     * DN_DELETE's. */
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_RENAME | DN_MULTISHOT), 0);
    CHECK_OK(rename(at("m"), at("n")));
    expect_one(&set, sig, dfd);
    CHECK_OK(rename(at("n"), at("sub/n")));
    expect_none(&set);
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_DELETE | DN_MULTISHOT), 0);
    CHECK_OK(rename(at("sub/n"), at("n")));
    expect_none(&set);
    CHECK_OK(rename(at("n"), at("sub/n")));
    expect_one(&set, sig, dfd);
    CHECK_EQ(fcntl(dfd, F_NOTIFY, 0), 0);

    /* Another descriptor of the description takes the notification over
     * (si_fd), and closing it removes the notification. */
    int dup_fd = CHECK_OK(dup(dfd));
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
    CHECK_EQ(fcntl(dup_fd, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
    touch("f");
    expect_one(&set, sig, dup_fd);
    CHECK_OK(close(dup_fd));
    touch("g");
    expect_none(&set);

    /* Without F_SETSIG: plain SIGIO. */
    CHECK_OK(fcntl(dfd, F_SETSIG, 0));
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_DELETE), 0);
    CHECK_OK(unlink(at("g")));
    siginfo_t si = next(&set, 2000);
    CHECK_EQ(si.si_signo, SIGIO);
    CHECK_EQ(si.si_code, SI_KERNEL);
    expect_none(&set);

    /* Another description of the directory has its own notification:
     * closing it leaves dfd's. */
    CHECK_OK(fcntl(dfd, F_SETSIG, sig));
    CHECK_EQ(fcntl(dfd, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
    int other = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    CHECK_EQ(fcntl(other, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
    CHECK_OK(close(other));
    touch("h");
    expect_one(&set, sig, dfd);
    CHECK_OK(close(dfd));

    CHECK_OK(nftw(dir, husk_rm_cb_, 8, FTW_DEPTH | FTW_PHYS));
    return 0;
}
