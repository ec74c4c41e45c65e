/* fileio.c — open/read/write/seek family. */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>

/* Two threads open the same new names with O_CREAT (no O_EXCL): one
 * makes each file, and the other's open succeeds on it, never EEXIST,
 * however their lookups and creates interleave. */
#define RACE_NAMES 300
static const char *race_dir;
static pthread_barrier_t race_start;

static void *create_names(void *arg) {
    (void)arg;
    char path[256];
    pthread_barrier_wait(&race_start);
    for (int i = 0; i < RACE_NAMES; i++) {
        snprintf(path, sizeof path, "%s/n%d", race_dir, i);
        int fd = open(path, O_CREAT | O_RDWR, 0600);
        if (fd < 0)
            return (void *)(long)errno;
        close(fd);
    }
    return NULL;
}

static void racing_creates(void) {
    race_dir = scratch_path("race");
    CHECK_OK(mkdir(race_dir, 0700));
    CHECK_OK(pthread_barrier_init(&race_start, NULL, 2));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, create_names, NULL), 0);
    void *mine = create_names(NULL);
    void *theirs;
    CHECK_EQ(pthread_join(t, &theirs), 0);
    CHECK_EQ((long)mine, 0);
    CHECK_EQ((long)theirs, 0);
}

/* Positioned reads and writes on a descriptor without a position fail
 * with ESPIPE before the access mode is checked: pread on a pipe's write
 * end and pwrite on its read end or on an inotify descriptor (never
 * writable) say ESPIPE, not EBADF. */
static void check_espipe(int rfd, int wfd) {
    char c = 0;
    struct iovec iov = {&c, 1};
    CHECK_ERR(pread(wfd, &c, 1, 0), ESPIPE);
    CHECK_ERR(pwrite(rfd, &c, 1, 0), ESPIPE);
    CHECK_ERR(preadv(wfd, &iov, 1, 0), ESPIPE);
    CHECK_ERR(pwritev(rfd, &iov, 1, 0), ESPIPE);
    CHECK_ERR(pread(rfd, &c, 1, 0), ESPIPE);
    CHECK_ERR(pwrite(wfd, &c, 1, 0), ESPIPE);
    /* A negative offset is rejected first. */
    CHECK_ERR(pread(wfd, &c, 1, -1), EINVAL);
}

static void positioned_on_streams(void) {
    int p[2];
    CHECK_OK(pipe(p));
    check_espipe(p[0], p[1]);
    CHECK_OK(close(p[0]));
    CHECK_OK(close(p[1]));

    const char *fifo = scratch_path("fifo");
    CHECK_OK(mkfifo(fifo, 0600));
    int r = CHECK_OK(open(fifo, O_RDONLY | O_NONBLOCK));
    int w = CHECK_OK(open(fifo, O_WRONLY));
    check_espipe(r, w);
    CHECK_OK(close(r));
    CHECK_OK(close(w));

    int in = CHECK_OK(inotify_init1(0));
    int v = 0;
    CHECK_ERR(pread(in, &v, sizeof v, 0), ESPIPE);
    CHECK_ERR(pwrite(in, "x", 1, 0), ESPIPE);
    CHECK_ERR(write(in, &v, sizeof v), EBADF);
    CHECK_OK(close(in));
}

/* A directory opens neither for truncation (EISDIR, O_TRUNC asks for
 * write access) nor for direct I/O (EINVAL). */
static void directory_open_flags(void) {
    const char *d = scratch_path("dir");
    CHECK_OK(mkdir(d, 0700));
    CHECK_ERR(open(d, O_TRUNC), EISDIR);
    CHECK_ERR(open(d, O_RDONLY | O_TRUNC), EISDIR);
    CHECK_ERR(open(d, O_RDONLY | O_DIRECTORY | O_TRUNC), EISDIR);
    CHECK_ERR(open(d, O_RDONLY | O_DIRECT), EINVAL);
    int fd = CHECK_OK(open(d, O_RDONLY));
    CHECK_OK(close(fd));
}

/* An anonymous pipe lives on pipefs (f_type 0x50495045, page-sized
 * blocks) and its ends report only their access mode in F_GETFL; an end
 * of a named FIFO, like any file open(2) made, also has O_LARGEFILE. */
#define K_O_LARGEFILE 0100000 /* the kernel's; glibc's O_LARGEFILE is 0 */
static void pipe_flags_and_fs(void) {
    int p[2];
    CHECK_OK(pipe(p));
    struct statfs st;
    CHECK_OK(fstatfs(p[0], &st));
    CHECK_EQ((long)st.f_type, 0x50495045L);
    CHECK_EQ((long)st.f_bsize, 4096L);
    CHECK_EQ((long)st.f_namelen, 255L);
    CHECK_EQ(fcntl(p[0], F_GETFL), O_RDONLY);
    CHECK_EQ(fcntl(p[1], F_GETFL), O_WRONLY);
    CHECK_OK(close(p[0]));
    CHECK_OK(close(p[1]));

    const char *fifo = scratch_path("fifo2");
    CHECK_OK(mkfifo(fifo, 0600));
    int r = CHECK_OK(open(fifo, O_RDONLY | O_NONBLOCK));
    int w = CHECK_OK(open(fifo, O_WRONLY));
    CHECK_EQ(fcntl(r, F_GETFL), K_O_LARGEFILE | O_RDONLY | O_NONBLOCK);
    CHECK_EQ(fcntl(w, F_GETFL), K_O_LARGEFILE | O_WRONLY);
    CHECK_OK(close(r));
    CHECK_OK(close(w));

    int fd = CHECK_OK(open(scratch_path("flags"), O_CREAT | O_RDWR, 0600));
    CHECK_EQ(fcntl(fd, F_GETFL), K_O_LARGEFILE | O_RDWR);
    CHECK_OK(close(fd));
}

/* lseek past what an offset holds is EINVAL (not EOVERFLOW), and /proc's
 * files (seq_files) seek only from the start or the current position. */
static void seek_limits(void) {
    int fd = CHECK_OK(open(scratch_path("seek"), O_CREAT | O_RDWR, 0600));
    CHECK_EQ(write(fd, "hello", 5), 5);
    CHECK_ERR(lseek(fd, 0x7fffffffffffffffL, SEEK_END), EINVAL);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 5);
    CHECK_OK(close(fd));
    const char *procs[] = {"/proc/meminfo", "/proc/stat", "/proc/self/stat"};
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        fd = CHECK_OK(open(procs[i], O_RDONLY));
        CHECK_EQ(lseek(fd, 0, SEEK_CUR), 0);
        CHECK_ERR(lseek(fd, 0, SEEK_END), EINVAL);
        CHECK_EQ(lseek(fd, 10, SEEK_CUR), 10);
        CHECK_OK(close(fd));
    }
}

/* A blocking write larger than the pipe's room, whose reader leaves
 * while it waits, returns what went (and raises SIGPIPE, as Linux's
 * pipe_write does); the next write fails with EPIPE and SIGPIPE. */
static volatile sig_atomic_t sigpipes;
static int partial_pipe[2];
static long partial_results[2];

static void count_sigpipe(int sig) {
    (void)sig;
    sigpipes++;
}

static void *write_twice(void *arg) {
    (void)arg;
    static char buf[2 * 65536];
    partial_results[0] = write(partial_pipe[1], buf, sizeof buf);
    long r = write(partial_pipe[1], buf, sizeof buf);
    partial_results[1] = r < 0 ? -errno : r;
    return NULL;
}

static void partial_write_then_reader_leaves(void) {
    struct sigaction sa = {.sa_handler = count_sigpipe};
    CHECK_OK(sigaction(SIGPIPE, &sa, NULL));
    CHECK_OK(pipe(partial_pipe));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, write_twice, NULL), 0);
    /* Wait until the pipe is full (the writer then blocks). */
    int queued = 0;
    for (int i = 0; i < 1000 && queued < 65536; i++) {
        usleep(1000);
        CHECK_OK(ioctl(partial_pipe[0], FIONREAD, &queued));
    }
    CHECK_EQ(queued, 65536);
    usleep(20000);
    CHECK_OK(close(partial_pipe[0]));
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(partial_results[0], 65536);
    CHECK_EQ(partial_results[1], -EPIPE);
    CHECK_EQ(sigpipes, 2);
    CHECK_OK(close(partial_pipe[1]));
    sa.sa_handler = SIG_DFL;
    CHECK_OK(sigaction(SIGPIPE, &sa, NULL));
}

int main(void) {
    const char *f = scratch_path("file");
    char buf[256];

    /* open O_CREAT, write, read back. */
    int fd = CHECK_OK(open(f, O_CREAT | O_RDWR, 0644));
    CHECK_EQ(write(fd, "hello world", 11), 11);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 11);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(read(fd, buf, sizeof buf), 11);
    CHECK_STR(buf, "hello world");
    /* read at EOF returns 0. */
    CHECK_EQ(read(fd, buf, sizeof buf), 0);

    /* lseek SEEK_CUR / SEEK_END. */
    CHECK_EQ(lseek(fd, -5, SEEK_END), 6);
    CHECK_EQ(lseek(fd, 2, SEEK_CUR), 8);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(read(fd, buf, 3), 3);
    CHECK_STR(buf, "rld");
    /* negative resulting offset → EINVAL, offset unchanged. */
    CHECK_ERR(lseek(fd, -100, SEEK_SET), EINVAL);
    CHECK_ERR(lseek(fd, -100, SEEK_CUR), EINVAL);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 11);
    CHECK_ERR(lseek(fd, 0, 42), EINVAL);

    /* seek beyond EOF and write leaves a zero-filled hole. */
    CHECK_EQ(lseek(fd, 20, SEEK_SET), 20);
    CHECK_EQ(read(fd, buf, sizeof buf), 0);
    CHECK_EQ(write(fd, "X", 1), 1);
    struct stat st;
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_size, 21);
    memset(buf, 'a', sizeof buf);
    CHECK_EQ(pread(fd, buf, sizeof buf, 11), 10);
    static const char zeros[9];
    CHECK_MEM(buf, zeros, 9);
    CHECK_EQ(buf[9], 'X');

    /* pread64/pwrite64 do not move the offset. */
    CHECK_EQ(lseek(fd, 3, SEEK_SET), 3);
    CHECK_EQ(pwrite(fd, "HE", 2, 0), 2);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 3);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(pread(fd, buf, 5, 0), 5);
    CHECK_STR(buf, "HEllo");
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 3);
    CHECK_ERR(pread(fd, buf, 1, -1), EINVAL);

    /* writev/readv. */
    CHECK_OK(ftruncate(fd, 0));
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    struct iovec wv[3] = {{"abc", 3}, {"", 0}, {"defgh", 5}};
    CHECK_EQ(writev(fd, wv, 3), 8);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    char a[2], b[4], c[10];
    memset(c, 0, sizeof c);
    struct iovec rv[3] = {{a, 2}, {b, 4}, {c, 10}};
    CHECK_EQ(readv(fd, rv, 3), 8);
    CHECK_MEM(a, "ab", 2);
    CHECK_MEM(b, "cdef", 4);
    CHECK_STR(c, "gh");
    /* preadv/pwritev */
    struct iovec pv[1] = {{b, 4}};
    CHECK_EQ(preadv(fd, pv, 1, 4), 4);
    CHECK_MEM(b, "efgh", 4);

    /* ftruncate grow/shrink, fsync, fdatasync. */
    CHECK_OK(ftruncate(fd, 4096));
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_size, 4096);
    CHECK_OK(ftruncate(fd, 2));
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_size, 2);
    CHECK_ERR(ftruncate(fd, -1), EINVAL);
    CHECK_OK(fsync(fd));
    CHECK_OK(fdatasync(fd));
    CHECK_OK(close(fd));

    /* close of bad fd. */
    CHECK_ERR(close(fd), EBADF);
    CHECK_ERR(close(-1), EBADF);
    CHECK_ERR(close(100000), EBADF);

    /* O_APPEND: writes go to the end regardless of offset. */
    fd = CHECK_OK(open(f, O_WRONLY | O_APPEND));
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(write(fd, "zz", 2), 2);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 4);
    /* read on O_WRONLY fd → EBADF. */
    CHECK_ERR(read(fd, buf, 1), EBADF);
    CHECK_OK(close(fd));
    memset(buf, 0, sizeof buf);
    CHECK_EQ(read_file(f, buf, sizeof buf), 4);
    CHECK_STR(buf, "abzz");

    /* write on O_RDONLY fd → EBADF. */
    fd = CHECK_OK(open(f, O_RDONLY));
    CHECK_ERR(write(fd, "x", 1), EBADF);
    CHECK_ERR(ftruncate(fd, 0), EINVAL); /* not open for writing */
    CHECK_OK(close(fd));

    /* O_TRUNC. */
    fd = CHECK_OK(open(f, O_WRONLY | O_TRUNC));
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_size, 0);
    CHECK_OK(close(fd));

    /* O_CREAT|O_EXCL on an existing file → EEXIST. */
    CHECK_ERR(open(f, O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
    /* O_CREAT without O_EXCL on existing file succeeds. */
    CHECK_OK(close(CHECK_OK(open(f, O_CREAT | O_WRONLY, 0644))));
    /* missing file without O_CREAT → ENOENT. */
    CHECK_ERR(open(scratch_path("missing"), O_RDONLY), ENOENT);
    CHECK_ERR(open(scratch_path("missing/x"), O_RDONLY | O_CREAT, 0644),
              ENOENT);

    /* O_DIRECTORY on a regular file → ENOTDIR. */
    CHECK_ERR(open(f, O_RDONLY | O_DIRECTORY), ENOTDIR);
    /* opening a directory for writing → EISDIR. */
    CHECK_ERR(open(scratch_dir(), O_WRONLY), EISDIR);
    /* read on a directory fd → EISDIR. */
    fd = CHECK_OK(open(scratch_dir(), O_RDONLY | O_DIRECTORY));
    CHECK_ERR(read(fd, buf, 1), EISDIR);

    /* openat relative to a directory fd. */
    int fd2 = CHECK_OK(openat(fd, "file", O_RDWR));
    CHECK_EQ(write(fd2, "rel", 3), 3);
    CHECK_OK(close(fd2));
    CHECK_EQ(read_file(f, buf, sizeof buf), 3);
    CHECK_STR(buf, "rel");
    /* openat with a non-directory dirfd and relative path → ENOTDIR. */
    fd2 = CHECK_OK(open(f, O_RDONLY));
    CHECK_ERR(openat(fd2, "x", O_RDONLY), ENOTDIR);
    /* ... but absolute path ignores dirfd. */
    CHECK_OK(close(CHECK_OK(openat(fd2, f, O_RDONLY))));
    CHECK_OK(close(fd2));
    CHECK_ERR(openat(-1, "file", O_RDONLY), EBADF);
    CHECK_OK(close(fd));

    /* O_NOFOLLOW on a symlink → ELOOP. */
    const char *l = scratch_path("link");
    CHECK_OK(symlink(f, l));
    CHECK_ERR(open(l, O_RDONLY | O_NOFOLLOW), ELOOP);
    /* O_PATH|O_NOFOLLOW opens the link itself. */
    fd = CHECK_OK(open(l, O_PATH | O_NOFOLLOW));
    CHECK_ERR(read(fd, buf, 1), EBADF);
    CHECK_OK(close(fd));
    /* following the link works. */
    CHECK_OK(close(CHECK_OK(open(l, O_RDONLY))));

    /* lseek on a pipe → ESPIPE. */
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_ERR(lseek(p[0], 0, SEEK_SET), ESPIPE);
    CHECK_ERR(pread(p[0], buf, 1, 0), ESPIPE);
    close(p[0]);
    close(p[1]);

    /* large write and read back through raw syscalls. */
    static char big[200000], big2[200000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 7 + 3);
    fd = CHECK_OK(open(scratch_path("big"), O_CREAT | O_RDWR | O_TRUNC, 0600));
    CHECK_EQ(syscall(SYS_pwrite64, fd, big, sizeof big, 0L), sizeof big);
    CHECK_EQ(syscall(SYS_pread64, fd, big2, sizeof big2, 0L), sizeof big2);
    CHECK_MEM(big, big2, sizeof big);
    CHECK_OK(close(fd));

    /* /dev/null and /dev/zero read-only system files. */
    fd = CHECK_OK(open("/etc/passwd", O_RDONLY));
    CHECK(read(fd, buf, 5) == 5 && memcmp(buf, "root:", 5) == 0);
    CHECK_OK(close(fd));

    racing_creates();
    positioned_on_streams();
    directory_open_flags();
    pipe_flags_and_fs();
    seek_limits();
    partial_write_then_reader_leaves();
    return 0;
}
