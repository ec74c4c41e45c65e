/* record_locks.c — fcntl byte-range locks between processes: conflicts
 * (F_SETLK: EAGAIN) and what F_GETLK reports of them, ranges relative to
 * the position or the end and negative lengths, splitting by a partial
 * unlock, F_SETLKW waiting for the holder, POSIX locks released by closing
 * any descriptor of the file and at exit, open file description locks
 * (F_OFD_*) that conflict even inside one process, and bad requests. */
#include "check.h"
#include <fcntl.h>
#include <sys/wait.h>

static int setlk(int fd, int cmd, short type, short whence, off_t start, off_t len) {
    struct flock fl = {0};
    fl.l_type = type;
    fl.l_whence = whence;
    fl.l_start = start;
    fl.l_len = len;
    return fcntl(fd, cmd, &fl);
}

/* F_GETLK (or F_OFD_GETLK) for a write lock over start/len. */
static struct flock getlk(int fd, int cmd, off_t start, off_t len) {
    struct flock fl = {0};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = len;
    CHECK_OK(fcntl(fd, cmd, &fl));
    return fl;
}

/* Runs `body` in a child process with its own descriptor of `path`;
 * returns its exit status. */
static int in_child(const char *path, int (*body)(int fd, pid_t parent)) {
    pid_t parent = getpid();
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        int fd = open(path, O_RDWR);
        _exit(fd < 0 ? 100 : body(fd, parent));
    }
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static int sees_parent_lock(int fd, pid_t parent) {
    struct flock fl = getlk(fd, F_GETLK, 30, 10);
    if (fl.l_type != F_WRLCK || fl.l_pid != parent || fl.l_start != 0 || fl.l_len != 40)
        return 1;
    if (setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 30, 10) != -1 || errno != EAGAIN)
        return 2;
    if (setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 100, 100) != 0)
        return 3;
    /* The hole the parent unlocked is free; its rest is not. */
    fl = getlk(fd, F_GETLK, 40, 20);
    if (fl.l_type != F_UNLCK)
        return 4;
    fl = getlk(fd, F_GETLK, 60, 0);
    if (fl.l_type != F_WRLCK || fl.l_start != 60 || fl.l_len != 40)
        return 5;
    return 0;
}

static int sees_no_lock(int fd, pid_t parent) {
    (void)parent;
    return getlk(fd, F_GETLK, 0, 0).l_type == F_UNLCK ? 0 : 1;
}

static int sees_relative_range(int fd, pid_t parent) {
    (void)parent;
    struct flock fl = getlk(fd, F_GETLK, 0, 0);
    /* Locked from position 10 back 5 bytes, and the last 2 bytes of a
     * 1000-byte file on to the end. */
    if (fl.l_type != F_WRLCK || fl.l_start != 5 || fl.l_len != 5)
        return 1;
    fl = getlk(fd, F_GETLK, 11, 0);
    if (fl.l_type != F_WRLCK || fl.l_start != 998 || fl.l_len != 0)
        return 2;
    return 0;
}

static int holds_then_exits(int fd, pid_t parent) {
    (void)parent;
    return setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 0) == 0 ? 0 : 1;
}

int main(void) {
    const char *path = scratch_path("locked");
    int fd = CHECK_OK(open(path, O_RDWR | O_CREAT, 0600));
    CHECK_OK(ftruncate(fd, 1000));

    /* Conflicts and what F_GETLK says of them. */
    CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 100));
    CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 40, 20));
    /* One's own locks never conflict: a re-lock just converts. */
    CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 10));
    CHECK_EQ(in_child(path, sees_parent_lock), 0);
    CHECK_EQ(getlk(fd, F_GETLK, 0, 0).l_type, F_UNLCK);

    /* Closing any descriptor of the file drops the process's locks. */
    int other = CHECK_OK(open(path, O_RDONLY));
    CHECK_OK(close(other));
    CHECK_EQ(in_child(path, sees_no_lock), 0);

    /* Ranges from the position and the end, negative lengths. */
    CHECK_EQ(lseek(fd, 10, SEEK_SET), 10);
    CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, SEEK_CUR, 0, -5));
    CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, SEEK_END, -2, 0));
    CHECK_EQ(in_child(path, sees_relative_range), 0);
    CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0));
    CHECK_ERR(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, -1, 1), EINVAL);
    CHECK_ERR(setlk(fd, F_SETLK, 7, SEEK_SET, 0, 1), EINVAL);
    int ro = CHECK_OK(open(path, O_RDONLY));
    CHECK_ERR(setlk(ro, F_SETLK, F_WRLCK, SEEK_SET, 0, 1), EBADF);
    close(ro);

    /* A lock taken by a process that exits is gone. */
    CHECK_EQ(in_child(path, holds_then_exits), 0);
    CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 0));

    /* F_SETLKW waits for the holder. */
    int p[2];
    CHECK_OK(pipe(p));
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        int cfd = open(path, O_RDWR);
        if (cfd < 0 || setlk(cfd, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1) != 0)
            _exit(1);
        _exit(write(p[1], "y", 1) == 1 ? 0 : 2);
    }
    usleep(100000);
    CHECK_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
    char ch;
    CHECK_ERR(read(p[0], &ch, 1), EAGAIN);
    CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0));
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(read(p[0], &ch, 1), 1);

    /* Open file description locks conflict within one process and go
     * with the description. */
    int a = CHECK_OK(open(path, O_RDWR));
    int b = CHECK_OK(open(path, O_RDWR));
    CHECK_OK(setlk(a, F_OFD_SETLK, F_WRLCK, SEEK_SET, 0, 10));
    CHECK_ERR(setlk(b, F_OFD_SETLK, F_WRLCK, SEEK_SET, 5, 1), EAGAIN);
    struct flock fl = getlk(b, F_OFD_GETLK, 0, 1);
    CHECK_EQ(fl.l_type, F_WRLCK);
    CHECK_EQ(fl.l_pid, -1);
    struct flock bad = {0};
    bad.l_type = F_RDLCK;
    bad.l_pid = 1;
    CHECK_ERR(fcntl(b, F_OFD_SETLK, &bad), EINVAL);
    int dup_a = CHECK_OK(dup(a));
    CHECK_OK(close(a));
    CHECK_ERR(setlk(b, F_OFD_SETLK, F_WRLCK, SEEK_SET, 5, 1), EAGAIN);
    CHECK_OK(close(dup_a));
    CHECK_OK(setlk(b, F_OFD_SETLK, F_WRLCK, SEEK_SET, 5, 1));
    close(b);
    close(fd);
    puts("record_locks: ok");
    return 0;
}
