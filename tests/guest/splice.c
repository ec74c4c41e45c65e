/* splice.c — splice between files and pipes (offsets, file positions),
 * tee (copy without consuming), vmsplice, and their errors. */
#include "check.h"
#include <fcntl.h>
#include <sys/uio.h>

int main(void) {
    char path[64], path2[64], buf[32];
    snprintf(path, sizeof path, "/tmp/husk-splice-%d", getpid());
    snprintf(path2, sizeof path2, "/tmp/husk-splice2-%d", getpid());
    int fd = CHECK_OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0600));
    CHECK_EQ(write(fd, "hello world", 11), 11);
    int p[2];
    CHECK_OK(pipe(p));

    /* file -> pipe at an offset: the offset moves, the position does not. */
    loff_t off = 6;
    CHECK_EQ(splice(fd, &off, p[1], NULL, 5, 0), 5);
    CHECK_EQ(off, 11);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 11);
    CHECK_EQ(read(p[0], buf, sizeof buf), 5);
    CHECK(memcmp(buf, "world", 5) == 0);

    /* file -> pipe at the file position. */
    CHECK_OK(lseek(fd, 0, SEEK_SET));
    CHECK_EQ(splice(fd, NULL, p[1], NULL, 5, 0), 5);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 5);
    CHECK_EQ(read(p[0], buf, sizeof buf), 5);
    CHECK(memcmp(buf, "hello", 5) == 0);

    /* pipe -> file. */
    int fd2 = CHECK_OK(open(path2, O_RDWR | O_CREAT | O_TRUNC, 0600));
    CHECK_EQ(write(p[1], "abc", 3), 3);
    loff_t off2 = 2;
    CHECK_EQ(splice(p[0], NULL, fd2, &off2, 10, 0), 3);
    CHECK_EQ(off2, 5);
    CHECK_EQ(pread(fd2, buf, sizeof buf, 2), 3);
    CHECK(memcmp(buf, "abc", 3) == 0);

    /* tee copies without consuming. */
    int q[2];
    CHECK_OK(pipe(q));
    CHECK_EQ(write(p[1], "xyz", 3), 3);
    CHECK_EQ(tee(p[0], q[1], 10, 0), 3);
    CHECK_EQ(read(q[0], buf, sizeof buf), 3);
    CHECK(memcmp(buf, "xyz", 3) == 0);
    CHECK_EQ(read(p[0], buf, sizeof buf), 3);
    CHECK(memcmp(buf, "xyz", 3) == 0);

    /* vmsplice gathers guest memory into a pipe. */
    struct iovec iov[2] = {{"vm", 2}, {"splice", 6}};
    CHECK_EQ(vmsplice(p[1], iov, 2, 0), 8);
    CHECK_EQ(read(p[0], buf, sizeof buf), 8);
    CHECK(memcmp(buf, "vmsplice", 8) == 0);

    /* Into a pipe, splice moves only what fits now. */
    static char big[200000];
    memset(big, 'b', sizeof big);
    CHECK_OK(lseek(fd, 0, SEEK_SET));
    CHECK_EQ(write(fd, big, sizeof big), (long)sizeof big);
    CHECK_OK(lseek(fd, 0, SEEK_SET));
    long moved = CHECK_OK(splice(fd, NULL, p[1], NULL, sizeof big, 0));
    CHECK(moved > 0 && moved < (long)sizeof big);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), moved);
    CHECK_ERR(splice(fd, NULL, p[1], NULL, 10, SPLICE_F_NONBLOCK), EAGAIN);
    long drained = 0;
    while (drained < moved) {
        drained += CHECK_OK(read(p[0], big, sizeof big));
    }
    CHECK_EQ(drained, moved);

    /* Errors. */
    CHECK_ERR(tee(p[0], p[1], 4, 0), EINVAL);
    CHECK_ERR(splice(p[0], NULL, p[1], NULL, 4, 0), EINVAL);
    CHECK_ERR(splice(fd, NULL, fd2, NULL, 4, 0), EINVAL);
    off = 0;
    CHECK_ERR(splice(p[0], &off, fd2, NULL, 4, 0), ESPIPE);
    CHECK_ERR(splice(fd, NULL, p[1], NULL, 4, 0x100), EINVAL);
    CHECK_ERR(splice(p[0], NULL, fd2, NULL, 4, SPLICE_F_NONBLOCK), EAGAIN);
    CHECK_ERR(tee(p[0], fd2, 4, 0), EINVAL);
    CHECK_ERR(vmsplice(fd, iov, 2, 0), EBADF);
    CHECK_EQ(splice(fd, NULL, p[1], NULL, 0, 0), 0);
    close(p[1]);
    CHECK_EQ(splice(p[0], NULL, fd2, NULL, 4, 0), 0); /* no writers: the end */
    close(p[0]);
    close(q[0]);
    close(q[1]);
    close(fd);
    close(fd2);
    unlink(path);
    unlink(path2);
    return 0;
}
