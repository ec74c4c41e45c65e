/* fdtable.c — dup family, fcntl, fd allocation, pipe2, close-on-exec. */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* Lowest fd not open in this process. */
static int lowest_free(void) {
    for (int fd = 0;; fd++)
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF)
            return fd;
}

int main(void) {
    const char *f = scratch_path("file");
    char buf[64];
    struct stat st, st2;

    /* The tests below use fds 50..62 and 100; they must start out free. */
    for (int i = 50; i <= 100; i++)
        CHECK_ERR(fcntl(i, F_GETFD), EBADF);
    int base = lowest_free();
    int fd = CHECK_OK(open(f, O_CREAT | O_RDWR, 0644));
    CHECK_EQ(fd, base);
    CHECK_EQ(write(fd, "abcdef", 6), 6);

    /* lowest free fd allocation. */
    int lf = lowest_free();
    CHECK(lf >= 3);
    int a = CHECK_OK(open("/dev/null", O_RDONLY));
    CHECK_EQ(a, lf);
    int b = CHECK_OK(open("/dev/null", O_RDONLY));
    int c = CHECK_OK(open("/dev/null", O_RDONLY));
    CHECK_EQ(b, a + 1);
    CHECK_EQ(c, a + 2);
    CHECK_OK(close(b));
    CHECK_EQ(CHECK_OK(open("/dev/null", O_RDONLY)), b); /* reuses the hole */
    CHECK_OK(close(a));
    CHECK_OK(close(b));
    CHECK_EQ(CHECK_OK(dup(c)), a);
    CHECK_OK(close(a));
    CHECK_OK(close(c));

    /* dup shares the file offset and status flags. */
    int d = CHECK_OK(dup(fd));
    CHECK(d != fd);
    CHECK_EQ(lseek(fd, 2, SEEK_SET), 2);
    CHECK_EQ(lseek(d, 0, SEEK_CUR), 2);
    CHECK_EQ(read(d, buf, 2), 2);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 4);
    CHECK_OK(fstat(fd, &st));
    CHECK_OK(fstat(d, &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    /* dup does not copy FD_CLOEXEC. */
    CHECK_OK(fcntl(fd, F_SETFD, FD_CLOEXEC));
    int d2 = CHECK_OK(dup(fd));
    CHECK_EQ(fcntl(d2, F_GETFD), 0);
    CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
    CHECK_OK(fcntl(fd, F_SETFD, 0));
    CHECK_EQ(fcntl(fd, F_GETFD), 0);
    CHECK_OK(close(d2));
    CHECK_ERR(dup(-1), EBADF);
    CHECK_ERR(dup(9999), EBADF);

    /* dup2 to a chosen fd, replacing an open one. */
    CHECK_EQ(dup2(fd, 50), 50);
    CHECK_EQ(lseek(50, 0, SEEK_CUR), 4);
    int n = CHECK_OK(open("/dev/null", O_RDONLY));
    CHECK_EQ(dup2(fd, n), n); /* silently closes /dev/null */
    CHECK_OK(fstat(n, &st2));
    CHECK_EQ(st2.st_ino, st.st_ino);
    CHECK_EQ(dup2(fd, fd), fd); /* same fd: no-op, returns fd */
    CHECK_ERR(dup2(9999, 51), EBADF);
    CHECK_ERR(dup2(fd, -1), EBADF);
    CHECK_ERR(dup2(fd, 1 << 30), EBADF);
    /* dup2 does not set close-on-exec. */
    CHECK_OK(fcntl(fd, F_SETFD, FD_CLOEXEC));
    CHECK_EQ(dup2(fd, 52), 52);
    CHECK_EQ(fcntl(52, F_GETFD), 0);
    CHECK_OK(fcntl(fd, F_SETFD, 0));

    /* dup3 with O_CLOEXEC; same fd → EINVAL; bad flags → EINVAL. */
    CHECK_EQ(dup3(fd, 53, O_CLOEXEC), 53);
    CHECK_EQ(fcntl(53, F_GETFD), FD_CLOEXEC);
    CHECK_EQ(dup3(fd, 54, 0), 54);
    CHECK_EQ(fcntl(54, F_GETFD), 0);
    CHECK_ERR(dup3(fd, fd, 0), EINVAL);
    CHECK_ERR(dup3(fd, 55, O_NONBLOCK), EINVAL);

    /* F_DUPFD / F_DUPFD_CLOEXEC: lowest free >= arg. 50,52,53,54 are used. */
    CHECK_EQ(fcntl(fd, F_DUPFD, 50), 51);
    CHECK_EQ(fcntl(51, F_GETFD), 0);
    CHECK_EQ(fcntl(fd, F_DUPFD, 50), 55);
    CHECK_EQ(fcntl(fd, F_DUPFD_CLOEXEC, 52), 56);
    CHECK_EQ(fcntl(56, F_GETFD), FD_CLOEXEC);
    CHECK_EQ(fcntl(fd, F_DUPFD, 100), 100);
    CHECK_ERR(fcntl(fd, F_DUPFD, -1), EINVAL);
    {
        struct rlimit rl;
        CHECK_OK(getrlimit(RLIMIT_NOFILE, &rl));
        CHECK_ERR(fcntl(fd, F_DUPFD, (int)rl.rlim_cur), EINVAL);
        CHECK_ERR(dup2(fd, (int)rl.rlim_cur), EBADF);
    }
    for (int i = 50; i <= 56; i++)
        CHECK_OK(close(i));
    CHECK_OK(close(100));
    CHECK_OK(close(n));
    CHECK_OK(close(d));

    /* F_GETFL / F_SETFL: access mode visible, O_NONBLOCK/O_APPEND settable,
     * access mode not changeable. */
    int fl = CHECK_OK(fcntl(fd, F_GETFL));
    CHECK_EQ(fl & O_ACCMODE, O_RDWR);
    CHECK_EQ(fl & (O_APPEND | O_NONBLOCK), 0);
    CHECK_OK(fcntl(fd, F_SETFL, fl | O_APPEND | O_NONBLOCK));
    fl = CHECK_OK(fcntl(fd, F_GETFL));
    CHECK_EQ(fl & (O_APPEND | O_NONBLOCK), O_APPEND | O_NONBLOCK);
    /* status flags are shared with dups. */
    d = CHECK_OK(dup(fd));
    CHECK_EQ(fcntl(d, F_GETFL) & O_APPEND, O_APPEND);
    CHECK_OK(close(d));
    /* O_APPEND now takes effect. */
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(write(fd, "Z", 1), 1);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 7);
    CHECK_OK(fcntl(fd, F_SETFL, O_WRONLY)); /* access mode is ignored */
    fl = CHECK_OK(fcntl(fd, F_GETFL));
    CHECK_EQ(fl & O_ACCMODE, O_RDWR);
    CHECK_EQ(fl & (O_APPEND | O_NONBLOCK), 0);
    int ro = CHECK_OK(open(f, O_RDONLY));
    CHECK_EQ(fcntl(ro, F_GETFL) & O_ACCMODE, O_RDONLY);
    CHECK_OK(close(ro));
    int wo = CHECK_OK(open(f, O_WRONLY | O_APPEND));
    CHECK_EQ(fcntl(wo, F_GETFL) & (O_ACCMODE | O_APPEND), O_WRONLY | O_APPEND);
    CHECK_OK(close(wo));

    /* bad fd / bad cmd. */
    CHECK_ERR(fcntl(9999, F_GETFD), EBADF);
    CHECK_ERR(fcntl(9999, F_GETFL), EBADF);
    CHECK_ERR(fcntl(fd, 9999), EINVAL);

    /* O_CLOEXEC at open is visible via F_GETFD. */
    int ce = CHECK_OK(open(f, O_RDONLY | O_CLOEXEC));
    CHECK_EQ(fcntl(ce, F_GETFD), FD_CLOEXEC);
    /* ... and is not a status flag (not in F_GETFL). */
    CHECK_EQ(fcntl(ce, F_GETFL) & O_CLOEXEC, 0);
    CHECK_OK(close(ce));

    /* pipe2: round trip, flags. */
    int p[2];
    CHECK_OK(pipe2(p, O_CLOEXEC | O_NONBLOCK));
    CHECK_EQ(fcntl(p[0], F_GETFD), FD_CLOEXEC);
    CHECK_EQ(fcntl(p[1], F_GETFD), FD_CLOEXEC);
    CHECK_EQ(fcntl(p[0], F_GETFL) & (O_ACCMODE | O_NONBLOCK),
             O_RDONLY | O_NONBLOCK);
    CHECK_EQ(fcntl(p[1], F_GETFL) & (O_ACCMODE | O_NONBLOCK),
             O_WRONLY | O_NONBLOCK);
    CHECK_ERR(read(p[0], buf, sizeof buf), EAGAIN); /* empty, nonblocking */
    CHECK_EQ(write(p[1], "ping", 4), 4);
    CHECK_EQ(write(p[1], "pong", 4), 4);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(read(p[0], buf, 6), 6);
    CHECK_STR(buf, "pingpo");
    memset(buf, 0, sizeof buf);
    CHECK_EQ(read(p[0], buf, sizeof buf), 2);
    CHECK_STR(buf, "ng");
    CHECK_ERR(write(p[0], "x", 1), EBADF);
    CHECK_ERR(read(p[1], buf, 1), EBADF);
    CHECK(fstat(p[0], &st) == 0 && S_ISFIFO(st.st_mode));
    /* closing the write end → EOF. */
    CHECK_OK(close(p[1]));
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);
    CHECK_OK(close(p[0]));
    CHECK_ERR(pipe2(p, O_APPEND), EINVAL);
    /* plain pipe: no flags. */
    CHECK_OK(pipe(p));
    CHECK_EQ(fcntl(p[0], F_GETFD), 0);
    CHECK_EQ(fcntl(p[0], F_GETFL) & O_NONBLOCK, 0);
    /* write to a pipe with no readers → EPIPE (SIGPIPE ignored). */
    signal(SIGPIPE, SIG_IGN);
    CHECK_OK(close(p[0]));
    CHECK_ERR(write(p[1], "x", 1), EPIPE);
    CHECK_OK(close(p[1]));

    /* /proc/self/fd reflects the table. */
    {
        char path[64], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t r = readlink(path, target, sizeof target - 1);
        CHECK(r > 0);
        target[r] = 0;
        CHECK_STR(target, f);
    }

    /* close_range. */
    CHECK_EQ(dup2(fd, 60), 60);
    CHECK_EQ(dup2(fd, 61), 61);
    CHECK_EQ(dup2(fd, 62), 62);
    CHECK_OK(syscall(SYS_close_range, 60, 61, 0));
    CHECK_ERR(fcntl(60, F_GETFD), EBADF);
    CHECK_ERR(fcntl(61, F_GETFD), EBADF);
    CHECK_EQ(fcntl(62, F_GETFD), 0);
    CHECK_OK(close(62));

    CHECK_OK(close(fd));
    CHECK_ERR(close(fd), EBADF);
    CHECK_EQ(lowest_free(), base);
    return 0;
}
