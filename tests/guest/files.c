/* files.c — fallocate(2), preadv2/pwritev2(2), copy_file_range(2) and
 * O_TMPFILE as Linux 6.x does them, in the directory named by argv[1]
 * (a scratch directory is made there and removed at exit).
 *
 *   files DIR SECTION...
 *
 * SECTION is one of: fallocate (modes 0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE
 * and the argument errors), zero (ZERO_RANGE, which Linux's tmpfs refuses
 * and disk filesystems do), nozero (ZERO_RANGE is EOPNOTSUPP: tmpfs),
 * rw2 (preadv2/pwritev2 flags), nowait (RWF_NOWAIT reads a regular file:
 * ext4, a gofer's host file), nonowait (EOPNOTSUPP: tmpfs, overlayfs), cfr (copy_file_range), tmpfile (O_TMPFILE
 * made visible with linkat). */
#include "check.h"
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/falloc.h>

static char dir[4096];

static void rm_dir(void) {
    if (chdir("/") != 0) { /* ignore */ }
    nftw(dir, husk_rm_cb_, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *path(const char *name) {
    char *b = NULL;
    if (asprintf(&b, "%s/%s", dir, name) < 0)
        FAILF("asprintf");
    return b;
}

static long long size_of(int fd) {
    struct stat st;
    CHECK_OK(fstat(fd, &st));
    return st.st_size;
}

static long long blocks_of(int fd) {
    struct stat st;
    CHECK_OK(fstat(fd, &st));
    return st.st_blocks;
}

/* Every byte of fd's [off, off+len) is c. */
static void expect_bytes(int fd, off_t off, size_t len, char c) {
    char buf[16384];
    CHECK(len <= sizeof buf);
    CHECK_EQ(pread(fd, buf, len, off), (ssize_t)len);
    for (size_t i = 0; i < len; i++)
        if (buf[i] != c)
            FAILF("byte %lld is %d, want %d", (long long)off + (long long)i, buf[i], c);
}

static int new_file(const char *name, char fill, size_t len) {
    int fd = CHECK_OK(open(path(name), O_RDWR | O_CREAT | O_TRUNC, 0600));
    char buf[16384];
    CHECK(len <= sizeof buf);
    memset(buf, fill, len);
    CHECK_EQ(write(fd, buf, len), (ssize_t)len);
    return fd;
}

static void test_fallocate(void) {
    int fd = CHECK_OK(open(path("alloc"), O_RDWR | O_CREAT | O_TRUNC, 0600));
    /* Mode 0 grows the file and holds its blocks. */
    CHECK_OK(fallocate(fd, 0, 0, 8192));
    CHECK_EQ(size_of(fd), 8192);
    CHECK(blocks_of(fd) >= 16);
    expect_bytes(fd, 0, 8192, 0);
    /* KEEP_SIZE holds blocks past the end without growing it. */
    long long before = blocks_of(fd);
    CHECK_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 8192, 8192));
    CHECK_EQ(size_of(fd), 8192);
    CHECK(blocks_of(fd) >= before + 16);
    /* Inside the file nothing changes. */
    CHECK_OK(fallocate(fd, 0, 100, 10));
    CHECK_EQ(size_of(fd), 8192);

    /* Punching a hole zeroes the range, keeps the size, frees whole blocks. */
    int d = new_file("punch", 'a', 3 * 4096);
    CHECK_ERR(fallocate(d, FALLOC_FL_PUNCH_HOLE, 4096, 4096), EOPNOTSUPP);
    before = blocks_of(d);
    CHECK_OK(fallocate(d, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096));
    CHECK_EQ(size_of(d), 3 * 4096);
    CHECK(blocks_of(d) <= before - 8);
    expect_bytes(d, 0, 4096, 'a');
    expect_bytes(d, 4096, 4096, 0);
    expect_bytes(d, 8192, 4096, 'a');
    /* Part of a block: just those bytes. */
    CHECK_OK(fallocate(d, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 50));
    expect_bytes(d, 0, 100, 'a');
    expect_bytes(d, 100, 50, 0);
    expect_bytes(d, 150, 4096 - 150, 'a');
    /* Across the end: the size stays. */
    CHECK_OK(fallocate(d, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 12000, 10000));
    CHECK_EQ(size_of(d), 3 * 4096);
    expect_bytes(d, 8192, 12000 - 8192, 'a');
    expect_bytes(d, 12000, 3 * 4096 - 12000, 0);

    /* The checks, in Linux's order. */
    CHECK_ERR(fallocate(fd, 0, 0, 0), EINVAL);
    CHECK_ERR(fallocate(fd, 0, -1, 10), EINVAL);
    CHECK_ERR(fallocate(fd, 0, 0, -1), EINVAL);
    CHECK_ERR(fallocate(fd, 0x100, 0, 10), EOPNOTSUPP);
    CHECK_ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 10), EOPNOTSUPP);
    CHECK_ERR(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_KEEP_SIZE, 0, 4096), EOPNOTSUPP);
    CHECK_ERR(fallocate(-1, 0, 0, 10), EBADF);
    CHECK_ERR(fallocate(fd, 0x100, 0, 0), EINVAL); /* the range first */
    int ro = CHECK_OK(open(path("alloc"), O_RDONLY));
    CHECK_ERR(fallocate(ro, 0, 0, 10), EBADF);
    CHECK_ERR(fallocate(ro, 0x100, 0, 10), EOPNOTSUPP); /* the mode before the access */
    int op = CHECK_OK(open(path("alloc"), O_PATH));
    CHECK_ERR(fallocate(op, 0, 0, 10), EBADF);
    CHECK_ERR(fallocate(fd, 0, INT64_MAX - 10, 100), EFBIG);
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_ERR(fallocate(p[1], 0, 0, 10), ESPIPE);
    CHECK_ERR(fallocate(p[0], 0, 0, 10), EBADF);
    int null = CHECK_OK(open("/dev/null", O_WRONLY));
    CHECK_ERR(fallocate(null, 0, 0, 10), ENODEV);
    int s = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_ERR(fallocate(s, 0, 0, 10), ENODEV);
    close(s), close(null), close(p[0]), close(p[1]), close(op), close(ro), close(d), close(fd);
}

static void test_zero(int supported) {
    int d = new_file("zero", 'z', 2 * 4096);
    if (!supported) {
        CHECK_ERR(fallocate(d, FALLOC_FL_ZERO_RANGE, 0, 10), EOPNOTSUPP);
        CHECK_ERR(fallocate(d, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 10), EOPNOTSUPP);
        close(d);
        return;
    }
    CHECK_OK(fallocate(d, FALLOC_FL_ZERO_RANGE, 1000, 50));
    expect_bytes(d, 0, 1000, 'z');
    expect_bytes(d, 1000, 50, 0);
    expect_bytes(d, 1050, 2 * 4096 - 1050, 'z');
    CHECK_EQ(size_of(d), 2 * 4096);
    /* Past the end it grows the file, unless KEEP_SIZE. */
    CHECK_OK(fallocate(d, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 8000, 4000));
    CHECK_EQ(size_of(d), 2 * 4096);
    expect_bytes(d, 8000, 192, 0);
    expect_bytes(d, 7000, 1000, 'z');
    CHECK_OK(fallocate(d, FALLOC_FL_ZERO_RANGE, 8192, 4096));
    CHECK_EQ(size_of(d), 3 * 4096);
    expect_bytes(d, 8192, 4096, 0);
    close(d);
}

#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND 0x20
#endif

static void test_rw2(void) {
    int fd = CHECK_OK(open(path("rw2"), O_RDWR | O_CREAT | O_TRUNC, 0600));
    char a[] = "hel", b[] = "lo";
    struct iovec w[2] = {{a, 3}, {b, 2}};
    CHECK_EQ(pwritev2(fd, w, 2, 0, 0), 5);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 0); /* an offset: the position stays */
    char r1[2], r2[2];
    struct iovec r[2] = {{r1, 2}, {r2, 2}};
    CHECK_EQ(preadv2(fd, r, 2, 1, 0), 4);
    CHECK_MEM(r1, "el", 2);
    CHECK_MEM(r2, "lo", 2);
    /* -1: the file position, which advances. */
    CHECK_EQ(lseek(fd, 1, SEEK_SET), 1);
    CHECK_EQ(preadv2(fd, r, 1, -1, 0), 2);
    CHECK_MEM(r1, "el", 2);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 3);
    struct iovec one = {b, 2};
    CHECK_EQ(pwritev2(fd, &one, 1, -1, 0), 2);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 5);
    CHECK_EQ(size_of(fd), 5);
    CHECK_ERR(preadv2(fd, r, 1, -2, 0), EINVAL);
    /* The flags that only ask for more durability or priority. */
    CHECK_EQ(pwritev2(fd, w, 2, 0, RWF_DSYNC), 5);
    CHECK_EQ(pwritev2(fd, w, 2, 0, RWF_SYNC), 5);
    CHECK_EQ(pwritev2(fd, w, 2, 0, RWF_HIPRI), 5);
    CHECK_EQ(preadv2(fd, r, 2, 0, RWF_HIPRI), 4);
    CHECK_EQ(preadv2(fd, r, 2, 0, 0), 4);
    CHECK_MEM(r1, "he", 2);
    /* RWF_APPEND writes at the end whatever the offset; the position stays. */
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(pwritev2(fd, &one, 1, 1, RWF_APPEND), 2);
    CHECK_EQ(size_of(fd), 7);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 0);
    CHECK_EQ(pwritev2(fd, &one, 1, -1, RWF_APPEND), 2);
    CHECK_EQ(size_of(fd), 9);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 9);
    char all[9];
    CHECK_EQ(pread(fd, all, 9, 0), 9);
    CHECK_MEM(all, "hellololo", 9);
    /* RWF_NOAPPEND writes at the offset of an O_APPEND file. */
    int ap = CHECK_OK(open(path("rw2"), O_WRONLY | O_APPEND));
    CHECK_EQ(pwritev2(ap, w, 1, 0, RWF_NOAPPEND), 3);
    CHECK_EQ(size_of(fd), 9);
    CHECK_EQ(pwritev2(ap, w, 1, 0, 0), 3);
    CHECK_EQ(size_of(fd), 12);
    /* Unknown flags. */
    CHECK_ERR(preadv2(fd, r, 2, 0, 0x10000000), EOPNOTSUPP);
    CHECK_ERR(pwritev2(fd, w, 2, 0, 0x10000000), EOPNOTSUPP);
    CHECK_EQ(preadv2(fd, r, 0, 0, 0x10000000), 0); /* nothing to do first */
    CHECK_ERR(preadv2(ap, r, 2, 0, 0), EBADF);
    CHECK_ERR(preadv2(-1, r, 2, 0, 0), EBADF);
    /* Pipes: no offset, and RWF_NOWAIT is EAGAIN where a read would wait. */
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_ERR(preadv2(p[0], r, 1, 0, 0), ESPIPE);
    CHECK_ERR(preadv2(p[0], r, 1, -1, RWF_NOWAIT), EAGAIN);
    CHECK_EQ(pwritev2(p[1], w, 2, -1, RWF_NOWAIT), 5);
    CHECK_EQ(preadv2(p[0], r, 2, -1, RWF_NOWAIT), 4);
    CHECK_MEM(r1, "he", 2);
    CHECK_MEM(r2, "ll", 2);
    /* A full pipe: RWF_NOWAIT write is EAGAIN. */
    CHECK_OK(fcntl(p[1], F_SETFL, O_NONBLOCK));
    static char big[65536];
    while (write(p[1], big, sizeof big) > 0) {}
    CHECK_OK(fcntl(p[1], F_SETFL, 0));
    CHECK_ERR(pwritev2(p[1], w, 2, -1, RWF_NOWAIT), EAGAIN);
    close(p[0]), close(p[1]), close(ap), close(fd);
}

/* RWF_NOWAIT on a regular file: served from the page cache where the
 * filesystem can (ext4, a gofer's host file), EOPNOTSUPP where it cannot
 * (tmpfs, overlayfs). */
static void test_nowait(int supported) {
    int fd = new_file("nowait", 'n', 100);
    char b[10];
    struct iovec r = {b, sizeof b};
    if (supported) {
        CHECK_EQ(preadv2(fd, &r, 1, 0, RWF_NOWAIT), 10);
        expect_bytes(fd, 0, 10, 'n');
    } else {
        CHECK_ERR(preadv2(fd, &r, 1, 0, RWF_NOWAIT), EOPNOTSUPP);
        CHECK_ERR(preadv2(fd, &r, 1, -1, RWF_NOWAIT), EOPNOTSUPP);
    }
    close(fd);
}

static loff_t cfr(int in, loff_t *oi, int out, loff_t *oo, size_t len, unsigned flags) {
    return syscall(SYS_copy_file_range, in, oi, out, oo, len, flags);
}

static void test_cfr(void) {
    char data[10000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)('a' + i % 23);
    int in = CHECK_OK(open(path("cfr-in"), O_RDWR | O_CREAT | O_TRUNC, 0600));
    CHECK_EQ(write(in, data, sizeof data), (ssize_t)sizeof data);
    int out = CHECK_OK(open(path("cfr-out"), O_RDWR | O_CREAT | O_TRUNC, 0600));
    loff_t oi = 100, oo = 0;
    CHECK_EQ(cfr(in, &oi, out, &oo, 5000, 0), 5000);
    CHECK_EQ(oi, 5100);
    CHECK_EQ(oo, 5000);
    CHECK_EQ(lseek(in, 0, SEEK_CUR), sizeof data); /* positions untouched */
    CHECK_EQ(lseek(out, 0, SEEK_CUR), 0);
    char got[10000];
    CHECK_EQ(pread(out, got, 5000, 0), 5000);
    CHECK_MEM(got, data + 100, 5000);
    /* Without offsets: the file positions, advanced. */
    CHECK_EQ(lseek(in, 9000, SEEK_SET), 9000);
    CHECK_EQ(lseek(out, 5000, SEEK_SET), 5000);
    CHECK_EQ(cfr(in, NULL, out, NULL, 5000, 0), 1000); /* short at the end */
    CHECK_EQ(lseek(in, 0, SEEK_CUR), 10000);
    CHECK_EQ(lseek(out, 0, SEEK_CUR), 6000);
    CHECK_EQ(pread(out, got, 1000, 5000), 1000);
    CHECK_MEM(got, data + 9000, 1000);
    CHECK_EQ(cfr(in, NULL, out, NULL, 5000, 0), 0); /* at the end */
    /* A hole in the output stays zero-filled. */
    oi = 0, oo = 8000;
    CHECK_EQ(cfr(in, &oi, out, &oo, 10, 0), 10);
    CHECK_EQ(size_of(out), 8010);
    expect_bytes(out, 6000, 2000, 0);

    /* The same file: overlapping ranges are EINVAL, disjoint ones copy. */
    oi = 0, oo = 100;
    CHECK_ERR(cfr(in, &oi, in, &oo, 1000, 0), EINVAL);
    oi = 0, oo = 20000;
    CHECK_EQ(cfr(in, &oi, in, &oo, 1000, 0), 1000);
    CHECK_EQ(size_of(in), 21000);
    oi = 50000, oo = 100; /* nothing to copy past the end: no overlap */
    CHECK_EQ(cfr(in, &oi, in, &oo, 1000, 0), 0);

    /* Errors, in Linux's order. */
    oi = 0, oo = 0;
    CHECK_ERR(cfr(in, &oi, out, &oo, 10, 1), EINVAL);
    CHECK_ERR(cfr(-1, &oi, out, &oo, 10, 1), EBADF);
    int ap = CHECK_OK(open(path("cfr-out"), O_WRONLY | O_APPEND));
    CHECK_ERR(cfr(in, &oi, ap, &oo, 10, 0), EBADF);
    int ro = CHECK_OK(open(path("cfr-out"), O_RDONLY));
    CHECK_ERR(cfr(in, &oi, ro, &oo, 10, 0), EBADF);
    int wo = CHECK_OK(open(path("cfr-in"), O_WRONLY));
    CHECK_ERR(cfr(wo, &oi, out, &oo, 10, 0), EBADF);
    oi = -1; /* the range wraps */
    CHECK_ERR(cfr(in, &oi, out, &oo, 10, 0), EOVERFLOW);
    oi = -100;
    CHECK_ERR(cfr(in, &oi, out, &oo, 10, 0), EINVAL);
    oi = 0;
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_ERR(cfr(p[0], NULL, out, &oo, 10, 0), EINVAL);
    CHECK_ERR(cfr(in, &oi, p[1], NULL, 10, 0), EINVAL);
    int dfd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    CHECK_ERR(cfr(dfd, &oi, out, &oo, 10, 0), EISDIR);
    CHECK_ERR(cfr(in, (loff_t *)8, out, &oo, 10, 0), EFAULT);
    /* Across filesystems without a copy_file_range of their own: EXDEV
     * (Linux 5.19 and later). /dev/shm is a tmpfs of its own. */
    {
        const char *other = strncmp(dir, "/dev/shm/", 9) != 0 ? "/dev/shm/husk-files-cfr" : "/tmp/husk-files-cfr";
        int shm = CHECK_OK(open(other, O_RDWR | O_CREAT | O_TRUNC, 0600));
        unlink(other);
        CHECK_EQ(write(shm, "xyz", 3), 3);
        oi = 0, oo = 0;
        CHECK_ERR(cfr(shm, &oi, out, &oo, 3, 0), EXDEV);
        CHECK_ERR(cfr(in, &oi, shm, &oo, 3, 0), EXDEV);
        close(shm);
    }
    close(dfd), close(p[0]), close(p[1]), close(wo), close(ro), close(ap), close(out), close(in);
}

static void test_tmpfile(void) {
    mode_t old = umask(022);
    int fd = CHECK_OK(open(dir, O_TMPFILE | O_RDWR, 0666));
    struct stat st;
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_nlink, 0);
    CHECK_EQ(st.st_mode, S_IFREG | 0644);
    CHECK_EQ(st.st_size, 0);
    CHECK_EQ(write(fd, "tmpdata", 7), 7);
    /* Nothing new shows in the directory. */
    int dfd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    /* Made visible through /proc/self/fd. */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    CHECK_OK(linkat(AT_FDCWD, proc, dfd, "linked", AT_SYMLINK_FOLLOW));
    struct stat ls;
    CHECK_OK(stat(path("linked"), &ls));
    CHECK_EQ(ls.st_ino, st.st_ino);
    CHECK_EQ(ls.st_nlink, 1);
    CHECK_EQ(ls.st_size, 7);
    CHECK_ERR(linkat(AT_FDCWD, proc, dfd, "linked", AT_SYMLINK_FOLLOW), EEXIST);
    /* And with AT_EMPTY_PATH (root here). */
    int fd2 = CHECK_OK(open(dir, O_TMPFILE | O_WRONLY, 0600));
    CHECK_EQ(write(fd2, "second", 6), 6);
    CHECK_OK(linkat(fd2, "", dfd, "linked2", AT_EMPTY_PATH));
    char buf[16] = {0};
    CHECK_EQ(read_file(path("linked2"), buf, sizeof buf), 6);
    CHECK_STR(buf, "second");
    /* O_EXCL: never linkable. */
    int ex = CHECK_OK(open(dir, O_TMPFILE | O_RDWR | O_EXCL, 0600));
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", ex);
    CHECK_ERR(linkat(AT_FDCWD, proc, dfd, "never", AT_SYMLINK_FOLLOW), ENOENT);
    CHECK_ERR(linkat(ex, "", dfd, "never", AT_EMPTY_PATH), ENOENT);
    CHECK_ERR(access(path("never"), F_OK), ENOENT);
    /* The flags Linux refuses. */
    CHECK_ERR(open(dir, O_TMPFILE | O_RDONLY, 0600), EINVAL);
    CHECK_ERR(open(dir, O_TMPFILE | O_RDWR | O_CREAT, 0600), EINVAL);
    CHECK_ERR(open(dir, (O_TMPFILE & ~O_DIRECTORY) | O_RDWR, 0600), EINVAL);
    CHECK_ERR(open(path("linked"), O_TMPFILE | O_RDWR, 0600), ENOTDIR);
    CHECK_ERR(open(path("missing"), O_TMPFILE | O_RDWR, 0600), ENOENT);
    CHECK_ERR(open("/proc", O_TMPFILE | O_RDWR, 0600), EOPNOTSUPP);
    CHECK_ERR(open(dir, O_DIRECTORY | O_RDWR), EISDIR);
    /* A file never linked goes with its last descriptor. */
    close(ex), close(fd2), close(fd), close(dfd);
    umask(old);
}

int main(int argc, char **argv) {
    if (argc < 3)
        FAILF("usage: files DIR SECTION...");
    snprintf(dir, sizeof dir, "%s/husk-files-XXXXXX", argv[1]);
    if (mkdtemp(dir) == NULL)
        FAILF("mkdtemp %s: %s", dir, strerror(errno));
    atexit(rm_dir);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "fallocate") == 0)
            test_fallocate();
        else if (strcmp(argv[i], "zero") == 0)
            test_zero(1);
        else if (strcmp(argv[i], "nozero") == 0)
            test_zero(0);
        else if (strcmp(argv[i], "nowait") == 0)
            test_nowait(1);
        else if (strcmp(argv[i], "nonowait") == 0)
            test_nowait(0);
        else if (strcmp(argv[i], "rw2") == 0)
            test_rw2();
        else if (strcmp(argv[i], "cfr") == 0)
            test_cfr();
        else if (strcmp(argv[i], "tmpfile") == 0)
            test_tmpfile();
        else
            FAILF("unknown section %s", argv[i]);
    }
    return 0;
}
