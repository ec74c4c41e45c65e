/* pivot_root.c — pivot_root(2) as a container runtime uses it: in a new
 * mount namespace a tmpfs becomes the root, the old root is reachable
 * under put_old until umount2(MNT_DETACH) drops it, and the parent's
 * namespace keeps its root. The refusals: ENOENT for a missing path,
 * EINVAL when new_root is not a mount point or put_old is not under it,
 * EBUSY when new_root is the current root, ENOTDIR, EPERM without
 * privilege. Inside a chroot whose root is a mount (a runtime nested in
 * a container): the pivot swaps that mount, getcwd outside the root
 * says "(unreachable)", and mountinfo lists only the mounts under the
 * root, spelled from it.
 *
 * Run as root; everything happens in children with mount namespaces of
 * their own, so natively it changes nothing outside. */
#include "check.h"
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>

static char base[64], newroot[96], other[96];

static long pivot(const char *new_root, const char *put_old) {
    return syscall(SYS_pivot_root, new_root, put_old);
}

static void write_file(const char *path, const char *text) {
    int fd = CHECK_OK(open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644));
    CHECK_EQ(write(fd, text, strlen(text)), (long)strlen(text));
    CHECK_OK(close(fd));
}

/* A private mount namespace with a tmpfs on `newroot` holding a marker,
 * a put_old directory and a plain subdirectory; a second tmpfs on
 * `other`. */
static void setup(void) {
    char p[160];
    CHECK_OK(unshare(CLONE_NEWNS));
    CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    CHECK_OK(mount("none", newroot, "tmpfs", 0, "mode=0755"));
    CHECK_OK(mount("none", other, "tmpfs", 0, NULL));
    snprintf(p, sizeof p, "%s/old", newroot);
    CHECK_OK(mkdir(p, 0755));
    snprintf(p, sizeof p, "%s/sub", newroot);
    CHECK_OK(mkdir(p, 0755));
    snprintf(p, sizeof p, "%s/sub/old", newroot);
    CHECK_OK(mkdir(p, 0755));
    snprintf(p, sizeof p, "%s/marker", newroot);
    write_file(p, "new root\n");
    snprintf(p, sizeof p, "%s/file", other);
    write_file(p, "x");
}

static int refusals(void) {
    char p[160], q[160];
    setup();
    snprintf(p, sizeof p, "%s/missing", newroot);
    CHECK_ERR(pivot(p, newroot), ENOENT);
    snprintf(p, sizeof p, "%s/missing", newroot);
    CHECK_ERR(pivot(newroot, p), ENOENT);
    /* new_root a directory of the tmpfs, not its mount point */
    snprintf(p, sizeof p, "%s/sub", newroot);
    snprintf(q, sizeof q, "%s/sub/old", newroot);
    CHECK_ERR(pivot(p, q), EINVAL);
    /* put_old on another mount, not under new_root */
    CHECK_ERR(pivot(newroot, other), EINVAL);
    /* new_root is the current root */
    CHECK_ERR(pivot("/", "/"), EBUSY);
    snprintf(p, sizeof p, "%s/marker", newroot);
    CHECK_ERR(pivot(p, newroot), ENOTDIR);
    /* nothing changed */
    struct statfs sf;
    CHECK_OK(statfs(newroot, &sf));
    CHECK_EQ(sf.f_type, TMPFS_MAGIC);
    CHECK_OK(access(p, F_OK));
    return 0;
}

static int pivots(void) {
    char p[160];
    setup();
    struct stat newst, rootst, oldst;
    CHECK_OK(stat(newroot, &newst));
    CHECK_OK(stat("/", &rootst));
    CHECK(newst.st_dev != rootst.st_dev);
    CHECK_OK(chdir(newroot));
    CHECK_OK(pivot(".", "old"));
    CHECK_OK(chdir("/"));
    /* / is the tmpfs now: its marker at the top, the old root under /old */
    struct stat st;
    CHECK_OK(stat("/", &st));
    CHECK_EQ(st.st_dev, newst.st_dev);
    CHECK_EQ(st.st_ino, newst.st_ino);
    struct statfs sf;
    CHECK_OK(statfs("/", &sf));
    CHECK_EQ(sf.f_type, TMPFS_MAGIC);
    CHECK_OK(access("/marker", F_OK));
    CHECK_OK(stat("/old", &oldst));
    CHECK_EQ(oldst.st_dev, rootst.st_dev);
    CHECK_EQ(oldst.st_ino, rootst.st_ino);
    snprintf(p, sizeof p, "/old%s/marker", newroot);
    CHECK_ERR(access(p, F_OK), ENOENT); /* new_root moved away from there */
    snprintf(p, sizeof p, "/old%s/file", other);
    CHECK_OK(access(p, F_OK)); /* the other mount came along under /old */
    /* the old root is still busy with mounts below it */
    CHECK_ERR(umount2("/old", 0), EBUSY);
    CHECK_OK(umount2("/old", MNT_DETACH));
    CHECK_OK(stat("/old", &oldst));
    CHECK_EQ(oldst.st_dev, newst.st_dev);
    CHECK_ERR(access(p, F_OK), ENOENT);
    CHECK_OK(rmdir("/old"));
    /* ".." at the new root stays there */
    CHECK_OK(stat("/..", &st));
    CHECK_EQ(st.st_ino, newst.st_ino);
    return 0;
}

static long read_at(int dirfd, const char *name, char *buf, size_t cap) {
    int fd = CHECK_OK(openat(dirfd, name, O_RDONLY));
    long n = CHECK_OK(read(fd, buf, cap - 1));
    buf[n] = 0;
    CHECK_OK(close(fd));
    return n;
}

static int lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int from_chroot(void) {
    char p[160], buf[4096];
    CHECK_OK(unshare(CLONE_NEWNS));
    CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    CHECK_OK(mount("none", other, "tmpfs", 0, "mode=0755"));
    snprintf(p, sizeof p, "%s/in", other);
    CHECK_OK(mkdir(p, 0755));
    CHECK_OK(mount("none", p, "tmpfs", 0, "mode=0755"));
    snprintf(p, sizeof p, "%s/in/old", other);
    CHECK_OK(mkdir(p, 0755));
    snprintf(p, sizeof p, "%s/in/marker", other);
    write_file(p, "inner\n");
    int proc = CHECK_OK(open("/proc", O_RDONLY | O_DIRECTORY));
    CHECK_OK(chdir(base));
    CHECK_OK(chroot(other));
    CHECK(syscall(SYS_getcwd, buf, sizeof buf) > 0);
    snprintf(p, sizeof p, "(unreachable)%s", base);
    CHECK_STR(buf, p);
    read_at(proc, "self/mountinfo", buf, sizeof buf);
    CHECK_EQ(lines(buf), 2);
    CHECK(strstr(buf, " / / rw,relatime - tmpfs none rw,mode=755\n") != NULL);
    CHECK(strstr(buf, " / /in rw,relatime - tmpfs none rw,mode=755\n") != NULL);
    CHECK(strstr(buf, base) == NULL);
    read_at(proc, "self/mounts", buf, sizeof buf);
    CHECK_STR(buf, "none / tmpfs rw,relatime,mode=755 0 0\nnone /in tmpfs rw,relatime,mode=755 0 0\n");
    CHECK_OK(chdir("/"));
    CHECK_OK(mkdir("/elsewhere", 0755));
    CHECK_ERR(pivot("/in", "/elsewhere"), EBUSY); /* put_old on the root's mount */
    CHECK_OK(pivot("/in", "/in/old"));
    CHECK(syscall(SYS_getcwd, buf, sizeof buf) > 0);
    CHECK_STR(buf, "/");
    CHECK_OK(access("/marker", F_OK));
    CHECK_OK(access("/old/in", F_OK));
    read_at(proc, "self/mountinfo", buf, sizeof buf);
    CHECK_EQ(lines(buf), 2);
    CHECK(strstr(buf, " / /old rw,relatime - tmpfs none rw,mode=755\n") != NULL);
    CHECK_OK(umount2("/old", MNT_DETACH));
    read_at(proc, "self/mountinfo", buf, sizeof buf);
    CHECK_EQ(lines(buf), 1);
    return 0;
}

static int unprivileged(void) {
    CHECK_OK(setgid(65534));
    CHECK_OK(setuid(65534));
    CHECK_ERR(pivot(newroot, newroot), EPERM);
    return 0;
}

int main(void) {
    snprintf(base, sizeof base, "/tmp/pivot.XXXXXX");
    CHECK(mkdtemp(base) != NULL);
    CHECK_OK(chmod(base, 0755));
    snprintf(newroot, sizeof newroot, "%s/new", base);
    snprintf(other, sizeof other, "%s/other", base);
    CHECK_OK(mkdir(newroot, 0755));
    CHECK_OK(mkdir(other, 0755));
    CHECK_EQ(exit_status_of(refusals), 0);
    CHECK_EQ(exit_status_of(pivots), 0);
    CHECK_EQ(exit_status_of(from_chroot), 0);
    CHECK_EQ(exit_status_of(unprivileged), 0);
    /* The pivots happened in the children's namespaces only. */
    char p[160];
    snprintf(p, sizeof p, "%s/marker", newroot);
    CHECK_ERR(access(p, F_OK), ENOENT);
    CHECK_OK(rmdir(newroot));
    CHECK_OK(rmdir(other));
    CHECK_OK(rmdir(base));
    puts("pivot_root ok");
    return 0;
}
