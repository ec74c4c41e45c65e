/* escape_probe.c — tries to read a host file from outside the sandbox root.
 *
 * Usage (inside `husk do --rootfs DIR`):
 *     escape_probe SECRET_HOST_PATH SECRET_BASENAME
 *
 * SECRET_HOST_PATH is the absolute host path of a file that lies OUTSIDE
 * DIR. Inside the sandbox, no path may reach it. The rootfs prepared by the
 * harness contains these traps:
 *     /abs      -> /
 *     /up       -> ../../../../..
 *     /hostlink -> SECRET_HOST_PATH
 *
 * Every attempt that manages to open a regular file prints
 *     OPENED <attempt>: <file contents>
 * on stdout and makes the probe exit 1; the harness additionally checks that
 * the secret's contents never appear in stdout. Per-attempt results go to
 * stderr for diagnosis. The last stdout line is "escape_probe: done N".
 *
 * This is the one guest program that is NOT run natively by the harness:
 * natively (no sandbox) the very first attempt would read the secret.
 * It does not use check.h's scratch directory (the rootfs has only /tmp).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int attempts, opened;

/* Try to read `path` (relative to dirfd); report. */
static void try_at(const char *what, int dirfd, const char *path) {
    attempts++;
    int fd = openat(dirfd, path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "attempt %-28s %s: %s\n", what, path, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "attempt %-28s %s: opened a non-regular file\n", what,
                path);
        close(fd);
        return;
    }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        n = 0;
    buf[n] = 0;
    opened++;
    printf("OPENED %s (%s): %s\n", what, path, buf);
    fflush(stdout);
    fprintf(stderr, "attempt %-28s %s: OPENED a regular file!\n", what, path);
}

static void try_path(const char *what, const char *path) {
    try_at(what, AT_FDCWD, path);
}

/* Try to create a file; whatever happens must not reach the host. */
static void try_write(const char *what, const char *path) {
    attempts++;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fprintf(stderr, "write   %-28s %s: %s\n", what, path, strerror(errno));
        return;
    }
    if (write(fd, "PWNED\n", 6) != 6)
        fprintf(stderr, "write   %-28s %s: short write\n", what, path);
    close(fd);
    fprintf(stderr, "write   %-28s %s: created inside the sandbox\n", what,
            path);
}

/* Walk the guest tree from `dir` looking for a file named `name`. */
static int walked;
static void search(const char *dir, const char *name, int depth) {
    if (depth > 8 || walked > 20000)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        walked++;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", strcmp(dir, "/") ? dir : "",
                 de->d_name);
        if (!strcmp(p, "/proc") || !strcmp(p, "/sys") || !strcmp(p, "/dev"))
            continue;
        struct stat st;
        if (lstat(p, &st) != 0)
            continue;
        if (strcmp(de->d_name, name) == 0)
            try_path("search by basename", p);
        if (S_ISDIR(st.st_mode))
            search(p, name, depth + 1);
    }
    closedir(d);
}

static void same_as_root(const char *what, const char *path) {
    struct stat r, s;
    attempts++;
    if (stat("/", &r) != 0) {
        printf("OPENED %s: cannot stat /\n", what);
        opened++;
        return;
    }
    if (stat(path, &s) != 0) {
        fprintf(stderr, "stat    %-28s %s: %s\n", what, path, strerror(errno));
        return;
    }
    if (r.st_ino != s.st_ino || r.st_dev != s.st_dev) {
        printf("OPENED %s: %s is not the sandbox root\n", what, path);
        opened++;
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: escape_probe SECRET_HOST_PATH BASENAME\n");
        return 2;
    }
    const char *secret = argv[1]; /* absolute */
    const char *base = argv[2];
    const char *rel = secret + 1; /* without the leading '/' */
    char p[PATH_MAX];

    /* 0. sanity: we must be running in the rootfs the harness prepared
     *    (otherwise every attempt below would trivially fail or succeed). */
    {
        char t[PATH_MAX];
        ssize_t n = readlink("/hostlink", t, sizeof t - 1);
        if (n < 0 || (t[n] = 0, strcmp(t, secret) != 0)) {
            printf("escape_probe: /hostlink is not the planted link; not in "
                   "the prepared rootfs\n");
            return 3;
        }
        if (access("/etc/passwd", F_OK) == 0) {
            printf("OPENED rootfs not in effect: /etc/passwd is visible\n");
            opened++;
        }
    }

    /* 1. the host path itself, and lexical variants of it. */
    try_path("absolute host path", secret);
    snprintf(p, sizeof p, "../../..%s", secret);
    try_path("../ prefix", p);
    snprintf(p, sizeof p, "/../../../../../../..%s", secret);
    try_path("/.. prefix", p);
    snprintf(p, sizeof p, "/bin/../../../../..%s", secret);
    try_path("/bin/.. prefix", p);
    snprintf(p, sizeof p, "//.//..//%s", rel);
    try_path("slashes and dots", p);

    /* 2. symlinks planted in the rootfs. */
    snprintf(p, sizeof p, "/abs%s", secret);
    try_path("/abs -> /", p);
    snprintf(p, sizeof p, "/up%s", secret);
    try_path("/up -> ../../../../..", p);
    snprintf(p, sizeof p, "/up/../../..%s", secret);
    try_path("/up/../..", p);
    try_path("/hostlink -> secret", "/hostlink");
    same_as_root("/.. is /", "/..");
    same_as_root("/up is /", "/up");
    same_as_root("/abs is /", "/abs");
    same_as_root("/up/.. is /", "/up/..");

    /* 3. symlinks created at run time. */
    if (mkdir("/tmp/esc", 0755) == 0 || errno == EEXIST) {
        snprintf(p, sizeof p, "../../../../../../..%s", secret);
        if (symlink(p, "/tmp/esc/rt-up") == 0)
            try_path("runtime ../ symlink", "/tmp/esc/rt-up");
        if (symlink(secret, "/tmp/esc/rt-abs") == 0)
            try_path("runtime absolute symlink", "/tmp/esc/rt-abs");
        if (symlink("/..", "/tmp/esc/rt-root") == 0) {
            snprintf(p, sizeof p, "/tmp/esc/rt-root/..%s", secret);
            try_path("runtime /.. symlink", p);
        }
    }

    /* 4. /proc magic links. */
    snprintf(p, sizeof p, "/proc/self/root/../..%s", secret);
    try_path("/proc/self/root/../..", p);
    snprintf(p, sizeof p, "/proc/self/root%s", secret);
    try_path("/proc/self/root", p);
    snprintf(p, sizeof p, "/proc/1/root%s", secret);
    try_path("/proc/1/root", p);
    snprintf(p, sizeof p, "/proc/self/cwd/../../../..%s", secret);
    try_path("/proc/self/cwd/../..", p);
    same_as_root("/proc/self/root is /", "/proc/self/root");
    same_as_root("/proc/self/root/.. is /", "/proc/self/root/..");
    {
        int rfd = open("/", O_RDONLY | O_DIRECTORY);
        if (rfd >= 0) {
            snprintf(p, sizeof p, "/proc/self/fd/%d/../../..%s", rfd, secret);
            try_path("/proc/self/fd/<root>/..", p);
            close(rfd);
        }
    }

    /* 5. openat with a dirfd of "/" and "../" paths. */
    {
        int rfd = open("/", O_RDONLY | O_DIRECTORY);
        if (rfd >= 0) {
            snprintf(p, sizeof p, "..%s", secret);
            try_at("openat(/, ../path)", rfd, p);
            snprintf(p, sizeof p, "../../../..%s", secret);
            try_at("openat(/, ../../../../path)", rfd, p);
            try_at("openat(/, path)", rfd, rel);
            int up = openat(rfd, "..", O_RDONLY | O_DIRECTORY);
            if (up >= 0) {
                try_at("openat(openat(/, ..), path)", up, rel);
                close(up);
            }
            close(rfd);
        }
    }

    /* 6. chdir("..") 50 times, then relative opens. */
    for (int i = 0; i < 50; i++)
        if (chdir("..") != 0)
            break;
    {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) && strcmp(cwd, "/") != 0) {
            printf("OPENED chdir(..)x50: cwd is \"%s\", not /\n", cwd);
            opened++;
        }
    }
    try_path("relative after chdir(..)x50", rel);
    try_path("basename after chdir(..)x50", base);
    same_as_root(". after chdir(..)x50", ".");

    /* 7. find the basename anywhere in the guest tree. */
    search("/", base, 0);

    /* 8. writes through the planted links must stay inside the sandbox. */
    try_write("write through /hostlink", "/hostlink");
    snprintf(p, sizeof p, "/up/../escape-written-%s", base);
    try_write("create via /up/..", p);
    snprintf(p, sizeof p, "/abs%s", secret);
    try_write("write via /abs", p);

    /* 9. the classic chroot escape: chroot into a subdirectory while the cwd
     *    stays outside it, then climb with "..". (Done last: it changes the
     *    probe's root.) */
    if (mkdir("/tmp/jail", 0755) == 0 || errno == EEXIST) {
        if (chdir("/") == 0 && chroot("/tmp/jail") == 0) {
            for (int i = 0; i < 50; i++)
                if (chdir("..") != 0)
                    break;
            if (chroot(".") == 0) {
                try_path("chroot escape: absolute", secret);
                try_path("chroot escape: relative", rel);
            } else {
                fprintf(stderr, "chroot(.) failed: %s\n", strerror(errno));
            }
        } else {
            fprintf(stderr, "chroot(/tmp/jail) failed: %s\n", strerror(errno));
        }
    }

    printf("escape_probe: done %d attempts, %d opened\n", attempts, opened);
    return opened ? 1 : 0;
}
