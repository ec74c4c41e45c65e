/* devpts_mount.c — devpts mounted inside the sandbox as a container
 * runtime mounts it: mount("devpts", dir, "devpts", 0,
 * "newinstance,ptmxmode=0666") shown in /proc/self/mountinfo, an unknown
 * option EINVAL, umount; and mount
 * propagation beyond "shared": a bind of a shared mount in the same
 * peer group, MS_SLAVE showing "master:N" of that group, MS_PRIVATE
 * clearing both.
 *
 * Run as root; it first moves into a private mount namespace of its own,
 * so natively it changes nothing outside. */
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

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

/* Only the mount itself: husk's devpts mount is the sandbox's one
 * instance (no ptmx node of its own, numbering shared with /dev/pts), so
 * the new instance's ptmx and its numbering from 0 are not checked here
 * (the syscall table says so). */
static void devpts(void) {
    CHECK_OK(mount("devpts", pts, "devpts", 0, "newinstance,ptmxmode=0666"));
    const char *info = mountinfo_of(pts);
    CHECK(strstr(info, " - devpts devpts ") != NULL);
    struct stat st, parent;
    CHECK_OK(stat(pts, &st));
    CHECK_OK(stat(base, &parent));
    CHECK(st.st_dev != parent.st_dev);
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
