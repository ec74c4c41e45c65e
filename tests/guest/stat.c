/* stat.c — stat/fstat/lstat/fstatat/statx/access/statfs. */
#include "check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

int main(void) {
    const char *f = scratch_path("file");
    const char *d = scratch_path("dir");
    const char *l = scratch_path("link");
    const char *h = scratch_path("hard");
    struct stat st, st2;

    umask(022);
    int fd = CHECK_OK(open(f, O_CREAT | O_WRONLY | O_EXCL, 0640));
    CHECK_EQ(write(fd, "0123456789", 10), 10);

    /* fstat of a regular file. */
    CHECK_OK(fstat(fd, &st));
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0640);
    CHECK_EQ(st.st_size, 10);
    CHECK_EQ(st.st_nlink, 1);
    CHECK_EQ(st.st_uid, geteuid());
    CHECK_EQ(st.st_gid, getegid());
    CHECK(st.st_blksize > 0);
    CHECK(st.st_ino != 0);

    /* stat by path agrees with fstat. */
    CHECK_OK(stat(f, &st2));
    CHECK_EQ(st2.st_ino, st.st_ino);
    CHECK_EQ(st2.st_dev, st.st_dev);
    CHECK_EQ(st2.st_size, 10);
    CHECK_OK(close(fd));

    /* directory: type bits and nlink == 2. */
    CHECK_OK(mkdir(d, 0755));
    CHECK_OK(stat(d, &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_EQ(st.st_nlink, 2);
    /* a subdirectory bumps the parent's link count. */
    CHECK_OK(mkdir(scratch_path("dir/sub"), 0755));
    CHECK_OK(stat(d, &st));
    CHECK_EQ(st.st_nlink, 3);

    /* symlink: lstat sees the link, stat sees the target. */
    CHECK_OK(symlink("file", l));
    CHECK_OK(lstat(l, &st));
    CHECK(S_ISLNK(st.st_mode));
    CHECK_EQ(st.st_size, 4); /* strlen("file") */
    CHECK_OK(stat(l, &st));
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_size, 10);

    /* hard link: same inode, nlink 2. */
    CHECK_OK(link(f, h));
    CHECK_OK(stat(f, &st));
    CHECK_OK(stat(h, &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    CHECK_EQ(st.st_nlink, 2);
    CHECK_EQ(st2.st_nlink, 2);

    /* fstatat relative to a dirfd, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH. */
    int dfd = CHECK_OK(open(scratch_dir(), O_RDONLY | O_DIRECTORY));
    CHECK_OK(fstatat(dfd, "link", &st, AT_SYMLINK_NOFOLLOW));
    CHECK(S_ISLNK(st.st_mode));
    CHECK_OK(fstatat(dfd, "link", &st, 0));
    CHECK(S_ISREG(st.st_mode));
    CHECK_OK(fstatat(dfd, "", &st, AT_EMPTY_PATH));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_ERR(fstatat(dfd, "", &st, 0), ENOENT);
    CHECK_ERR(fstatat(dfd, "file", &st, 0x40000 /* bogus flag */), EINVAL);
    fd = CHECK_OK(open(f, O_RDONLY));
    CHECK_OK(fstatat(fd, "", &st, AT_EMPTY_PATH));
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_size, 10);
    CHECK_OK(close(fd));
    /* O_PATH fd works with fstat. */
    fd = CHECK_OK(open(l, O_PATH | O_NOFOLLOW));
    CHECK_OK(fstat(fd, &st));
    CHECK(S_ISLNK(st.st_mode));
    CHECK_OK(close(fd));

    /* statx basic fields. */
    struct statx sx;
    memset(&sx, 0xff, sizeof sx);
    CHECK_OK(statx(dfd, "file", 0, STATX_BASIC_STATS, &sx));
    CHECK((sx.stx_mask & (STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_INO |
                          STATX_NLINK)) ==
          (STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_INO | STATX_NLINK));
    CHECK(S_ISREG(sx.stx_mode));
    CHECK_EQ(sx.stx_size, 10);
    CHECK_EQ(sx.stx_nlink, 2);
    CHECK_OK(stat(f, &st));
    CHECK_EQ(sx.stx_ino, st.st_ino);
    CHECK_EQ(makedev(sx.stx_dev_major, sx.stx_dev_minor), st.st_dev);
    CHECK_EQ(sx.stx_uid, st.st_uid);
    CHECK_OK(statx(dfd, "link", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx));
    CHECK(S_ISLNK(sx.stx_mode));
    CHECK_OK(statx(AT_FDCWD, d, 0, STATX_BASIC_STATS, &sx));
    CHECK(S_ISDIR(sx.stx_mode));
    CHECK_EQ(sx.stx_nlink, 3);
    CHECK_ERR(statx(dfd, "nope", 0, STATX_BASIC_STATS, &sx), ENOENT);

    /* ENOENT / ENOTDIR from stat. */
    CHECK_ERR(stat(scratch_path("missing"), &st), ENOENT);
    CHECK_ERR(stat(scratch_path("file/x"), &st), ENOTDIR);
    CHECK_ERR(stat("", &st), ENOENT);
    /* dangling symlink: lstat ok, stat ENOENT. */
    CHECK_OK(symlink("nowhere", scratch_path("dangling")));
    CHECK_OK(lstat(scratch_path("dangling"), &st));
    CHECK_ERR(stat(scratch_path("dangling"), &st), ENOENT);

    /* access/faccessat. */
    CHECK_OK(access(f, F_OK));
    CHECK_OK(access(f, R_OK | W_OK));
    CHECK_ERR(access(scratch_path("missing"), F_OK), ENOENT);
    CHECK_OK(faccessat(dfd, "file", F_OK, 0));
    CHECK_ERR(faccessat(dfd, "missing", F_OK, 0), ENOENT);
    CHECK_OK(faccessat(dfd, "dangling", F_OK, AT_SYMLINK_NOFOLLOW));
    CHECK_ERR(faccessat(dfd, "dangling", F_OK, 0), ENOENT);
    CHECK_ERR(access(f, 0x40), EINVAL);
    CHECK_OK(access("/", R_OK | X_OK));
    CHECK_OK(access("/etc/passwd", R_OK));

    /* chmod is reflected by stat. */
    CHECK_OK(chmod(f, 0600));
    CHECK_OK(stat(h, &st));
    CHECK_EQ(st.st_mode & 07777, 0600);
    CHECK_OK(fchmodat(dfd, "file", 0604, 0));
    CHECK_OK(stat(f, &st));
    CHECK_EQ(st.st_mode & 07777, 0604);

    /* statfs on /tmp and fstatfs. */
    struct statfs sfs;
    CHECK_OK(statfs("/tmp", &sfs));
    CHECK(sfs.f_bsize > 0);
    CHECK_OK(fstatfs(dfd, &sfs));
    CHECK_ERR(statfs(scratch_path("missing"), &sfs), ENOENT);
    CHECK_OK(close(dfd));

    /* character devices. */
    CHECK_OK(stat("/dev/null", &st));
    CHECK(S_ISCHR(st.st_mode));
    CHECK_EQ(major(st.st_rdev), 1);
    CHECK_EQ(minor(st.st_rdev), 3);
    CHECK_OK(stat("/dev/zero", &st));
    CHECK_EQ(st.st_rdev, makedev(1, 5));

    /* root directory. */
    CHECK_OK(stat("/", &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_OK(stat("/..", &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    return 0;
}
