/* mounts.c — mount(2), umount2(2), chroot(2) and unshare(2) as a
 * privileged guest uses them: a tmpfs with size=/mode= (ENOSPC past the
 * size), bind mounts and a read-only remount (EROFS), noexec (EACCES at
 * execve), propagation in /proc/self/mountinfo, MS_MOVE, EBUSY and
 * MNT_DETACH, ENODEV for an unknown type, sysfs, cgroup2, mqueue and
 * proc, chroot with ".." confined, a
 * mount made after unshare(CLONE_NEWNS) invisible to the parent, own UTS
 * and IPC namespaces, and EPERM without privilege.
 *
 * Run as root. It first moves into a private mount namespace of its own,
 * so natively it changes nothing outside itself. */
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char base[64], a[96], b[96], c[96];

static void write_file(const char *path, const char *text) {
    int fd = CHECK_OK(open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644));
    CHECK_EQ(write(fd, text, strlen(text)), (long)strlen(text));
    CHECK_OK(close(fd));
}

static void join(char *out, const char *dir, const char *name) {
    snprintf(out, 96, "%s/%s", dir, name);
}

static void tmpfs_size_and_mode(void) {
    CHECK_OK(mount("none", a, "tmpfs", 0, "size=64k,mode=0710"));
    struct stat st;
    CHECK_OK(stat(a, &st));
    CHECK_EQ(st.st_mode & 07777, 0710);
    char f[96], big[96];
    join(f, a, "f");
    join(big, a, "big");
    write_file(f, "x");
    int fd = CHECK_OK(open(big, O_CREAT | O_WRONLY, 0644));
    static char chunk[4096];
    long total = 0, n;
    errno = 0;
    while ((n = write(fd, chunk, sizeof chunk)) > 0)
        total += n;
    CHECK_EQ(errno, ENOSPC);
    CHECK(total <= 65536 && total >= 32768);
    CHECK_OK(close(fd));
    CHECK_OK(unlink(big));
    const char *info = mountinfo_of(a);
    CHECK(strstr(info, " - tmpfs none ") != NULL);
    CHECK(strstr(info, " shared:") == NULL);
    CHECK_OK(mount(NULL, a, NULL, MS_SHARED, NULL));
    CHECK(strstr(mountinfo_of(a), " shared:") != NULL);
    CHECK_OK(mount(NULL, a, NULL, MS_PRIVATE, NULL));
    CHECK(strstr(mountinfo_of(a), " shared:") == NULL);
    CHECK_OK(mount(NULL, a, NULL, MS_UNBINDABLE, NULL));
    CHECK(strstr(mountinfo_of(a), " unbindable ") != NULL);
    CHECK_ERR(mount(a, b, NULL, MS_BIND, NULL), EINVAL);
    CHECK_OK(mount(NULL, a, NULL, MS_PRIVATE, NULL));
    CHECK_ERR(mount(NULL, a, NULL, MS_PRIVATE | MS_SHARED, NULL), EINVAL);
}

static void bind_and_read_only(void) {
    CHECK_OK(mount(a, b, NULL, MS_BIND, NULL));
    char bf[96], bg[96], ag[96];
    join(bf, b, "f");
    join(bg, b, "g");
    join(ag, a, "g");
    char buf[8] = {0};
    int fd = CHECK_OK(open(bf, O_RDONLY));
    CHECK_EQ(read(fd, buf, sizeof buf), 1);
    CHECK_STR(buf, "x");
    CHECK_OK(close(fd));
    CHECK_OK(mount(NULL, b, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL));
    CHECK_ERR(open(bg, O_CREAT | O_WRONLY, 0644), EROFS);
    CHECK_ERR(mkdir(bg, 0755), EROFS);
    CHECK_ERR(unlink(bf), EROFS);
    CHECK(strstr(mountinfo_of(b), " ro,") != NULL);
    write_file(ag, "y"); /* the other mount of the same tmpfs is writable */
    CHECK_OK(access(bg, F_OK));
    CHECK_OK(mount(NULL, b, NULL, MS_REMOUNT | MS_BIND, NULL));
    CHECK_OK(unlink(bg));
    CHECK(strstr(mountinfo_of(b), " rw,") != NULL);
}

static void noexec(void) {
    CHECK_OK(mount("none", c, "tmpfs", 0, NULL));
    char prog[96];
    join(prog, c, "prog");
    int in = CHECK_OK(open("/proc/self/exe", O_RDONLY));
    int out = CHECK_OK(open(prog, O_CREAT | O_WRONLY, 0755));
    static char buf[65536];
    long n;
    while ((n = CHECK_OK(read(in, buf, sizeof buf))) > 0)
        CHECK_EQ(write(out, buf, n), n);
    CHECK_OK(close(in));
    CHECK_OK(close(out));
    for (int pass = 0; pass < 2; pass++) {
        pid_t p = CHECK_OK(fork());
        if (p == 0) {
            char *argv[] = {prog, "exec-probe", NULL};
            execv(prog, argv);
            _exit(errno);
        }
        int st;
        CHECK_EQ(waitpid(p, &st, 0), p);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), pass == 0 ? 42 : EACCES);
        if (pass == 0)
            CHECK_OK(mount(NULL, c, NULL, MS_REMOUNT | MS_BIND | MS_NOEXEC | MS_NOSUID | MS_NODEV, NULL));
    }
    const char *info = mountinfo_of(c);
    CHECK(strstr(info, " rw,nosuid,nodev,noexec") != NULL);
}

static void umount_and_move(void) {
    char af[96], bm[96], am[96];
    join(af, a, "f");
    CHECK_OK(umount2(b, 0));
    CHECK_OK(umount2(a, 0));
    CHECK_ERR(access(af, F_OK), ENOENT);
    CHECK_ERR(umount2(a, 0), EINVAL);
    CHECK_ERR(umount2(a, 0x100), EINVAL);
    CHECK_OK(chdir(c));
    CHECK_ERR(umount2(c, 0), EBUSY);
    CHECK_OK(chdir("/"));
    CHECK_OK(mount("none", a, "tmpfs", 0, NULL));
    join(am, a, "m");
    join(bm, b, "m");
    CHECK_OK(mkdir(am, 0755));
    CHECK_OK(mount("none", am, "tmpfs", 0, NULL));
    CHECK_ERR(umount2(a, 0), EBUSY);
    CHECK_OK(mount(a, b, NULL, MS_MOVE, NULL));
    CHECK_OK(access(bm, F_OK));
    CHECK(mountinfo_of(bm)[0] != 0);
    CHECK_ERR(access(am, F_OK), ENOENT);
    CHECK_OK(umount2(b, MNT_DETACH));
    CHECK(mountinfo_of(bm)[0] == 0);
    CHECK_ERR(mount("none", a, "nosuchfs", 0, NULL), ENODEV);
}

/* The other filesystems the sandbox serves: each mounts, shows what it
 * is, and unmounts. */
static void other_filesystems(void) {
    char path[128];
    CHECK_OK(mount("sysfs", a, "sysfs", MS_RDONLY, NULL));
    snprintf(path, sizeof path, "%s/fs/cgroup", a);
    struct stat st;
    CHECK_OK(stat(path, &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK(strstr(mountinfo_of(a), " - sysfs sysfs ") != NULL);
    CHECK_OK(umount2(a, 0));
    CHECK_OK(mount("cgroup2", a, "cgroup2", 0, NULL));
    snprintf(path, sizeof path, "%s/cgroup.controllers", a);
    CHECK_OK(access(path, R_OK));
    CHECK_OK(umount2(a, 0));
    CHECK_OK(mount("mqueue", a, "mqueue", 0, NULL));
    CHECK(strstr(mountinfo_of(a), " - mqueue mqueue ") != NULL);
    CHECK_OK(umount2(a, 0));
    CHECK_OK(mount("proc", a, "proc", 0, NULL));
    snprintf(path, sizeof path, "%s/self/status", a);
    CHECK_OK(access(path, R_OK));
    CHECK_OK(umount2(a, 0));
    CHECK_ERR(mount("proc", a, "proc", 0, "bogus=1"), EINVAL);
}

static char root[96];

static int chrooted(void) {
    CHECK_OK(chdir(root));
    CHECK_OK(chroot("."));
    struct stat top, up;
    CHECK_OK(stat("/", &top));
    CHECK_OK(stat("/../../..", &up));
    CHECK(top.st_ino == up.st_ino && top.st_dev == up.st_dev);
    CHECK_OK(access("/sub", F_OK));
    CHECK_OK(chdir("/sub/../../.."));
    char cwd[256];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_STR(cwd, "/");
    char link[256] = {0};
    CHECK_OK(readlink("/proc/self/root", link, sizeof link - 1));
    CHECK_STR(link, "/");
    CHECK(mountinfo_of("/proc")[0] != 0);
    CHECK(mountinfo_of(c)[0] == 0); /* outside the root: not shown */
    return 0;
}

static void chroot_confines(void) {
    join(root, c, "root");
    char sub[96], proc[96];
    CHECK_OK(mkdir(root, 0755));
    join(sub, root, "sub");
    join(proc, root, "proc");
    CHECK_OK(mkdir(sub, 0755));
    CHECK_OK(mkdir(proc, 0555));
    CHECK_OK(mount("proc", proc, "proc", 0, NULL));
    CHECK_EQ(exit_status_of(chrooted), 0);
    CHECK_OK(umount2(proc, 0));
}

static int own_mount_namespace(void) {
    CHECK_OK(unshare(CLONE_NEWNS));
    CHECK_OK(mount("none", b, "tmpfs", 0, NULL));
    char f[96];
    join(f, b, "inchild");
    write_file(f, "z");
    return 0;
}

static int own_uts_and_ipc(void) {
    CHECK_OK(unshare(CLONE_NEWUTS | CLONE_NEWIPC));
    CHECK_OK(sethostname("inner", 5));
    char name[64];
    CHECK_OK(gethostname(name, sizeof name));
    CHECK_STR(name, "inner");
    CHECK_ERR(shmget(0x4d4e5401, 0, 0), ENOENT); /* the parent's is not here */
    return 0;
}

static void namespaces(void) {
    char f[96];
    join(f, b, "inchild");
    /* The child's mount (and what it wrote there) stays in its namespace,
     * which ends with it. */
    CHECK_EQ(exit_status_of(own_mount_namespace), 0);
    CHECK_ERR(access(f, F_OK), ENOENT);
    CHECK(mountinfo_of(b)[0] == 0);
    char before[64], after[64];
    CHECK_OK(gethostname(before, sizeof before));
    int id = CHECK_OK(shmget(0x4d4e5401, 4096, IPC_CREAT | 0600));
    CHECK_EQ(exit_status_of(own_uts_and_ipc), 0);
    CHECK_OK(shmctl(id, IPC_RMID, NULL));
    CHECK_OK(gethostname(after, sizeof after));
    CHECK_STR(after, before);
    CHECK_ERR(unshare(1), EINVAL); /* CSIGNAL bits are no unshare flag */
}

static int unprivileged(void) {
    CHECK_OK(setgid(65534));
    CHECK_OK(setuid(65534));
    CHECK_ERR(mount("none", b, "tmpfs", 0, NULL), EPERM);
    CHECK_ERR(umount2(c, 0), EPERM);
    CHECK_ERR(chroot("/"), EPERM);
    CHECK_ERR(unshare(CLONE_NEWNS), EPERM);
    CHECK_ERR(unshare(CLONE_NEWUTS), EPERM);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exec-probe") == 0)
        return 42;
    CHECK_OK(unshare(CLONE_NEWNS));
    CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    snprintf(base, sizeof base, "/tmp/mounts.XXXXXX");
    CHECK(mkdtemp(base) != NULL);
    CHECK_OK(chmod(base, 0755));
    join(a, base, "a");
    join(b, base, "b");
    join(c, base, "c");
    CHECK_OK(mkdir(a, 0755));
    CHECK_OK(mkdir(b, 0755));
    CHECK_OK(mkdir(c, 0755));
    tmpfs_size_and_mode();
    bind_and_read_only();
    noexec();
    umount_and_move();
    other_filesystems();
    chroot_confines();
    namespaces();
    CHECK_EQ(exit_status_of(unprivileged), 0);
    CHECK_OK(umount2(c, 0));
    CHECK_OK(rmdir(a));
    CHECK_OK(rmdir(b));
    CHECK_OK(rmdir(c));
    CHECK_OK(rmdir(base));
    return 0;
}
