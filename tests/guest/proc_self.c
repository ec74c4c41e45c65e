/* proc_self.c — /proc/self, a few global /proc files, and /dev devices. */
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

static char big[1 << 20];

/* Read a whole file with read(2) (works for /proc files that report size 0). */
static long slurp(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        FAILF("open %s: %s", path, strerror(errno));
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0)
            FAILF("read %s: %s", path, strerror(errno));
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap - 1)
            FAILF("%s is larger than %zu bytes", path, cap);
    }
    close(fd);
    buf[n] = 0;
    return (long)n;
}

static void readlink_str(const char *path, char *out, size_t cap) {
    ssize_t r = readlink(path, out, cap - 1);
    if (r < 0)
        FAILF("readlink %s: %s", path, strerror(errno));
    out[r] = 0;
}

int main(int argc, char **argv) {
    char exe[PATH_MAX], want[PATH_MAX], buf[PATH_MAX], path[64];
    pid_t pid = getpid();

    /* /proc/self is a symlink to /proc/<pid>. */
    readlink_str("/proc/self", buf, sizeof buf);
    snprintf(want, sizeof want, "%d", pid);
    CHECK_STR(buf, want);

    /* /proc/self/exe names the running binary. */
    readlink_str("/proc/self/exe", exe, sizeof exe);
    CHECK(realpath(argv[0], want) != NULL);
    CHECK_STR(exe, want);
    /* ... and opening it gives the ELF image. */
    {
        int fd = CHECK_OK(open("/proc/self/exe", O_RDONLY));
        char magic[4];
        CHECK_EQ(read(fd, magic, 4), 4);
        CHECK_MEM(magic, "\177ELF", 4);
        struct stat a, b;
        CHECK_OK(fstat(fd, &a));
        CHECK_OK(stat(want, &b));
        CHECK_EQ(a.st_ino, b.st_ino);
        CHECK_EQ(a.st_size, b.st_size);
        CHECK_OK(close(fd));
    }

    /* /proc/self/cwd. */
    CHECK_OK(chdir(scratch_dir()));
    readlink_str("/proc/self/cwd", buf, sizeof buf);
    CHECK_STR(buf, scratch_dir());

    /* /proc/self/fd/N of an open file readlinks to its path and reopens it. */
    const char *f = scratch_path("some file");
    int fd = CHECK_OK(open(f, O_CREAT | O_RDWR, 0644));
    CHECK_EQ(write(fd, "contents", 8), 8);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    readlink_str(path, buf, sizeof buf);
    CHECK_STR(buf, f);
    {
        int fd2 = CHECK_OK(open(path, O_RDONLY));
        char c[16] = {0};
        CHECK_EQ(read(fd2, c, sizeof c), 8); /* new description: offset 0 */
        CHECK_STR(c, "contents");
        CHECK_OK(close(fd2));
    }
    /* ... a deleted file gets " (deleted)". */
    CHECK_OK(unlink(f));
    readlink_str(path, buf, sizeof buf);
    snprintf(want, sizeof want, "%s (deleted)", f);
    CHECK_STR(buf, want);
    /* ... a pipe reads as pipe:[ino]. */
    int p[2];
    CHECK_OK(pipe(p));
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
    readlink_str(path, buf, sizeof buf);
    {
        struct stat st;
        CHECK_OK(fstat(p[0], &st));
        snprintf(want, sizeof want, "pipe:[%lu]", (unsigned long)st.st_ino);
        CHECK_STR(buf, want);
    }
    /* ... the directory lists exactly the open fds. */
    {
        DIR *d = opendir("/proc/self/fd");
        CHECK(d != NULL);
        int dfd = dirfd(d);
        int seen_fd = 0, seen_p0 = 0, seen_p1 = 0, seen_dfd = 0, n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            int v = atoi(de->d_name);
            n++;
            seen_fd |= v == fd;
            seen_p0 |= v == p[0];
            seen_p1 |= v == p[1];
            seen_dfd |= v == dfd;
            CHECK(fcntl(v, F_GETFD) >= 0);
        }
        CHECK(seen_fd && seen_p0 && seen_p1 && seen_dfd);
        CHECK(n >= 4);
        closedir(d);
    }
    CHECK_OK(close(p[0]));
    CHECK_OK(close(p[1]));
    CHECK_OK(close(fd));
    CHECK_ERR(readlink(path, buf, sizeof buf), ENOENT);

    /* /proc/self/cmdline equals argv NUL-joined. */
    {
        long n = slurp("/proc/self/cmdline", big, sizeof big);
        long off = 0;
        for (int i = 0; i < argc; i++) {
            size_t l = strlen(argv[i]) + 1;
            CHECK(off + (long)l <= n);
            CHECK_MEM(big + off, argv[i], l);
            off += (long)l;
        }
        CHECK_EQ(off, n);
    }

    /* /proc/self/comm is the basename of the executable (<= 15 chars). */
    {
        const char *base = strrchr(exe, '/') + 1;
        char c[32];
        snprintf(want, sizeof want, "%.15s\n", base);
        slurp("/proc/self/comm", c, sizeof c);
        CHECK_STR(c, want);
    }

    /* /proc/self/maps contains a line mapping the executable, executable. */
    {
        slurp("/proc/self/maps", big, sizeof big);
        int found_x = 0, found_stack = 0;
        for (char *line = strtok(big, "\n"); line; line = strtok(NULL, "\n")) {
            unsigned long lo, hi;
            char perms[8];
            int name_off = 0;
            if (sscanf(line, "%lx-%lx %7s %*x %*x:%*x %*u %n", &lo, &hi,
                       perms, &name_off) < 3)
                FAILF("bad maps line: %s", line);
            CHECK(lo < hi);
            CHECK(lo % 4096 == 0 && hi % 4096 == 0);
            const char *name = name_off ? line + name_off : "";
            if (strcmp(name, exe) == 0 && perms[2] == 'x') {
                unsigned long here = (unsigned long)(void *)&main;
                found_x |= lo <= here && here < hi;
            }
            if (strcmp(name, "[stack]") == 0) {
                unsigned long here = (unsigned long)(void *)&lo;
                found_stack |= lo <= here && here < hi;
            }
        }
        if (!found_x)
            FAILF("/proc/self/maps has no executable mapping of %s "
                  "containing main()", exe);
        CHECK(found_stack);
    }

    /* /proc/self/status: Name, Pid, PPid. */
    {
        slurp("/proc/self/status", big, sizeof big);
        char *l = strstr(big, "\nPid:");
        CHECK(l != NULL);
        CHECK_EQ(atoi(l + 5), pid);
        l = strstr(big, "\nPPid:");
        CHECK(l != NULL);
        CHECK_EQ(atoi(l + 6), getppid());
        CHECK(strncmp(big, "Name:\t", 6) == 0);
    }
    /* /proc/self/stat: "pid (comm) state ...". */
    {
        slurp("/proc/self/stat", big, sizeof big);
        snprintf(want, sizeof want, "%d (", pid);
        CHECK(strncmp(big, want, strlen(want)) == 0);
        char *rp = strrchr(big, ')');
        CHECK(rp != NULL && rp[1] == ' ' && rp[2] == 'R');
    }
    /* /proc/self/environ contains the harness' marker. */
    {
        long n = slurp("/proc/self/environ", big, sizeof big);
        int found = 0;
        for (long off = 0; off < n; off += (long)strlen(big + off) + 1)
            found |= strcmp(big + off, "HUSK_TEST_ENV=marker") == 0;
        CHECK(found);
    }

    /* global /proc files. */
    slurp("/proc/meminfo", big, sizeof big);
    CHECK(strncmp(big, "MemTotal:", 9) == 0);
    CHECK(atol(big + 9) > 0);
    CHECK(strstr(big, "\nMemFree:") != NULL);
    slurp("/proc/cpuinfo", big, sizeof big);
    CHECK(strncmp(big, "processor", 9) == 0);
    slurp("/proc/version", big, sizeof big);
    CHECK(strncmp(big, "Linux version ", 14) == 0);
    slurp("/proc/uptime", big, sizeof big);
    {
        double up = 0, idle = 0;
        CHECK_EQ(sscanf(big, "%lf %lf", &up, &idle), 2);
        /* A sandbox that booted milliseconds ago may show 0.00. */
        CHECK(up >= 0 && idle >= 0);
    }
    slurp("/proc/sys/kernel/ostype", big, sizeof big);
    CHECK_STR(big, "Linux\n");
    CHECK_ERR(open("/proc/self/nonexistent", O_RDONLY), ENOENT);

    /* /dev/null swallows writes, reads EOF. */
    fd = CHECK_OK(open("/dev/null", O_RDWR));
    CHECK_EQ(write(fd, "xyz", 3), 3);
    CHECK_EQ(read(fd, buf, sizeof buf), 0);
    CHECK_OK(close(fd));
    /* /dev/zero reads zeros, swallows writes. */
    fd = CHECK_OK(open("/dev/zero", O_RDWR));
    memset(buf, 'x', sizeof buf);
    CHECK_EQ(read(fd, buf, 1000), 1000);
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(buf[i], 0);
    CHECK_EQ(buf[1000], 'x');
    CHECK_EQ(write(fd, "abc", 3), 3);
    CHECK_OK(close(fd));
    /* /dev/full: writes fail with ENOSPC, reads give zeros. */
    fd = CHECK_OK(open("/dev/full", O_RDWR));
    CHECK_ERR(write(fd, "a", 1), ENOSPC);
    memset(buf, 'x', 16);
    CHECK_EQ(read(fd, buf, 16), 16);
    CHECK_EQ(buf[0] | buf[15], 0);
    CHECK_OK(close(fd));
    /* /dev/urandom gives non-zero, non-repeating bytes. */
    fd = CHECK_OK(open("/dev/urandom", O_RDONLY));
    {
        unsigned char a[64], b[64];
        CHECK_EQ(read(fd, a, sizeof a), 64);
        CHECK_EQ(read(fd, b, sizeof b), 64);
        int nz = 0;
        for (int i = 0; i < 64; i++)
            nz |= a[i];
        CHECK(nz != 0);
        CHECK(memcmp(a, b, 64) != 0);
    }
    CHECK_OK(close(fd));
    /* the standard /dev symlinks. */
    readlink_str("/dev/fd", buf, sizeof buf);
    CHECK_STR(buf, "/proc/self/fd");
    readlink_str("/dev/stdin", buf, sizeof buf);
    CHECK_STR(buf, "/proc/self/fd/0");
    return 0;
}
