/* namespaces.c — namespaces made by clone(2), named by /proc/PID/ns
 * links and joined with setns(2), as Linux: clone with CLONE_NEWNS,
 * CLONE_NEWUTS and CLONE_NEWIPC gives the child namespaces of its own
 * (their links differ, the rest are shared); a link reads "uts:[N]" and
 * leads to a file whose inode is N; setns joins another process's UTS,
 * IPC or mount namespace (the latter at its root) and back, or through a
 * pidfd several of its process's at once; EINVAL for a
 * mismatched nstype, a file that names no namespace, one's own user
 * namespace, or clone flag combinations Linux refuses; EPERM and EACCES
 * without privilege.
 *
 * Run as root. It first moves into a private mount namespace of its own,
 * so natively it changes nothing outside itself. */
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static long clone_flags(unsigned long flags) { return syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0); }

/* The inode number a link text "type:[N]" names; fails on any other text. */
static unsigned long ns_number(pid_t pid, const char *name) {
    char path[64], text[64], type[32];
    snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, name);
    ssize_t n = CHECK_OK(readlink(path, text, sizeof text - 1));
    text[n] = 0;
    unsigned long ino = 0;
    char close_bracket = 0;
    CHECK_EQ(sscanf(text, "%31[a-z]:[%lu%c", type, &ino, &close_bracket), 3);
    CHECK_EQ(close_bracket, ']');
    const char *want = strcmp(name, "pid_for_children") == 0 ? "pid" : name;
    CHECK_STR(type, want);
    CHECK(ino > 0);
    return ino;
}

static int wait_status(pid_t pid) {
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void put(int fd, char c) { CHECK_EQ(write(fd, &c, 1), 1); }
static char get(int fd) {
    char c = 0;
    CHECK_EQ(read(fd, &c, 1), 1);
    return c;
}

static char scratch[64], marker[96];

static void check_links(void) {
    static const char *names[] = {"cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "user", "uts"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        unsigned long ino = ns_number(getpid(), names[i]);
        char path[64];
        snprintf(path, sizeof path, "/proc/self/ns/%s", names[i]);
        struct stat st, lst;
        CHECK_OK(stat(path, &st));
        CHECK_EQ(st.st_ino, ino);
        CHECK(S_ISREG(st.st_mode));
        CHECK_OK(lstat(path, &lst));
        CHECK(S_ISLNK(lst.st_mode));
        int fd = CHECK_OK(open(path, O_RDONLY | O_CLOEXEC));
        struct stat fst;
        CHECK_OK(fstat(fd, &fst));
        CHECK_EQ(fst.st_ino, ino);
        CHECK_EQ(fst.st_dev, st.st_dev);
        close(fd);
    }
    CHECK_EQ(ns_number(getpid(), "pid"), ns_number(getpid(), "pid_for_children"));
    struct stat st;
    CHECK_ERR(stat("/proc/self/ns/nothing", &st), ENOENT);
}

static void check_clone_and_setns(void) {
    int to_child[2], to_parent[2];
    CHECK_OK(pipe(to_child));
    CHECK_OK(pipe(to_parent));
    char host[65];
    CHECK_OK(gethostname(host, sizeof host));
    key_t key = 0x4e5a3c01;
    int q = CHECK_OK(msgget(key, IPC_CREAT | 0600));

    pid_t child = CHECK_OK(clone_flags(CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWIPC));
    if (child == 0) {
        CHECK_OK(sethostname("ns-child", 8));
        CHECK_ERR(msgget(key, 0), ENOENT); /* the parent's queue is elsewhere */
        CHECK_OK(mount("none", scratch, "tmpfs", 0, NULL));
        int fd = CHECK_OK(open(marker, O_CREAT | O_WRONLY, 0644));
        close(fd);
        put(to_parent[1], 'r');
        get(to_child[0]);
        _exit(0);
    }
    CHECK_EQ(get(to_parent[0]), 'r');
    pid_t me = getpid();
    CHECK(ns_number(child, "uts") != ns_number(me, "uts"));
    CHECK(ns_number(child, "ipc") != ns_number(me, "ipc"));
    CHECK(ns_number(child, "mnt") != ns_number(me, "mnt"));
    CHECK_EQ(ns_number(child, "net"), ns_number(me, "net"));
    CHECK_EQ(ns_number(child, "pid"), ns_number(me, "pid"));
    CHECK_EQ(ns_number(child, "user"), ns_number(me, "user"));
    char now[65];
    CHECK_OK(gethostname(now, sizeof now));
    CHECK_STR(now, host);
    CHECK_ERR(access(marker, F_OK), ENOENT); /* the child's tmpfs is not ours */

    int my_uts = CHECK_OK(open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC));
    int my_mnt = CHECK_OK(open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
    int my_ipc = CHECK_OK(open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC));
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/uts", child);
    int uts = CHECK_OK(open(path, O_RDONLY | O_CLOEXEC));
    snprintf(path, sizeof path, "/proc/%d/ns/ipc", child);
    int ipc = CHECK_OK(open(path, O_RDONLY | O_CLOEXEC));
    snprintf(path, sizeof path, "/proc/%d/ns/mnt", child);
    int mnt = CHECK_OK(open(path, O_RDONLY | O_CLOEXEC));

    /* Argument checks. */
    CHECK_ERR(setns(uts, CLONE_NEWIPC), EINVAL);
    CHECK_ERR(setns(-1, 0), EBADF);
    int plain = CHECK_OK(open("/proc/self/status", O_RDONLY | O_CLOEXEC));
    CHECK_ERR(setns(plain, 0), EINVAL);
    close(plain);
    int user = CHECK_OK(open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC));
    CHECK_ERR(setns(user, CLONE_NEWUSER), EINVAL); /* one's own */
    close(user);

    /* UTS: the child's names, then ours again. */
    CHECK_OK(setns(uts, CLONE_NEWUTS));
    CHECK_OK(gethostname(now, sizeof now));
    CHECK_STR(now, "ns-child");
    CHECK_EQ(ns_number(me, "uts"), ns_number(child, "uts"));
    CHECK_OK(setns(my_uts, 0));
    CHECK_OK(gethostname(now, sizeof now));
    CHECK_STR(now, host);

    /* IPC: the child's namespace has no queue under our key. */
    CHECK_OK(setns(ipc, CLONE_NEWIPC));
    CHECK_ERR(msgget(key, 0), ENOENT);
    CHECK_OK(setns(my_ipc, CLONE_NEWIPC));
    CHECK_EQ(msgget(key, 0), q);

    /* Mount: the child's tmpfs is there, our working directory moved to
     * the namespace's root. */
    CHECK_OK(chdir(scratch));
    CHECK_OK(setns(mnt, CLONE_NEWNS));
    CHECK_OK(access(marker, F_OK));
    char cwd[256];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_STR(cwd, "/");
    CHECK_EQ(ns_number(me, "mnt"), ns_number(child, "mnt"));
    CHECK_OK(setns(my_mnt, CLONE_NEWNS));
    CHECK_ERR(access(marker, F_OK), ENOENT);

    put(to_child[1], 'q');
    CHECK_EQ(wait_status(child), 0);
    /* A namespace outlives its last process while a file names it. */
    CHECK_OK(setns(uts, CLONE_NEWUTS));
    CHECK_OK(gethostname(now, sizeof now));
    CHECK_STR(now, "ns-child");
    CHECK_OK(setns(my_uts, CLONE_NEWUTS));
    CHECK_OK(msgctl(q, IPC_RMID, NULL));
    close(uts);
    close(ipc);
    close(mnt);
    close(my_uts);
    close(my_mnt);
    close(my_ipc);
}

static void check_refusals(void) {
    /* Flag combinations Linux refuses. */
    CHECK_ERR(clone_flags(CLONE_NEWNS | CLONE_FS), EINVAL);
    CHECK_ERR(clone_flags(CLONE_NEWIPC | CLONE_SYSVSEM), EINVAL);

    /* Without privilege: EPERM for clone, unshare and setns; another
     * user's links are EACCES. */
    pid_t parent = getpid();
    int uts = CHECK_OK(open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        CHECK_OK(setresuid(65534, 65534, 65534));
        CHECK_ERR(clone_flags(CLONE_NEWUTS), EPERM);
        CHECK_ERR(clone_flags(CLONE_NEWNS), EPERM);
        CHECK_ERR(unshare(CLONE_NEWIPC), EPERM);
        CHECK_ERR(setns(uts, CLONE_NEWUTS), EPERM);
        char path[64], text[64];
        snprintf(path, sizeof path, "/proc/%d/ns/uts", parent);
        CHECK_ERR(readlink(path, text, sizeof text), EACCES);
        CHECK_ERR(open(path, O_RDONLY), EACCES);
        CHECK_OK(readlink("/proc/self/ns/uts", text, sizeof text));
        _exit(0);
    }
    CHECK_EQ(wait_status(pid), 0);
    close(uts);
}

/* setns(pidfd, flags): the namespaces flags names of the pidfd's live
 * process, several at once; EINVAL for no flag, a flag that is no
 * namespace's or one's own user namespace; ESRCH for a zombie and a
 * reaped process. */
static void check_pidfd_setns(void) {
    int to_child[2], to_parent[2];
    CHECK_OK(pipe(to_child));
    CHECK_OK(pipe(to_parent));
    char host[65];
    CHECK_OK(gethostname(host, sizeof host));
    pid_t child = CHECK_OK(clone_flags(CLONE_NEWUTS));
    if (child == 0) {
        CHECK_OK(sethostname("ns-pidfd", 8));
        put(to_parent[1], 'r');
        get(to_child[0]);
        _exit(0);
    }
    CHECK_EQ(get(to_parent[0]), 'r');
    int pidfd = CHECK_OK(syscall(SYS_pidfd_open, child, 0));
    CHECK_ERR(setns(pidfd, 0), EINVAL);
    CHECK_ERR(setns(pidfd, CLONE_VM), EINVAL);
    CHECK_ERR(setns(pidfd, CLONE_NEWUSER | CLONE_NEWUTS), EINVAL);
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        CHECK_OK(setns(pidfd, CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET));
        char now[65];
        CHECK_OK(gethostname(now, sizeof now));
        CHECK_STR(now, "ns-pidfd");
        _exit(0);
    }
    CHECK_EQ(wait_status(pid), 0);
    char now[65];
    CHECK_OK(gethostname(now, sizeof now));
    CHECK_STR(now, host);
    put(to_child[1], 'x');
    siginfo_t si;
    CHECK_OK(waitid(P_PID, child, &si, WEXITED | WNOWAIT));
    CHECK_ERR(setns(pidfd, CLONE_NEWUTS), ESRCH);
    CHECK_EQ(wait_status(child), 0);
    CHECK_ERR(setns(pidfd, CLONE_NEWUTS), ESRCH);
    close(pidfd);
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
}

int main(void) {
    if (geteuid() != 0) {
        fprintf(stderr, "namespaces: needs root\n");
        return 1;
    }
    CHECK_OK(unshare(CLONE_NEWNS));
    CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    snprintf(scratch, sizeof scratch, "/tmp/namespaces.XXXXXX");
    CHECK(mkdtemp(scratch) != NULL);
    snprintf(marker, sizeof marker, "%s/marker", scratch);
    check_links();
    check_clone_and_setns();
    check_pidfd_setns();
    check_refusals();
    CHECK_OK(rmdir(scratch));
    return 0;
}
