/* devpts_mount.c — devpts mounted inside the sandbox as a container
 * runtime mounts it: mount("devpts", dir, "devpts", 0,
 * "newinstance,ptmxmode=0666") shown in /proc/self/mountinfo, with a
 * ptmx of its own whose terminals are numbered from 0 and shown only
 * there, an unknown option EINVAL, umount; and mount
 * propagation beyond "shared": a bind of a shared mount in the same
 * peer group, MS_SLAVE showing "master:N" of that group, MS_PRIVATE
 * clearing both.
 *
 * Run as root; it first moves into a private mount namespace of its own,
 * so natively it changes nothing outside. */
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static char base[64], pts[96], a[96], b[96];

/* The number after `tag` ("shared:" or "master:") in the optional
 * fields of `path`'s mountinfo line, or -1 without one. */
static long tag_of(const char *path, const char *tag) {
    const char *line = mountinfo_of(path);
    CHECK(line[0] != 0);
    const char *end = strstr(line, " - ");
    CHECK(end != NULL);
    char want[16];
    snprintf(want, sizeof want, " %s", tag);
    const char *t = strstr(line, want);
    if (t == NULL || t > end)
        return -1;
    return strtol(t + strlen(want), NULL, 10);
}

/* The names in directory `dir`, counted. */
static int entries_of(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* A new instance is a devpts of its own: its ptmx (mode ptmxmode) makes
 * terminals numbered from 0 that only it shows. */
static void devpts(void) {
    CHECK_OK(mount("devpts", pts, "devpts", 0, "newinstance,ptmxmode=0666"));
    const char *info = mountinfo_of(pts);
    CHECK(strstr(info, " - devpts devpts ") != NULL);
    struct stat st, parent;
    CHECK_OK(stat(pts, &st));
    CHECK_OK(stat(base, &parent));
    CHECK(st.st_dev != parent.st_dev);

    char path[128];
    snprintf(path, sizeof path, "%s/ptmx", pts);
    CHECK_OK(stat(path, &st));
    CHECK(S_ISCHR(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0666);
    CHECK_EQ(major(st.st_rdev), 5);
    CHECK_EQ(minor(st.st_rdev), 2);
    CHECK_EQ(entries_of(pts), 1);
    int m0 = CHECK_OK(open(path, O_RDWR | O_NOCTTY));
    int m1 = CHECK_OK(open(path, O_RDWR | O_NOCTTY));
    int n = -1, unlock = 0;
    CHECK_OK(ioctl(m0, TIOCGPTN, &n));
    CHECK_EQ(n, 0);
    CHECK_OK(ioctl(m1, TIOCGPTN, &n));
    CHECK_EQ(n, 1);
    CHECK_EQ(entries_of(pts), 3);
    /* Not in /dev/pts: a /dev/pts/0 there is another terminal. */
    struct stat mine, other;
    snprintf(path, sizeof path, "%s/0", pts);
    CHECK_OK(stat(path, &mine));
    CHECK_OK(stat(pts, &other));
    CHECK_EQ(mine.st_dev, other.st_dev);
    if (stat("/dev/pts/0", &other) == 0)
        CHECK(other.st_dev != mine.st_dev);

    /* Its replica is the terminal the master drives. */
    CHECK_OK(ioctl(m0, TIOCSPTLCK, &unlock));
    snprintf(path, sizeof path, "%s/0", pts);
    CHECK_OK(stat(path, &st));
    CHECK(S_ISCHR(st.st_mode));
    CHECK_EQ(major(st.st_rdev), 136);
    CHECK_EQ(minor(st.st_rdev), 0);
    int r0 = CHECK_OK(open(path, O_RDWR | O_NOCTTY));
    CHECK_EQ(write(m0, "hi\n", 3), 3);
    char buf[8] = {0};
    CHECK_EQ(read(r0, buf, sizeof buf), 3);
    CHECK(memcmp(buf, "hi\n", 3) == 0);
    /* TIOCGPTPEER opens that same replica. */
    int p0 = CHECK_OK(ioctl(m0, TIOCGPTPEER, O_RDWR | O_NOCTTY));
    struct stat a, b;
    CHECK_OK(fstat(p0, &a));
    CHECK_OK(fstat(r0, &b));
    CHECK_EQ(a.st_rdev, b.st_rdev);
    CHECK_EQ(a.st_dev, b.st_dev);
    close(p0);
    close(r0);
    close(m0);
    close(m1);
    CHECK_EQ(entries_of(pts), 1);

    CHECK_ERR(mount("devpts", pts, "devpts", 0, "newinstance,bogus=1"), EINVAL);
    CHECK_OK(umount2(pts, 0));
    CHECK_EQ(mountinfo_of(pts)[0], 0);
}

static void propagation(void) {
    CHECK_OK(mount("none", a, "tmpfs", 0, NULL));
    CHECK_EQ(tag_of(a, "shared:"), -1);
    CHECK_EQ(tag_of(a, "master:"), -1);
    CHECK_OK(mount(NULL, a, NULL, MS_SHARED, NULL));
    long group = tag_of(a, "shared:");
    CHECK(group > 0);
    /* A bind of a shared mount is a peer: the same group. */
    CHECK_OK(mount(a, b, NULL, MS_BIND, NULL));
    CHECK_EQ(tag_of(b, "shared:"), group);
    /* A slave of that group receives from it and is no longer a peer. */
    CHECK_OK(mount(NULL, b, NULL, MS_SLAVE, NULL));
    CHECK_EQ(tag_of(b, "shared:"), -1);
    CHECK_EQ(tag_of(b, "master:"), group);
    CHECK_EQ(tag_of(a, "shared:"), group);
    /* Private: neither. A private mount made a slave stays private. */
    CHECK_OK(mount(NULL, b, NULL, MS_PRIVATE, NULL));
    CHECK_EQ(tag_of(b, "shared:"), -1);
    CHECK_EQ(tag_of(b, "master:"), -1);
    CHECK_OK(mount(NULL, b, NULL, MS_SLAVE, NULL));
    CHECK_EQ(tag_of(b, "master:"), -1);
    CHECK_EQ(tag_of(b, "shared:"), -1);
    CHECK_OK(umount2(b, 0));
    CHECK_OK(umount2(a, 0));
}

int main(void) {
    CHECK_OK(unshare(CLONE_NEWNS));
    CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    snprintf(base, sizeof base, "/tmp/devpts.XXXXXX");
    CHECK(mkdtemp(base) != NULL);
    snprintf(pts, sizeof pts, "%s/pts", base);
    snprintf(a, sizeof a, "%s/a", base);
    snprintf(b, sizeof b, "%s/b", base);
    CHECK_OK(mkdir(pts, 0755));
    CHECK_OK(mkdir(a, 0755));
    CHECK_OK(mkdir(b, 0755));
    devpts();
    propagation();
    CHECK_OK(rmdir(pts));
    CHECK_OK(rmdir(a));
    CHECK_OK(rmdir(b));
    CHECK_OK(rmdir(base));
    puts("devpts_mount ok");
    return 0;
}
