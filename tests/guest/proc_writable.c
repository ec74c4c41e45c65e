/* proc_writable.c — the writable files of /proc and their parsing: a
 * process's comm, oom_score_adj (with oom_score) and coredump_filter,
 * inherited by fork; /proc/sys/kernel's hostname (per UTS namespace) and
 * keys/maxkeys; and read-only system files (cap_last_cap, overflow ids,
 * randomize_va_space, vm limits, /proc/cmdline, /proc/devices).
 *
 * Natively nothing global changes: a sysctl is written back with the value
 * it had, or refused, and the host name is set in a new UTS namespace.
 */
#include "check.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

/* Writes `len` bytes of `s` to `path` with one write; its result. */
static long write_to(const char *path, const char *s, size_t len) {
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK_OK(fd);
    long n = write(fd, s, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return n;
}

static void read_str(const char *path, char *buf, size_t cap) {
    CHECK(read_file(path, buf, cap) >= 0);
}

/* Runs `fn` in a child process, which must exit 0. */
static void in_child(void (*fn)(void)) {
    pid_t pid = fork();
    CHECK_OK(pid);
    if (pid == 0) {
        fn();
        exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
}

static long number_in(const char *path) {
    char buf[64];
    read_str(path, buf, sizeof buf);
    char *end;
    long v = strtol(buf, &end, 10);
    CHECK_STR(end, "\n");
    return v;
}

/* Whether capability `cap` is in the effective set (/proc/self/status). */
static int has_effective_cap(int cap) {
    char buf[4096];
    read_str("/proc/self/status", buf, sizeof buf);
    char *eff = strstr(buf, "CapEff:\t");
    CHECK(eff != NULL);
    return (strtoull(eff + 8, NULL, 16) >> cap) & 1;
}

static void grandchild_sees_300(void) {
    CHECK_EQ(number_in("/proc/self/oom_score_adj"), 300);
}

static void oom_scores(void) {
    const char *adj = "/proc/self/oom_score_adj";
    struct stat st;
    CHECK_OK(stat(adj, &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0644);
    CHECK_OK(stat("/proc/self/oom_score", &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0444);

    CHECK_EQ(write_to(adj, "500", 3), 3);
    CHECK_EQ(number_in(adj), 500);
    /* (1000 + badness) * 2/3, badness 500 thousandths plus a little rss. */
    long score = number_in("/proc/self/oom_score");
    CHECK(score >= 990 && score < 1100);

    CHECK_EQ(write_to(adj, " 300\n", 5), 5);
    CHECK_EQ(number_in(adj), 300);
    in_child(grandchild_sees_300);
    CHECK_ERR(write_to(adj, "1001", 4), EINVAL);
    CHECK_ERR(write_to(adj, "abc", 3), EINVAL);
    CHECK_EQ(number_in(adj), 300);

    /* Below 0 (the floor) only with CAP_SYS_RESOURCE; -1000 makes the
     * process unkillable. */
    if (has_effective_cap(24)) {
        CHECK_EQ(write_to(adj, "-1000\0", 6), 6);
        CHECK_EQ(number_in(adj), -1000);
        CHECK_EQ(number_in("/proc/self/oom_score"), 0);
    } else {
        CHECK_ERR(write_to(adj, "-1000\0", 6), EACCES);
        CHECK_EQ(number_in(adj), 300);
    }
}

static void grandchild_sees_4(void) {
    char buf[32];
    read_str("/proc/self/coredump_filter", buf, sizeof buf);
    CHECK_STR(buf, "00000004\n");
    CHECK_EQ(write_to("/proc/self/coredump_filter", "10", 2), 2);
    read_str("/proc/self/coredump_filter", buf, sizeof buf);
    CHECK_STR(buf, "0000000a\n");
}

static void coredump_filter(void) {
    const char *path = "/proc/self/coredump_filter";
    char buf[32];
    read_str(path, buf, sizeof buf);
    CHECK_EQ(strlen(buf), 9);
    CHECK_EQ(buf[8], '\n');
    CHECK_EQ(write_to(path, "7\0", 2), 2);
    read_str(path, buf, sizeof buf);
    CHECK_STR(buf, "00000007\n");
    CHECK_EQ(write_to(path, "0x1ff\n", 6), 6);
    read_str(path, buf, sizeof buf);
    CHECK_STR(buf, "000001ff\n");
    CHECK_EQ(write_to(path, "1024", 4), 4);
    read_str(path, buf, sizeof buf);
    CHECK_STR(buf, "00000000\n");
    CHECK_ERR(write_to(path, "x", 1), EINVAL);
    CHECK_ERR(write_to(path, "-1", 2), EINVAL);
    CHECK_EQ(write_to(path, "4", 1), 1);
    in_child(grandchild_sees_4);
    read_str(path, buf, sizeof buf);
    CHECK_STR(buf, "00000004\n");
}

static char parent_comm[64];

static void other_process_cannot_rename(void) {
    int fd = open(parent_comm, O_WRONLY);
    CHECK_OK(fd);
    CHECK_ERR(write(fd, "x", 1), EINVAL);
    close(fd);
}

static void comm(void) {
    snprintf(parent_comm, sizeof parent_comm, "/proc/%d/task/%ld/comm", getpid(), (long)syscall(SYS_gettid));
    struct stat st;
    CHECK_OK(stat(parent_comm, &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0644);
    CHECK_EQ(write_to(parent_comm, "0123456789abcdefXYZ", 19), 19);
    char buf[64];
    read_str(parent_comm, buf, sizeof buf);
    CHECK_STR(buf, "0123456789abcde\n");
    char name[17] = {0};
    CHECK_OK(prctl(PR_GET_NAME, name));
    CHECK_STR(name, "0123456789abcde");
    CHECK_EQ(write_to("/proc/self/comm", "ab\0cd", 5), 5);
    read_str("/proc/self/comm", buf, sizeof buf);
    CHECK_STR(buf, "ab\n");
    in_child(other_process_cannot_rename);
    read_str("/proc/self/comm", buf, sizeof buf);
    CHECK_STR(buf, "ab\n");
}

static void hostname_in_new_uts(void) {
    CHECK_OK(unshare(CLONE_NEWUTS));
    const char *path = "/proc/sys/kernel/hostname";
    CHECK_EQ(write_to(path, "proc-written\nrest", 17), 17);
    struct utsname u;
    CHECK_OK(uname(&u));
    CHECK_STR(u.nodename, "proc-written");
    char buf[128];
    read_str(path, buf, sizeof buf);
    CHECK_STR(buf, "proc-written\n");
    CHECK_OK(sethostname("by-syscall", 10));
    read_str(path, buf, sizeof buf);
    CHECK_STR(buf, "by-syscall\n");
    CHECK_EQ(write_to("/proc/sys/kernel/domainname", "dom", 3), 3);
    CHECK_OK(uname(&u));
    CHECK_STR(u.domainname, "dom");
}

static void kernel_sysctls(void) {
    struct utsname before, after;
    CHECK_OK(uname(&before));
    in_child(hostname_in_new_uts);
    CHECK_OK(uname(&after));
    CHECK_STR(after.nodename, before.nodename);

    char buf[256], again[256];
    struct stat st;
    CHECK_OK(stat("/proc/sys/kernel/keys", &st));
    CHECK_EQ(st.st_mode, S_IFDIR | 0555);
    const char *maxkeys = "/proc/sys/kernel/keys/maxkeys";
    CHECK_OK(stat(maxkeys, &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0644);
    read_str(maxkeys, buf, sizeof buf);
    CHECK_ERR(write_to(maxkeys, "-1", 2), EINVAL);
    CHECK_ERR(write_to(maxkeys, "lots", 4), EINVAL);
    CHECK_EQ(write_to(maxkeys, buf, strlen(buf)), (long)strlen(buf));
    read_str(maxkeys, again, sizeof again);
    CHECK_STR(again, buf);

    /* cap_last_cap is the last capability the bounding set knows. */
    long last = number_in("/proc/sys/kernel/cap_last_cap");
    CHECK(last > 32 && last < 64);
    CHECK_OK(prctl(PR_CAPBSET_READ, last));
    CHECK_ERR(prctl(PR_CAPBSET_READ, last + 1), EINVAL);

    CHECK_EQ(number_in("/proc/sys/kernel/overflowuid"), 65534);
    CHECK_EQ(number_in("/proc/sys/kernel/overflowgid"), 65534);
    long aslr = number_in("/proc/sys/kernel/randomize_va_space");
    CHECK(aslr >= 0 && aslr <= 2);
    CHECK(number_in("/proc/sys/vm/max_map_count") > 0);
    CHECK(number_in("/proc/sys/vm/mmap_min_addr") >= 0);
    /* A read-only sysctl refuses writing, even to root. */
    CHECK_ERR(open("/proc/sys/kernel/cap_last_cap", O_WRONLY), EACCES);
}

static void system_files(void) {
    static char buf[1 << 16];
    CHECK(read_file("/proc/cmdline", buf, sizeof buf) > 0);
    CHECK_EQ(buf[strlen(buf) - 1], '\n');
    CHECK(read_file("/proc/devices", buf, sizeof buf) > 0);
    CHECK(strncmp(buf, "Character devices:\n", 19) == 0);
    char *mem = strstr(buf, "  1 mem\n");
    char *block = strstr(buf, "\n\nBlock devices:\n");
    CHECK(mem != NULL && block != NULL && mem < block);
    CHECK(strstr(buf, "136 pts\n") != NULL);
}

int main(void) {
    in_child(oom_scores);
    in_child(coredump_filter);
    in_child(comm);
    kernel_sysctls();
    system_files();
    return 0;
}
