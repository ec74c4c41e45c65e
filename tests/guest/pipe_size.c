/* pipe_size.c — F_GETPIPE_SZ and F_SETPIPE_SZ as Linux: 64 KiB at first;
 * a new size is rounded up to a power of two pages (one page at least),
 * bounded by /proc/sys/fs/pipe-max-size for a process without
 * CAP_SYS_RESOURCE (EPERM), EBUSY below the bytes queued; the capacity is
 * what a non-blocking writer can fill; both ends and a FIFO see it. */
#include "check.h"
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static int fill(int w) {
    static char chunk[4096];
    int total = 0;
    for (;;) {
        ssize_t n = write(w, chunk, sizeof chunk);
        if (n < 0) {
            CHECK_EQ(errno, EAGAIN);
            return total;
        }
        total += (int)n;
    }
}

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    char buf[64];
    CHECK(read_file("/proc/sys/fs/pipe-max-size", buf, sizeof buf) > 0);
    long max = atol(buf);
    CHECK_EQ(max, 1048576);

    int p[2];
    CHECK_OK(pipe2(p, O_NONBLOCK));
    CHECK_EQ(fcntl(p[0], F_GETPIPE_SZ), 65536);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, 1), page);
    CHECK_EQ(fcntl(p[0], F_GETPIPE_SZ), page);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, 3 * page), 4 * page);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, 0), page);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, 2 * page), 2 * page);
    CHECK_EQ(fill(p[1]), 2 * page);
    CHECK_ERR(fcntl(p[1], F_SETPIPE_SZ, page), EBUSY);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, 8 * page), 8 * page);
    CHECK_EQ(fill(p[1]), 6 * page);
    CHECK_EQ(read(p[0], buf, sizeof buf), (long)sizeof buf);
    close(p[0]);
    close(p[1]);

    /* Past pipe-max-size needs CAP_SYS_RESOURCE: drop it in a child. */
    CHECK_OK(pipe(p));
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        if (prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0) != 0 && errno != EPERM)
            _exit(1);
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) != 0)
            _exit(2);
        d[0].effective &= ~(1u << CAP_SYS_RESOURCE);
        d[0].permitted &= ~(1u << CAP_SYS_RESOURCE);
        if (syscall(SYS_capset, &h, d) != 0)
            _exit(3);
        if (fcntl(p[1], F_SETPIPE_SZ, (int)max) != max)
            _exit(4);
        errno = 0;
        if (fcntl(p[1], F_SETPIPE_SZ, (int)max + 1) != -1 || errno != EPERM)
            _exit(5);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK_EQ(st, 0);
    close(p[0]);
    close(p[1]);

    /* A FIFO's pipe, and not any other file. */
    const char *path = scratch_path("fifo");
    CHECK_OK(mkfifo(path, 0600));
    int f = CHECK_OK(open(path, O_RDWR));
    CHECK_EQ(fcntl(f, F_GETPIPE_SZ), 65536);
    CHECK_EQ(fcntl(f, F_SETPIPE_SZ, 5000), 2 * page);
    close(f);
    int reg = CHECK_OK(open(scratch_path("file"), O_CREAT | O_RDWR, 0600));
    CHECK_ERR(fcntl(reg, F_GETPIPE_SZ), EBADF);
    close(reg);
    return 0;
}
