/* mount_flags.c — what a mount's flags and a tmpfs's limits enforce, as
 * Linux does: MS_RDONLY (EROFS for access(W_OK), creat, mkdir, open for
 * writing or O_TRUNC, chmod, utimes, also through a working directory
 * reached before a read-only remount; FIFOs and devices stay writable),
 * MS_NOEXEC for mmap (EPERM) and mprotect (EACCES) of PROT_EXEC, statfs
 * f_flags and the flags and tmpfs options in /proc/self/mountinfo, a
 * remount keeping its atime flags, MS_NOSYMFOLLOW (ELOOP), tmpfs size= counting data pages
 * alone (fallocate, partial writes, long symlinks) and nr_inodes=, a bind
 * of a file onto a directory (ENOTDIR), no MS_MOVE out of a shared
 * parent (EINVAL), and a mount on an anonymous
 * file's /proc/self/fd link (ENOENT).
 *
 * Run as root. It first moves into a private mount namespace of its own,
 * so natively it changes nothing outside itself. */
#define _GNU_SOURCE
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>

#define PAGE 4096
#ifndef ST_NOSYMFOLLOW
#define ST_NOSYMFOLLOW 0x2000
#endif

static char dir[96], base_dir_other[96];

static const char *at(const char *name) {
    static char bufs[4][160];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, 160, "%s/%s", dir, name);
    return b;
}

static void make_file(const char *path) {
    int fd = CHECK_OK(open(path, O_CREAT | O_WRONLY, 0644));
    CHECK_OK(close(fd));
}

static unsigned long fs_flags(const char *path) {
    struct statfs s;
    CHECK_OK(statfs(path, &s));
    return s.f_flags;
}

static void read_only(void) {
    CHECK_OK(mount("none", dir, "tmpfs", MS_RDONLY, "mode=0777"));
    CHECK_ERR(access(dir, W_OK), EROFS);
    CHECK_OK(access(dir, R_OK | X_OK));
    CHECK_ERR(open(at("f"), O_RDWR | O_CREAT, 0644), EROFS);
    CHECK_ERR(mkdir(at("d"), 0755), EROFS);
    CHECK(fs_flags(dir) & ST_RDONLY);
    CHECK(strstr(mountinfo_of(dir), " ro,relatime ") != NULL);
    CHECK_OK(umount2(dir, 0));

    /* Made writable, filled, then remounted read-only while this
     * process's working directory is inside. */
    CHECK_OK(mount("none", dir, "tmpfs", 0, NULL));
    make_file(at("reg"));
    CHECK_OK(mkfifo(at("fifo"), 0666));
    CHECK_OK(mkdir(at("sub"), 0755));
    CHECK_OK(chdir(at("sub")));
    CHECK_OK(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL));
    CHECK_ERR(open("new", O_CREAT | O_WRONLY, 0644), EROFS);
    CHECK_ERR(mkdir("../d", 0755), EROFS);
    CHECK_ERR(symlink("x", "l"), EROFS);
    CHECK_ERR(unlink("../reg"), EROFS);
    CHECK_ERR(rename("../reg", "../reg2"), EROFS);
    CHECK_ERR(chmod("../reg", 0600), EROFS);
    CHECK_ERR(utimes("../reg", NULL), EROFS);
    CHECK_ERR(truncate("../reg", 0), EROFS);
    CHECK_ERR(open("../reg", O_WRONLY), EROFS);
    CHECK_ERR(open("../reg", O_RDONLY | O_TRUNC), EROFS);
    CHECK_ERR(access("../reg", W_OK), EROFS);
    int fd = CHECK_OK(open("../reg", O_RDONLY));
    CHECK_OK(close(fd));
    /* Not the filesystem's data: still writable. */
    /* A bind made from here is read-only too. */
    CHECK_OK(mount(".", base_dir_other, NULL, MS_BIND, NULL));
    CHECK_ERR(access(base_dir_other, W_OK), EROFS);
    CHECK_OK(umount2(base_dir_other, 0));
    CHECK_OK(access("../fifo", W_OK));
    fd = CHECK_OK(open("../fifo", O_RDWR));
    CHECK_EQ(write(fd, "x", 1), 1);
    CHECK_OK(close(fd));
    /* Writable again: the same working directory sees it at once. */
    CHECK_OK(mount(NULL, dir, NULL, MS_REMOUNT, NULL));
    CHECK_OK(mkdir("../d", 0755));
    CHECK_OK(chdir("/"));
    CHECK_OK(umount2(dir, 0));
}

/* A bind of a file made read-only: a device file is still written. */
static void read_only_bind_of_a_device(void) {
    make_file(at("null"));
    CHECK_OK(mount("/dev/null", at("null"), NULL, MS_BIND, NULL));
    CHECK_OK(mount("/dev/null", at("null"), NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL));
    CHECK(strstr(mountinfo_of(at("null")), " ro,") != NULL);
    int fd = CHECK_OK(open(at("null"), O_RDWR));
    CHECK_EQ(write(fd, "hello", 5), 5);
    CHECK_OK(close(fd));
    CHECK_OK(umount2(at("null"), 0));
    CHECK_OK(unlink(at("null")));
}

static void noexec(void) {
    CHECK_OK(mount("none", dir, "tmpfs", MS_NOEXEC | MS_NOSUID | MS_NODEV, NULL));
    int fd = CHECK_OK(open(at("f"), O_CREAT | O_RDWR, 0777));
    CHECK_OK(ftruncate(fd, PAGE));
    CHECK(mmap(NULL, PAGE, PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED);
    CHECK_EQ(errno, EPERM);
    void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK(p != MAP_FAILED);
    CHECK_ERR(mprotect(p, PAGE, PROT_READ | PROT_EXEC), EACCES);
    CHECK_OK(mprotect(p, PAGE, PROT_READ));
    CHECK_OK(munmap(p, PAGE));
    CHECK_OK(close(fd));
    unsigned long f = fs_flags(dir);
    CHECK(f & ST_NOEXEC);
    CHECK(f & ST_NOSUID);
    CHECK(f & ST_NODEV);
    CHECK(!(f & ST_RDONLY));
    CHECK(strstr(mountinfo_of(dir), " rw,nosuid,nodev,noexec,relatime ") != NULL);
    /* A bind remount takes flags away. */
    CHECK_OK(mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_NOEXEC, NULL));
    f = fs_flags(dir);
    CHECK(f & ST_NOEXEC);
    CHECK(!(f & (ST_NOSUID | ST_NODEV)));
    CHECK_OK(mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND, NULL));
    CHECK(!(fs_flags(dir) & ST_NOEXEC));
    fd = CHECK_OK(open(at("f"), O_RDONLY));
    p = mmap(NULL, PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    CHECK(p != MAP_FAILED);
    CHECK_OK(munmap(p, PAGE));
    CHECK_OK(close(fd));
    CHECK_OK(umount2(dir, 0));
}

static void atime_flags(void) {
    CHECK_OK(mount("none", dir, "tmpfs", MS_NOATIME | MS_NODIRATIME, "mode=0123"));
    const char *info = mountinfo_of(dir);
    CHECK(strstr(info, " rw,noatime,nodiratime ") != NULL);
    CHECK(strstr(info, " - tmpfs none rw,mode=123\n") != NULL);
    unsigned long f = fs_flags(dir);
    CHECK(f & ST_NOATIME);
    CHECK(f & ST_NODIRATIME);
    CHECK(!(f & ST_RELATIME));
    /* A remount naming no atime flag keeps them. */
    CHECK_OK(mount(NULL, dir, NULL, MS_REMOUNT | MS_NOSUID, NULL));
    CHECK(strstr(mountinfo_of(dir), " rw,nosuid,noatime,nodiratime ") != NULL);
    CHECK_OK(mount(NULL, dir, NULL, MS_REMOUNT | MS_STRICTATIME, NULL));
    CHECK(strstr(mountinfo_of(dir), " rw - ") != NULL);
    CHECK_OK(umount2(dir, 0));
    CHECK_OK(mount("none", dir, "tmpfs", 0, NULL));
    CHECK(fs_flags(dir) & ST_RELATIME);
    CHECK(strstr(mountinfo_of(dir), " rw,relatime - tmpfs none rw\n") != NULL);
    CHECK_OK(umount2(dir, 0));
}

static void nosymfollow(void) {
    CHECK_OK(mount("none", dir, "tmpfs", MS_NOSYMFOLLOW, NULL));
    make_file(at("f"));
    CHECK_OK(mkdir(at("d"), 0755));
    CHECK_OK(symlink("f", at("l")));
    CHECK_OK(symlink("d", at("ld")));
    CHECK_ERR(open(at("l"), O_RDONLY), ELOOP);
    CHECK_ERR(stat(at("ld/x"), &(struct stat){0}), ELOOP);
    CHECK_OK(lstat(at("l"), &(struct stat){0}));
    char buf[8] = {0};
    CHECK_EQ(readlink(at("l"), buf, sizeof buf), 1);
    CHECK(fs_flags(dir) & ST_NOSYMFOLLOW);
    CHECK(strstr(mountinfo_of(dir), " rw,relatime,nosymfollow ") != NULL);
    CHECK_OK(mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND, NULL));
    int fd = CHECK_OK(open(at("l"), O_RDONLY));
    CHECK_OK(close(fd));
    CHECK_OK(umount2(dir, 0));
}

static void tmpfs_size(void) {
    CHECK_OK(mount("none", dir, "tmpfs", 0, "size=6000"));
    CHECK(strstr(mountinfo_of(dir), " - tmpfs none rw,size=8k\n") != NULL);
    struct statfs s;
    CHECK_OK(statfs(dir, &s));
    CHECK_EQ(s.f_blocks, 2);
    /* Directories and empty files take no page. */
    CHECK_OK(mkdir(at("d"), 0755));
    int fd = CHECK_OK(open(at("f"), O_CREAT | O_RDWR, 0644));
    CHECK_ERR(fallocate(fd, 0, 0, 2 * PAGE + 1), ENOSPC);
    struct stat st;
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_size, 0);
    CHECK_OK(fallocate(fd, 0, 0, PAGE));
    /* A symlink of 127 bytes is kept inline; one of 128 takes a page. */
    char target[129];
    memset(target, 'a', 128);
    target[127] = 0;
    CHECK_OK(symlink(target, at("short")));
    target[127] = 'a';
    target[128] = 0;
    CHECK_OK(symlink(target, at("long")));
    CHECK_ERR(symlink(target, at("long2")), ENOSPC);
    CHECK_ERR(fallocate(fd, 0, 0, PAGE + 1), ENOSPC);
    CHECK_OK(unlink(at("long")));
    /* A write stops at the limit; the next one fails. */
    CHECK_OK(lseek(fd, 2 * PAGE - 2, SEEK_SET));
    CHECK_EQ(write(fd, "abcd", 4), 2);
    CHECK_ERR(write(fd, "abcd", 4), ENOSPC);
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_size, 2 * PAGE);
    CHECK_OK(ftruncate(fd, 0));
    CHECK_OK(fallocate(fd, 0, 0, 2 * PAGE));
    CHECK_OK(close(fd));
    CHECK_OK(unlink(at("f")));
    CHECK_OK(unlink(at("short")));
    CHECK_OK(rmdir(at("d")));
    CHECK_OK(umount2(dir, 0));

    /* nr_inodes counts the root too. */
    CHECK_OK(mount("none", dir, "tmpfs", 0, "nr_inodes=3"));
    CHECK(strstr(mountinfo_of(dir), " - tmpfs none rw,nr_inodes=3\n") != NULL);
    CHECK_OK(statfs(dir, &s));
    CHECK_EQ(s.f_files, 3);
    CHECK_EQ(s.f_ffree, 2);
    make_file(at("a"));
    CHECK_OK(mkdir(at("b"), 0755));
    CHECK_ERR(open(at("c"), O_CREAT | O_WRONLY, 0644), ENOSPC);
    CHECK_ERR(mkdir(at("c"), 0755), ENOSPC);
    CHECK_OK(unlink(at("a")));
    make_file(at("c"));
    CHECK_OK(umount2(dir, 0));
    CHECK_ERR(mount("none", dir, "tmpfs", 0, "size"), EINVAL);
}

static void bind_places(void) {
    CHECK_OK(mount("none", dir, "tmpfs", 0, NULL));
    make_file(at("file"));
    CHECK_OK(mkdir(at("sub"), 0755));
    CHECK_ERR(mount(at("file"), at("sub"), NULL, MS_BIND, NULL), ENOTDIR);
    CHECK_ERR(mount(at("sub"), at("file"), NULL, MS_BIND, NULL), ENOTDIR);
    /* No move of a mount whose parent is shared. */
    CHECK_OK(mount(NULL, dir, NULL, MS_SHARED, NULL));
    CHECK_OK(mount("none", at("sub"), "tmpfs", 0, NULL));
    CHECK_OK(mkdir(at("sub2"), 0755));
    CHECK_ERR(mount(at("sub"), at("sub2"), NULL, MS_MOVE, NULL), EINVAL);
    CHECK_OK(umount2(at("sub"), 0));
    CHECK_OK(umount2(dir, 0));
    int efd = CHECK_OK(eventfd(0, 0));
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", efd);
    CHECK_ERR(mount("none", path, "tmpfs", 0, NULL), ENOENT);
    CHECK_OK(close(efd));
}

int main(void) {
    CHECK_OK(unshare(CLONE_NEWNS));
    CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    snprintf(dir, sizeof dir, "%s", scratch_path("m"));
    CHECK_OK(mkdir(dir, 0755));
    snprintf(base_dir_other, sizeof base_dir_other, "%s", scratch_path("other"));
    CHECK_OK(mkdir(base_dir_other, 0755));
    read_only();
    read_only_bind_of_a_device();
    noexec();
    atime_flags();
    nosymfollow();
    tmpfs_size();
    bind_places();
    return 0;
}
