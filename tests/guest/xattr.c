/* xattr.c — extended attributes on tmpfs (/dev/shm, a tmpfs natively too): set/get/list/remove,
 * XATTR_CREATE/XATTR_REPLACE, size-0 queries and ERANGE, ENODATA, E2BIG,
 * EOPNOTSUPP for unknown namespaces, EINVAL for a bare prefix, user.* only
 * on regular files and directories (EPERM on a symlink for l*xattr),
 * trusted.* and security.* writes reserved to CAP_SYS_ADMIN (checked as
 * an unprivileged user when run as root), permission checks for user.*,
 * the f*xattr forms and IN_ATTRIB reported to inotify. */
#include "check.h"
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>

static char f[256], l[256], dir[256];
static char s[64] = "/dev/shm/husk-xattr-XXXXXX";

static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    return remove(p);
}

static void cleanup(void) {
    nftw(s, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
    CHECK(mkdtemp(s) != NULL);
    atexit(cleanup);
    snprintf(f, sizeof f, "%s/f", s);
    snprintf(l, sizeof l, "%s/l", s);
    snprintf(dir, sizeof dir, "%s/d", s);
    CHECK_OK(close(CHECK_OK(creat(f, 0644))));
    CHECK_OK(symlink("f", l));
    CHECK_OK(mkdir(dir, 0755));
    char buf[128];

    /* Nothing yet. */
    CHECK_EQ(listxattr(f, buf, sizeof buf), 0);
    CHECK_ERR(getxattr(f, "user.a", buf, sizeof buf), ENODATA);
    CHECK_ERR(removexattr(f, "user.a"), ENODATA);

    /* Set, get, the size query, ERANGE. */
    CHECK_OK(setxattr(f, "user.a", "hello", 5, 0));
    CHECK_EQ(getxattr(f, "user.a", NULL, 0), 5);
    CHECK_EQ(getxattr(f, "user.a", buf, sizeof buf), 5);
    CHECK_MEM(buf, "hello", 5);
    CHECK_ERR(getxattr(f, "user.a", buf, 4), ERANGE);
    /* Through the symlink (followed) and through a descriptor. */
    CHECK_EQ(getxattr(l, "user.a", buf, sizeof buf), 5);
    int fd = CHECK_OK(open(f, O_RDONLY));
    CHECK_EQ(fgetxattr(fd, "user.a", buf, sizeof buf), 5);
    CHECK_OK(fsetxattr(fd, "user.b", "", 0, 0));
    CHECK_EQ(fgetxattr(fd, "user.b", buf, sizeof buf), 0);

    /* XATTR_CREATE and XATTR_REPLACE. */
    CHECK_ERR(setxattr(f, "user.a", "x", 1, XATTR_CREATE), EEXIST);
    CHECK_ERR(setxattr(f, "user.c", "x", 1, XATTR_REPLACE), ENODATA);
    CHECK_OK(setxattr(f, "user.a", "bye", 3, XATTR_REPLACE));
    CHECK_EQ(getxattr(f, "user.a", buf, sizeof buf), 3);
    CHECK_MEM(buf, "bye", 3);
    CHECK_ERR(setxattr(f, "user.a", "x", 1, 4), EINVAL);

    /* Listing: NUL-separated names; the size query; ERANGE. */
    CHECK_EQ(listxattr(f, NULL, 0), 14);
    ssize_t n = CHECK_OK(flistxattr(fd, buf, sizeof buf));
    CHECK_EQ(n, 14);
    int seen_a = 0, seen_b = 0;
    for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
        seen_a += strcmp(p, "user.a") == 0;
        seen_b += strcmp(p, "user.b") == 0;
    }
    CHECK_EQ(seen_a, 1);
    CHECK_EQ(seen_b, 1);
    CHECK_ERR(listxattr(f, buf, 13), ERANGE);

    /* Names and sizes. */
    CHECK_ERR(setxattr(f, "user.", "x", 1, 0), EINVAL);
    CHECK_ERR(setxattr(f, "nonsense.a", "x", 1, 0), EOPNOTSUPP);
    CHECK_ERR(getxattr(f, "nonsense.a", buf, sizeof buf), EOPNOTSUPP);
    CHECK_ERR(setxattr(f, "", "x", 1, 0), ERANGE);
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    memcpy(longname, "user.", 5);
    longname[sizeof longname - 1] = 0;
    CHECK_ERR(setxattr(f, longname, "x", 1, 0), ERANGE);
    static char huge[65537];
    CHECK_ERR(setxattr(f, "user.big", huge, sizeof huge, 0), E2BIG);
    CHECK_OK(setxattr(f, "user.big", huge, 65536, 0));
    CHECK_EQ(getxattr(f, "user.big", NULL, 0), 65536);
    CHECK_OK(removexattr(f, "user.big"));

    /* A directory takes user.*; a symlink itself does not. */
    CHECK_OK(setxattr(dir, "user.d", "1", 1, 0));
    CHECK_EQ(getxattr(dir, "user.d", buf, sizeof buf), 1);
    CHECK_ERR(lsetxattr(l, "user.x", "1", 1, 0), EPERM);
    CHECK_ERR(lgetxattr(l, "user.a", buf, sizeof buf), ENODATA);
    CHECK_EQ(llistxattr(l, buf, sizeof buf), 0);

    /* Removing reports IN_ATTRIB, as setting does. */
    int in = CHECK_OK(inotify_init1(IN_NONBLOCK));
    int wd = CHECK_OK(inotify_add_watch(in, f, IN_ATTRIB));
    CHECK_OK(removexattr(f, "user.b"));
    CHECK_ERR(getxattr(f, "user.b", buf, sizeof buf), ENODATA);
    struct inotify_event ev;
    CHECK_EQ(read(in, &ev, sizeof ev), (ssize_t)sizeof ev);
    CHECK_EQ(ev.wd, wd);
    CHECK_EQ(ev.mask, IN_ATTRIB);
    CHECK_OK(close(in));
    CHECK_OK(close(fd));

    if (geteuid() == 0) {
        /* root: trusted.* and security.* are its; an unprivileged user may
         * neither write them nor see trusted.* names. */
        CHECK_OK(setxattr(f, "trusted.t", "t", 1, 0));
        CHECK_OK(setxattr(f, "security.s", "s", 1, 0));
        CHECK_EQ(getxattr(f, "trusted.t", buf, sizeof buf), 1);
        CHECK_OK(chmod(s, 0755)); /* mkdtemp's 0700 would stop the lookup */
        CHECK_OK(chmod(f, 0600));
        pid_t pid = CHECK_OK(fork());
        if (pid == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0)
                _exit(10);
            if (setxattr(f, "trusted.u", "u", 1, 0) != -1 || errno != EPERM)
                _exit(11);
            if (getxattr(f, "trusted.t", buf, sizeof buf) != -1 || errno != ENODATA)
                _exit(12);
            if (setxattr(f, "security.u", "u", 1, 0) != -1 || errno != EPERM)
                _exit(13);
            /* user.* needs read/write permission on the file (0600, root's). */
            if (getxattr(f, "user.a", buf, sizeof buf) != -1 || errno != EACCES)
                _exit(14);
            if (setxattr(f, "user.a", "u", 1, 0) != -1 || errno != EACCES)
                _exit(15);
            _exit(0);
        }
        int st;
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), 0);
        CHECK_EQ(getxattr(f, "security.s", buf, sizeof buf), 1);
    }
    return 0;
}
