/* dirs.c — directories, links, rename, getdents64, path resolution. */
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* List a directory with raw getdents64 into a sorted, '|'-joined string,
 * checking d_type of each entry against lstat. */
static void list_dir(const char *path, char *out, size_t cap) {
    int fd = CHECK_OK(open(path, O_RDONLY | O_DIRECTORY));
    char *names[64];
    int n = 0;
    char buf[512]; /* small buffer forces several getdents64 calls */
    for (;;) {
        long r = syscall(SYS_getdents64, fd, buf, sizeof buf);
        CHECK(r >= 0);
        if (r == 0)
            break;
        for (long off = 0; off < r;) {
            struct linux_dirent64 *de = (struct linux_dirent64 *)(buf + off);
            CHECK(de->d_reclen > 0 && de->d_reclen % 8 == 0);
            CHECK(de->d_ino != 0);
            CHECK(n < 64);
            names[n++] = strdup(de->d_name);
            struct stat st;
            CHECK_OK(fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW));
            if (de->d_type != DT_UNKNOWN)
                CHECK_EQ(de->d_type, IFTODT(st.st_mode));
            off += de->d_reclen;
        }
    }
    /* A too-small buffer → EINVAL. */
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_ERR(syscall(SYS_getdents64, fd, buf, 8), EINVAL);
    CHECK_OK(close(fd));
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (i)
            strncat(out, "|", cap - strlen(out) - 1);
        strncat(out, names[i], cap - strlen(out) - 1);
        free(names[i]);
    }
}

int main(void) {
    umask(022);
    const char *root = scratch_dir();
    char buf[PATH_MAX], listing[2048];
    struct stat st, st2;

    CHECK_OK(chdir(root));
    /* getcwd reports the scratch directory. */
    CHECK(getcwd(buf, sizeof buf) != NULL);
    CHECK_STR(buf, root);
    CHECK(getcwd(buf, 3) == NULL && errno == ERANGE);

    /* mkdir / mkdirat / EEXIST. */
    CHECK_OK(mkdir("d", 0755));
    CHECK_ERR(mkdir("d", 0755), EEXIST);
    int rootfd = CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));
    CHECK_OK(mkdirat(rootfd, "d/sub", 0700));
    CHECK_ERR(mkdirat(rootfd, "d/sub", 0700), EEXIST);
    CHECK_ERR(mkdir("nope/x", 0755), ENOENT);
    CHECK_OK(mkdir("trail/", 0755)); /* trailing slash is fine for mkdir */
    CHECK_OK(stat("trail", &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0755);

    /* files. */
    CHECK_OK(close(CHECK_OK(open("f", O_CREAT | O_WRONLY, 0644))));
    CHECK_OK(close(CHECK_OK(open("d/g", O_CREAT | O_WRONLY, 0644))));
    CHECK_ERR(mkdir("f", 0755), EEXIST);

    /* rmdir non-empty → ENOTEMPTY; rmdir file → ENOTDIR; unlink dir →
     * EISDIR; rmdir "." → EINVAL. */
    CHECK_ERR(rmdir("d"), ENOTEMPTY);
    CHECK_ERR(rmdir("f"), ENOTDIR);
    CHECK_ERR(unlink("d"), EISDIR);
    CHECK_ERR(rmdir("d/sub/."), EINVAL);
    CHECK_ERR(rmdir("missing"), ENOENT);
    CHECK_ERR(unlink("missing"), ENOENT);
    CHECK_OK(rmdir("trail"));
    CHECK_ERR(stat("trail", &st), ENOENT);

    /* unlinkat with and without AT_REMOVEDIR. */
    CHECK_ERR(unlinkat(rootfd, "d/sub", 0), EISDIR);
    CHECK_ERR(unlinkat(rootfd, "f", AT_REMOVEDIR), ENOTDIR);
    CHECK_OK(unlinkat(rootfd, "d/sub", AT_REMOVEDIR));
    CHECK_OK(unlinkat(rootfd, "d/g", 0));
    CHECK_OK(rmdir("d"));
    CHECK_OK(mkdir("d", 0755));

    /* getdents64: exact listing. */
    CHECK_OK(close(CHECK_OK(open("d/a", O_CREAT | O_WRONLY, 0644))));
    CHECK_OK(mkdir("d/b", 0755));
    CHECK_OK(symlink("a", "d/c"));
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "d/long-file-name-%02d", i);
        CHECK_OK(close(CHECK_OK(open(name, O_CREAT | O_WRONLY, 0644))));
    }
    list_dir("d", listing, sizeof listing);
    {
        char want[2048] = ".|..|a|b|c";
        for (int i = 0; i < 20; i++) {
            char name[32];
            snprintf(name, sizeof name, "|long-file-name-%02d", i);
            strcat(want, name);
        }
        CHECK_STR(listing, want);
    }
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "d/long-file-name-%02d", i);
        CHECK_OK(unlink(name));
    }
    list_dir("d", listing, sizeof listing);
    CHECK_STR(listing, ".|..|a|b|c");
    /* getdents64 on a file → ENOTDIR. */
    {
        int fd = CHECK_OK(open("f", O_RDONLY));
        char b[256];
        CHECK_ERR(syscall(SYS_getdents64, fd, b, sizeof b), ENOTDIR);
        CHECK_OK(close(fd));
    }

    /* rename: file over file replaces; NOREPLACE → EEXIST; EXCHANGE. */
    int fd = CHECK_OK(open("x", O_CREAT | O_WRONLY, 0644));
    CHECK_EQ(write(fd, "X", 1), 1);
    CHECK_OK(close(fd));
    fd = CHECK_OK(open("y", O_CREAT | O_WRONLY, 0644));
    CHECK_EQ(write(fd, "YY", 2), 2);
    CHECK_OK(close(fd));
    CHECK_ERR(syscall(SYS_renameat2, AT_FDCWD, "x", AT_FDCWD, "y",
                      RENAME_NOREPLACE), EEXIST);
    CHECK_OK(syscall(SYS_renameat2, AT_FDCWD, "x", AT_FDCWD, "y",
                     RENAME_EXCHANGE));
    CHECK_OK(stat("x", &st));
    CHECK_EQ(st.st_size, 2);
    CHECK_OK(stat("y", &st));
    CHECK_EQ(st.st_size, 1);
    CHECK_OK(syscall(SYS_renameat2, AT_FDCWD, "x", AT_FDCWD, "z",
                     RENAME_NOREPLACE));
    CHECK_OK(rename("z", "y"));
    CHECK_ERR(stat("z", &st), ENOENT);
    CHECK_OK(stat("y", &st));
    CHECK_EQ(st.st_size, 2);
    /* rename to itself is a no-op. */
    CHECK_OK(rename("y", "y"));
    /* renameat across directories with dirfds. */
    int dfd = CHECK_OK(open("d", O_RDONLY | O_DIRECTORY));
    CHECK_OK(renameat(rootfd, "y", dfd, "y2"));
    CHECK_OK(fstatat(dfd, "y2", &st, 0));
    CHECK_ERR(stat("y", &st), ENOENT);
    CHECK_OK(renameat(dfd, "y2", rootfd, "y"));
    /* rename errors. */
    CHECK_ERR(rename("missing", "q"), ENOENT);
    CHECK_ERR(rename("y", "d"), EISDIR);     /* file onto dir */
    CHECK_ERR(rename("d", "y"), ENOTDIR);    /* dir onto file */
    CHECK_ERR(rename("d", "d/b/inside"), EINVAL); /* into own subtree */
    CHECK_OK(mkdir("full", 0755));
    CHECK_OK(mkdir("full/x", 0755));
    CHECK_ERR(rename("d", "full"), ENOTEMPTY);
    CHECK_OK(mkdir("empty", 0755));
    CHECK_OK(rename("empty", "full/x")); /* dir onto empty dir replaces */
    CHECK_ERR(stat("empty", &st), ENOENT);
    CHECK_OK(rmdir("full/x"));
    CHECK_OK(rmdir("full"));

    /* symlink / readlink / readlinkat. */
    CHECK_OK(symlink("y", "ly"));
    CHECK_ERR(symlink("y", "ly"), EEXIST);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(readlink("ly", buf, sizeof buf), 1);
    CHECK_STR(buf, "y");
    CHECK_OK(symlink("/some/absolute/target", "labs"));
    memset(buf, 0, sizeof buf);
    CHECK_EQ(readlinkat(rootfd, "labs", buf, sizeof buf), 21);
    CHECK_STR(buf, "/some/absolute/target");
    /* truncation: returns bufsiz, no NUL added. */
    memset(buf, 'Z', sizeof buf);
    CHECK_EQ(readlink("labs", buf, 5), 5);
    CHECK_MEM(buf, "/someZ", 6);
    CHECK_ERR(readlink("y", buf, sizeof buf), EINVAL);   /* not a link */
    CHECK_ERR(readlink("missing", buf, sizeof buf), ENOENT);
    CHECK_ERR(readlink("ly", buf, 0), EINVAL);
    /* readlinkat with empty path on an O_PATH fd of the link. */
    fd = CHECK_OK(open("ly", O_PATH | O_NOFOLLOW));
    memset(buf, 0, sizeof buf);
    CHECK_EQ(readlinkat(fd, "", buf, sizeof buf), 1);
    CHECK_STR(buf, "y");
    CHECK_OK(close(fd));

    /* link. */
    CHECK_OK(link("y", "hy"));
    CHECK_OK(stat("y", &st));
    CHECK_OK(stat("hy", &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    CHECK_EQ(st.st_nlink, 2);
    CHECK_ERR(link("y", "hy"), EEXIST);
    CHECK_ERR(link("d", "hd"), EPERM); /* hard link to a directory */
    CHECK_ERR(link("missing", "hm"), ENOENT);
    CHECK_OK(unlink("hy"));
    CHECK_OK(stat("y", &st));
    CHECK_EQ(st.st_nlink, 1);
    /* linkat does not follow a symlink source by default. */
    CHECK_OK(linkat(rootfd, "ly", rootfd, "hly", 0));
    CHECK_OK(lstat("hly", &st));
    CHECK(S_ISLNK(st.st_mode));
    CHECK_OK(linkat(rootfd, "ly", rootfd, "hly2", AT_SYMLINK_FOLLOW));
    CHECK_OK(lstat("hly2", &st));
    CHECK(S_ISREG(st.st_mode));

    /* an unlinked open file is still readable. */
    fd = CHECK_OK(open("y", O_RDONLY));
    CHECK_OK(unlink("y"));
    CHECK_OK(unlink("hly2"));
    CHECK_OK(fstat(fd, &st));
    CHECK_EQ(st.st_nlink, 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(read(fd, buf, sizeof buf), 2);
    CHECK_STR(buf, "YY");
    CHECK_OK(close(fd));

    /* chdir / fchdir / getcwd. */
    CHECK_OK(chdir("d/b"));
    CHECK(getcwd(buf, sizeof buf) != NULL);
    {
        char want[PATH_MAX];
        snprintf(want, sizeof want, "%s/d/b", root);
        CHECK_STR(buf, want);
    }
    CHECK_OK(chdir(".."));
    CHECK(getcwd(buf, sizeof buf) != NULL);
    {
        char want[PATH_MAX];
        snprintf(want, sizeof want, "%s/d", root);
        CHECK_STR(buf, want);
    }
    CHECK_OK(fchdir(rootfd));
    CHECK(getcwd(buf, sizeof buf) != NULL);
    CHECK_STR(buf, root);
    CHECK_ERR(chdir("y"), ENOENT);
    CHECK_ERR(chdir("ly"), ENOENT); /* dangling now */
    CHECK_ERR(chdir("x"), ENOENT);
    fd = CHECK_OK(open("f", O_RDONLY));
    CHECK_ERR(fchdir(fd), ENOTDIR);
    CHECK_OK(close(fd));
    CHECK_ERR(chdir("f"), ENOTDIR);
    /* a symlink to a directory: chdir follows it, getcwd shows the target. */
    CHECK_OK(symlink("d/b", "lb"));
    CHECK_OK(chdir("lb"));
    CHECK(getcwd(buf, sizeof buf) != NULL);
    {
        char want[PATH_MAX];
        snprintf(want, sizeof want, "%s/d/b", root);
        CHECK_STR(buf, want);
    }
    CHECK_OK(fchdir(rootfd));

    /* trailing slash on a file → ENOTDIR. */
    CHECK_ERR(open("f/", O_RDONLY), ENOTDIR);
    CHECK_ERR(stat("f/", &st), ENOTDIR);
    CHECK_ERR(open("f/.", O_RDONLY), ENOTDIR);
    CHECK_ERR(unlink("f/"), ENOTDIR);
    /* trailing slash on a directory / symlink to a directory is fine. */
    CHECK_OK(stat("d/", &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_OK(stat("lb/", &st));
    CHECK(S_ISDIR(st.st_mode));
    CHECK_OK(lstat("lb/", &st)); /* trailing slash forces following */
    CHECK(S_ISDIR(st.st_mode));
    CHECK_OK(lstat("lb", &st));
    CHECK(S_ISLNK(st.st_mode));

    /* "dir/../dir" and "./././" resolve; ".." through a symlink is lexical
     * on the *target* (Linux), so lb/.. is d. */
    CHECK_OK(stat("d/../d/./a", &st));
    CHECK(S_ISREG(st.st_mode));
    CHECK_OK(stat("d", &st));
    CHECK_OK(stat("lb/..", &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    CHECK_OK(stat(".//.//d//a", &st));
    CHECK_ERR(stat("missing/..", &st), ENOENT);
    CHECK_ERR(stat("f/..", &st), ENOTDIR);

    /* "/.." is "/" and "/../../etc/passwd" is "/etc/passwd". */
    CHECK_OK(stat("/", &st));
    CHECK_OK(stat("/..", &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    CHECK_EQ(st.st_dev, st2.st_dev);
    CHECK_OK(stat("/../../..", &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    CHECK_OK(stat("/etc/passwd", &st));
    CHECK_OK(stat("/../../etc/../etc/passwd", &st2));
    CHECK_EQ(st.st_ino, st2.st_ino);
    CHECK_OK(chdir("/.."));
    CHECK(getcwd(buf, sizeof buf) != NULL);
    CHECK_STR(buf, "/");
    CHECK_OK(fchdir(rootfd));

    /* symlink loop → ELOOP. */
    CHECK_OK(symlink("loop2", "loop1"));
    CHECK_OK(symlink("loop1", "loop2"));
    CHECK_ERR(open("loop1", O_RDONLY), ELOOP);
    CHECK_ERR(stat("loop1", &st), ELOOP);
    CHECK_OK(lstat("loop1", &st));
    CHECK_OK(symlink("self", "self"));
    CHECK_ERR(stat("self/x", &st), ELOOP);

    /* chain: c01 -> c02 -> ... -> c41 -> target. Opening c02 follows
     * exactly 40 symlinks (ok); c01 follows 41 (ELOOP). */
    CHECK_OK(close(CHECK_OK(open("target", O_CREAT | O_WRONLY, 0644))));
    for (int i = 1; i <= 41; i++) {
        char name[16], to[16];
        snprintf(name, sizeof name, "c%02d", i);
        if (i == 41)
            snprintf(to, sizeof to, "target");
        else
            snprintf(to, sizeof to, "c%02d", i + 1);
        CHECK_OK(symlink(to, name));
    }
    CHECK_OK(stat("c02", &st));
    CHECK(S_ISREG(st.st_mode));
    CHECK_OK(close(CHECK_OK(open("c02", O_RDONLY))));
    CHECK_ERR(stat("c01", &st), ELOOP);
    CHECK_ERR(open("c01", O_RDONLY), ELOOP);
    /* a chain used as a directory component counts the same way. */
    CHECK_OK(mkdir("tdir", 0755));
    CHECK_OK(close(CHECK_OK(open("tdir/leaf", O_CREAT | O_WRONLY, 0644))));
    for (int i = 1; i <= 41; i++) {
        char name[16], to[16];
        snprintf(name, sizeof name, "e%02d", i);
        if (i == 41)
            snprintf(to, sizeof to, "tdir");
        else
            snprintf(to, sizeof to, "e%02d", i + 1);
        CHECK_OK(symlink(to, name));
    }
    CHECK_OK(stat("e02/leaf", &st));
    CHECK_ERR(stat("e01/leaf", &st), ELOOP);

    /* ENAMETOOLONG for a component > 255 bytes. */
    {
        char longname[300];
        memset(longname, 'n', 256);
        longname[256] = 0;
        CHECK_ERR(open(longname, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
        CHECK_ERR(mkdir(longname, 0755), ENAMETOOLONG);
    }

    CHECK_OK(close(dfd));
    CHECK_OK(close(rootfd));
    return 0;
}
