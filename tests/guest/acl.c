/* acl.c — POSIX ACLs through their raw xattrs (no libacl), as Linux's
 * fs/posix_acl.c: the binary format is validated (EINVAL, EOPNOTSUPP for
 * another version); an access ACL sets the mode's bits, is honored for
 * callers that are not the owner (named users and groups limited by the
 * mask) and follows chmod; an ACL the mode says all of is not stored;
 * only the owner sets one; a default ACL only on directories, inherited
 * by new files and directories with the create mode and without the
 * umask. Runs as root and checks access in children that become uid
 * 1000/1001. Usage: acl [DIR] — in a fresh directory under DIR (a
 * directory of the overlay under husk), else under /tmp. */
#include "check.h"
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#define ACCESS "system.posix_acl_access"
#define DEFAULT "system.posix_acl_default"
enum { USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 0x10, OTHER = 0x20 };

struct entry {
    uint16_t tag, perm;
    uint32_t id;
};

/* The xattr value of `n` entries in buf, with the undefined id (-1) in
 * entries that name no one, as Linux reports them; returns its size. */
static size_t acl(char *buf, const struct entry *e, int n) {
    uint32_t version = 2;
    memcpy(buf, &version, 4);
    for (int i = 0; i < n; i++) {
        struct entry x = e[i];
        if (x.tag != USER && x.tag != GROUP)
            x.id = UINT32_MAX;
        memcpy(buf + 4 + sizeof x * (size_t)i, &x, sizeof x);
    }
    return 4 + sizeof *e * (size_t)n;
}

/* The errno a child with uid/gid `id` (no other groups or capabilities)
 * gets opening `path` with `flags` (0 if it opens). */
static int open_as(unsigned id, const char *path, int flags) {
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        if (setgroups(0, NULL) || setgid(id) || setuid(id))
            _exit(100);
        int fd = open(path, flags);
        _exit(fd < 0 ? errno : 0);
    }
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) != 100);
    return WEXITSTATUS(st);
}

/* The errno a child with uid `id` gets setting `value` as `name`. */
static int setxattr_as(unsigned id, const char *path, const char *name, const char *value, size_t len) {
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        if (setgroups(0, NULL) || setgid(id) || setuid(id))
            _exit(100);
        _exit(setxattr(path, name, value, len, 0) < 0 ? errno : 0);
    }
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static char base[4096];

/* "<base>/<name>" in a fresh heap string. */
static const char *in_base(const char *name) {
    char *b = NULL;
    if (asprintf(&b, "%s/%s", base, name) < 0)
        FAILF("asprintf: out of memory");
    return b;
}

static void remove_base(void) {
    const char *names[] = {"sub/plain", "sub/f", "sub/d", "sub", "file"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        remove(in_base(names[i]));
    rmdir(base);
}

static mode_t mode_of(const char *path) {
    struct stat st;
    CHECK_OK(stat(path, &st));
    return st.st_mode & 07777;
}

int main(int argc, char **argv) {
    if (getuid() != 0) {
        printf("not root: nothing to check\n");
        return 0;
    }
    umask(022);
    if (argc > 1) {
        snprintf(base, sizeof base, "%s/husk-acl-XXXXXX", argv[1]);
        if (mkdtemp(base) == NULL)
            FAILF("mkdtemp: %s", strerror(errno));
        atexit(remove_base);
    } else {
        snprintf(base, sizeof base, "%s", scratch_dir());
    }
    CHECK_OK(chmod(base, 0755));
    const char *file = in_base("file");
    close(CHECK_OK(open(file, O_RDWR | O_CREAT, 0640)));
    char buf[256], got[256];

    /* Malformed values. */
    CHECK_ERR(setxattr(file, ACCESS, "\2\0\0", 3, 0), EINVAL);
    struct entry minimal[] = {{USER_OBJ, 6, 0}, {GROUP_OBJ, 4, 0}, {OTHER, 0, 0}};
    size_t n = acl(buf, minimal, 3);
    buf[0] = 1;
    CHECK_ERR(setxattr(file, ACCESS, buf, n, 0), EOPNOTSUPP);
    buf[0] = 2;
    CHECK_ERR(setxattr(file, ACCESS, buf, n - 1, 0), EINVAL);
    struct entry unordered[] = {{GROUP_OBJ, 4, 0}, {USER_OBJ, 6, 0}, {OTHER, 0, 0}};
    CHECK_ERR(setxattr(file, ACCESS, buf, acl(buf, unordered, 3), 0), EINVAL);
    struct entry no_mask[] = {{USER_OBJ, 6, 0}, {USER, 6, 1000}, {GROUP_OBJ, 4, 0}, {OTHER, 0, 0}};
    CHECK_ERR(setxattr(file, ACCESS, buf, acl(buf, no_mask, 4), 0), EINVAL);
    struct entry bad_perm[] = {{USER_OBJ, 8, 0}, {GROUP_OBJ, 4, 0}, {OTHER, 0, 0}};
    CHECK_ERR(setxattr(file, ACCESS, buf, acl(buf, bad_perm, 3), 0), EINVAL);
    CHECK_ERR(getxattr(file, ACCESS, got, sizeof got), ENODATA);
    CHECK_EQ(mode_of(file), 0640);

    /* A named user, limited by the mask; chmod's group bits are the mask. */
    struct entry named[] = {{USER_OBJ, 6, 0}, {USER, 6, 1000}, {GROUP_OBJ, 4, 0}, {MASK, 4, 0}, {OTHER, 0, 0}};
    n = acl(buf, named, 5);
    CHECK_OK(setxattr(file, ACCESS, buf, n, 0));
    CHECK_EQ(mode_of(file), 0640);
    CHECK_EQ(getxattr(file, ACCESS, got, sizeof got), (ssize_t)n);
    CHECK_MEM(got, buf, n);
    CHECK_EQ(open_as(1000, file, O_RDONLY), 0);
    CHECK_EQ(open_as(1000, file, O_RDWR), EACCES);
    CHECK_EQ(open_as(1001, file, O_RDONLY), EACCES);
    CHECK_OK(chmod(file, 0660));
    CHECK_EQ(open_as(1000, file, O_RDWR), 0);
    CHECK_EQ(getxattr(file, ACCESS, got, sizeof got), (ssize_t)n);
    struct entry *e = (struct entry *)(got + 4);
    CHECK_EQ(e[3].tag, MASK);
    CHECK_EQ(e[3].perm, 6); /* chmod set the mask */
    CHECK_EQ(e[2].perm, 4); /* and left the owning group's entry */
    CHECK_EQ(open_as(1001, file, O_RDONLY), EACCES);
    /* Only the owner sets an ACL. */
    CHECK_EQ(setxattr_as(1000, file, ACCESS, buf, n), EPERM);

    /* An ACL the mode says all of sets the mode and is not stored. */
    CHECK_OK(setxattr(file, ACCESS, buf, acl(buf, minimal, 3), 0));
    CHECK_EQ(mode_of(file), 0640);
    CHECK_ERR(getxattr(file, ACCESS, got, sizeof got), ENODATA);
    CHECK_EQ(open_as(1000, file, O_RDONLY), EACCES);

    /* Default ACLs: directories only, inherited without the umask. */
    struct entry def[] = {{USER_OBJ, 7, 0}, {USER, 7, 1000}, {GROUP_OBJ, 5, 0}, {MASK, 7, 0}, {OTHER, 5, 0}};
    n = acl(buf, def, 5);
    CHECK_ERR(setxattr(file, DEFAULT, buf, n, 0), EACCES);
    const char *sub = in_base("sub");
    CHECK_OK(mkdir(sub, 0755));
    CHECK_OK(setxattr(sub, DEFAULT, buf, n, 0));
    CHECK_EQ(mode_of(sub), 0755);
    CHECK_EQ(getxattr(sub, DEFAULT, got, sizeof got), (ssize_t)n);
    umask(077);
    const char *inner = in_base("sub/f");
    close(CHECK_OK(open(inner, O_RDWR | O_CREAT, 0666)));
    CHECK_EQ(mode_of(inner), 0664); /* the mask: rwx & rw-; others r-x & rw- */
    CHECK_EQ(open_as(1000, inner, O_RDWR), 0);
    CHECK_EQ(open_as(1001, inner, O_RDONLY), 0);
    CHECK_EQ(open_as(1001, inner, O_RDWR), EACCES);
    CHECK_EQ(getxattr(inner, ACCESS, got, sizeof got), (ssize_t)n);
    e = (struct entry *)(got + 4);
    CHECK_EQ(e[0].perm, 6);
    CHECK_EQ(e[1].perm, 7); /* the named entry as inherited, */
    CHECK_EQ(e[3].perm, 6); /* limited by the mask */
    CHECK_ERR(getxattr(inner, DEFAULT, got, sizeof got), ENODATA);
    const char *innerdir = in_base("sub/d");
    CHECK_OK(mkdir(innerdir, 0777));
    CHECK_EQ(mode_of(innerdir), 0775);
    CHECK_EQ(getxattr(innerdir, DEFAULT, got, sizeof got), (ssize_t)n);
    CHECK_MEM(got, buf, n);
    umask(022);

    /* Removing the default ACL: new files get the umask again. */
    CHECK_OK(removexattr(sub, DEFAULT));
    CHECK_ERR(getxattr(sub, DEFAULT, got, sizeof got), ENODATA);
    const char *plain = in_base("sub/plain");
    close(CHECK_OK(open(plain, O_RDWR | O_CREAT, 0666)));
    CHECK_EQ(mode_of(plain), 0644);
    CHECK_ERR(getxattr(plain, ACCESS, got, sizeof got), ENODATA);
    return 0;
}
