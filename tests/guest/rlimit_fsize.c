/* rlimit_fsize.c — RLIMIT_FSIZE: writes to a regular file stop short at the
 * soft limit; one that can write nothing, and truncate/fallocate growing a
 * file past it, fail EFBIG and raise SIGXFSZ. Pipes and devices are exempt. */
#include "check.h"
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/uio.h>

static volatile int xfsz;

static void on_xfsz(int sig) {
    (void)sig;
    xfsz++;
}

static void set_limit(rlim_t cur) {
    struct rlimit r = {cur, RLIM_INFINITY};
    CHECK_OK(setrlimit(RLIMIT_FSIZE, &r));
}

int main(void) {
    char buf[300];
    memset(buf, 'x', sizeof buf);
    CHECK(signal(SIGXFSZ, on_xfsz) != SIG_ERR);
    const char *path = scratch_path("f");
    int fd = CHECK_OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0600));
    set_limit(100);

    /* write: short at the limit, then EFBIG + SIGXFSZ. */
    CHECK_EQ(write(fd, buf, 150), 100);
    CHECK_EQ(xfsz, 0);
    CHECK_ERR(write(fd, buf, 10), EFBIG);
    CHECK_EQ(xfsz, 1);
    CHECK_EQ(write(fd, buf, 0), 0);
    CHECK_EQ(xfsz, 1);

    /* pwrite and pwritev. */
    CHECK_EQ(pwrite(fd, buf, 20, 90), 10);
    CHECK_ERR(pwrite(fd, buf, 1, 100), EFBIG);
    CHECK_EQ(xfsz, 2);
    CHECK_EQ(pwrite(fd, buf, 0, 200), 0);
    struct iovec iov[2] = {{buf, 60}, {buf, 60}};
    CHECK_EQ(pwritev(fd, iov, 2, 0), 100);
    CHECK_EQ(lseek(fd, 30, SEEK_SET), 30);
    CHECK_EQ(writev(fd, iov, 2), 70);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 100);
    CHECK_ERR(writev(fd, iov, 2), EFBIG);
    CHECK_EQ(xfsz, 3);

    /* O_APPEND: the limit is checked at the end of the file. */
    int ap = CHECK_OK(open(path, O_WRONLY | O_APPEND));
    CHECK_ERR(write(ap, buf, 1), EFBIG);
    CHECK_EQ(xfsz, 4);
    CHECK_OK(close(ap));

    /* truncate and ftruncate: growing past the limit fails; shrinking,
     * even to a size above it, does not. */
    CHECK_ERR(ftruncate(fd, 101), EFBIG);
    CHECK_EQ(xfsz, 5);
    CHECK_ERR(truncate(path, 200), EFBIG);
    CHECK_EQ(xfsz, 6);
    CHECK_OK(ftruncate(fd, 100));
    CHECK_OK(ftruncate(fd, 50));
    set_limit(RLIM_INFINITY);
    CHECK_OK(ftruncate(fd, 300));
    set_limit(100);
    CHECK_OK(ftruncate(fd, 200));
    CHECK_EQ(xfsz, 6);
    CHECK_OK(ftruncate(fd, 50));

    /* fallocate: growing past the limit fails, KEEP_SIZE does not check. */
    CHECK_ERR(fallocate(fd, 0, 0, 200), EFBIG);
    CHECK_EQ(xfsz, 7);
    CHECK_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 200));
    CHECK_OK(fallocate(fd, 0, 0, 100));
    CHECK_EQ(xfsz, 7);
    CHECK_OK(ftruncate(fd, 50));

    /* copy_file_range and sendfile to a file. */
    int out = CHECK_OK(open(scratch_path("out"), O_RDWR | O_CREAT, 0600));
    loff_t in_off = 0, out_off = 80;
    CHECK_EQ(copy_file_range(fd, &in_off, out, &out_off, 50, 0), 20);
    CHECK_EQ(out_off, 100);
    in_off = 0;
    CHECK_ERR(copy_file_range(fd, &in_off, out, &out_off, 50, 0), EFBIG);
    CHECK_EQ(xfsz, 8);
    CHECK_EQ(lseek(out, 90, SEEK_SET), 90);
    off_t s_off = 0;
    CHECK_EQ(sendfile(out, fd, &s_off, 50), 10);
    CHECK_EQ(s_off, 10);
    /* The short sendfile tried to write the rest too, and was signalled. */
    CHECK_EQ(xfsz, 9);
    CHECK_ERR(sendfile(out, fd, &s_off, 50), EFBIG);
    CHECK_EQ(xfsz, 10);

    /* Pipes and devices have no size limit. */
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_EQ(write(p[1], buf, 300), 300);
    CHECK_EQ(xfsz, 10);
    int null = CHECK_OK(open("/dev/null", O_WRONLY));
    CHECK_EQ(write(null, buf, 300), 300);
    CHECK_EQ(xfsz, 10);

    /* SIGXFSZ's default action kills the writer. */
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        signal(SIGXFSZ, SIG_DFL);
        lseek(fd, 100, SEEK_SET);
        write(fd, buf, 1);
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGXFSZ);
    return 0;
}
