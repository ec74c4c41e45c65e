/* seccomp_notify.c — SECCOMP_RET_USER_NOTIF with a listener, as Linux:
 * SECCOMP_FILTER_FLAG_NEW_LISTENER gives a close-on-exec
 * "anon_inode:seccomp notify" descriptor (one listener per chain: EBUSY;
 * with TSYNC only with TSYNC_ESRCH); a call the filter sends there waits
 * until the supervisor receives it (NOTIF_RECV: id, pid, seccomp_data)
 * and answers it (NOTIF_SEND: a value, an error, or FLAG_CONTINUE to run
 * it); NOTIF_ID_VALID; poll shows POLLIN for a notification to receive,
 * POLLOUT for one to answer, POLLHUP once no task uses the filter; a
 * signal interrupts the wait (EINTR, or a restart that notifies anew) and
 * the old id is gone (ENOENT); closing the listener fails the waiting and
 * later calls with ENOSYS. Without a listener USER_NOTIF is ENOSYS.
 * NOTIF_ADDFD installs a supervisor's descriptor in the waiting task: at
 * its lowest free number, or with SETFD at newfd (replacing what is
 * there), O_CLOEXEC as newfd_flags says; with SEND the new number is the
 * call's result at once (then the notification is answered: ENOENT);
 * errors: EINVAL (unknown flags, newfd_flags other than O_CLOEXEC, newfd
 * without SETFD, a short struct), E2BIG (non-zero bytes past the struct),
 * EBADF (srcfd; newfd at or past RLIMIT_NOFILE), ENOENT (unknown id),
 * EINPROGRESS (not received yet), EMFILE (no free number; a failed SEND
 * leaves the notification to answer). */
#include "check.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#define NR_OFF offsetof(struct seccomp_data, nr)

static long install(long nr, unsigned verdict, unsigned flags) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, verdict),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = {.len = 4, .filter = f};
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &p);
}

static void send_fd(int sock, int fd) {
    char c = 0;
    struct iovec iov = {.iov_base = &c, .iov_len = 1};
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    CHECK_EQ(sendmsg(sock, &m, 0), 1);
}

static int recv_fd(int sock) {
    char c;
    struct iovec iov = {.iov_base = &c, .iov_len = 1};
    char ctl[CMSG_SPACE(sizeof(int))];
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    CHECK_EQ(recvmsg(sock, &m, 0), 1);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    CHECK(cm != NULL && cm->cmsg_type == SCM_RIGHTS);
    int fd;
    memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return fd;
}

static int revents(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
    CHECK_OK(poll(&p, 1, timeout_ms));
    return p.revents;
}

static int send_resp(int fd, __u64 id, __s64 val, __s32 error, __u32 flags) {
    struct seccomp_notif_resp r = {.id = id, .val = val, .error = error, .flags = flags};
    return ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

static struct seccomp_notif recv_notif(int fd) {
    struct seccomp_notif n;
    memset(&n, 0, sizeof n);
    CHECK_OK(ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &n));
    return n;
}

/* Waits (bounded) until notification `id` is gone: its call was
 * interrupted. */
static void wait_gone(int fd, __u64 id) {
    for (int i = 0; i < 5000; i++) {
        if (ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == -1 && errno == ENOENT)
            return;
        usleep(1000);
    }
    FAILF("notification %llu still valid", (unsigned long long)id);
}

static void on_usr1(int sig) { (void)sig; }

static void handle_usr1(int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = flags;
    CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
}

/* The supervised child: every getppid goes to the listener, whose
 * answers its results show. */
static void supervised(int sock) {
    CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    /* TSYNC and a listener both answer with a positive number. */
    CHECK_ERR(install(SYS_getppid, SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC),
              EINVAL);
    int fd = CHECK_OK(install(SYS_getppid, SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER));
    CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
    char path[64], link[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = CHECK_OK(readlink(path, link, sizeof link - 1));
    link[n] = 0;
    CHECK_STR(link, "anon_inode:seccomp notify");
    /* One listener per chain. */
    CHECK_ERR(install(SYS_getpid, SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER), EBUSY);
    send_fd(sock, fd);
    CHECK_OK(close(fd));
    CHECK_EQ(syscall(SYS_getppid, 0x1234), 42);
    CHECK_ERR(syscall(SYS_getppid), EPERM);
    CHECK_OK(syscall(SYS_getppid)); /* FLAG_CONTINUE: the real call */
    handle_usr1(0);
    CHECK_ERR(syscall(SYS_getppid), EINTR);
    handle_usr1(SA_RESTART);
    CHECK_EQ(syscall(SYS_getppid), 7);
    CHECK_ERR(syscall(SYS_getppid), ENOSYS); /* the listener closed while it waited */
    CHECK_ERR(syscall(SYS_getppid), ENOSYS); /* and after */
    _exit(0);
}

static void supervise(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        close(sv[0]);
        supervised(sv[1]);
    }
    close(sv[1]);
    int fd = recv_fd(sv[0]);

    /* A value. */
    CHECK_EQ(revents(fd, 5000), POLLIN);
    struct seccomp_notif dirty;
    memset(&dirty, 0, sizeof dirty);
    dirty.flags = 1;
    CHECK_ERR(ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &dirty), EINVAL);
    struct seccomp_notif n = recv_notif(fd);
    CHECK_EQ(n.pid, pid);
    CHECK_EQ(n.data.nr, SYS_getppid);
    CHECK_EQ(n.data.arch, AUDIT_ARCH_X86_64);
    CHECK_EQ(n.data.args[0], 0x1234);
    CHECK(n.data.instruction_pointer != 0);
    CHECK_EQ(revents(fd, 0), POLLOUT);
    CHECK_OK(ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id));
    __u64 other = n.id + 1;
    CHECK_ERR(ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &other), ENOENT);
    CHECK_ERR(send_resp(fd, other, 42, 0, 0), ENOENT);
    CHECK_ERR(send_resp(fd, n.id, 42, 0, 2), EINVAL);
    CHECK_ERR(send_resp(fd, n.id, 42, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE), EINVAL);
    CHECK_OK(send_resp(fd, n.id, 42, 0, 0));

    /* An error; ids count up. */
    __u64 first = n.id;
    n = recv_notif(fd);
    CHECK_EQ(n.id, first + 1);
    CHECK_OK(send_resp(fd, n.id, 0, -EPERM, 0));

    /* The call runs. */
    n = recv_notif(fd);
    CHECK_OK(send_resp(fd, n.id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE));

    /* A signal with a handler ends the wait: EINTR; the id is gone. */
    n = recv_notif(fd);
    CHECK_OK(kill(pid, SIGUSR1));
    wait_gone(fd, n.id);
    CHECK_ERR(send_resp(fd, n.id, 1, 0, 0), ENOENT);

    /* With SA_RESTART the call restarts: a new notification. */
    n = recv_notif(fd);
    CHECK_OK(kill(pid, SIGUSR1));
    struct seccomp_notif again = recv_notif(fd);
    CHECK(again.id != n.id);
    CHECK_EQ(again.pid, pid);
    CHECK_ERR(ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id), ENOENT);
    CHECK_OK(send_resp(fd, again.id, 7, 0, 0));

    /* Not received yet: EINPROGRESS. Then the listener closes. */
    CHECK_EQ(revents(fd, 5000), POLLIN);
    CHECK_ERR(send_resp(fd, again.id + 1, 1, 0, 0), EINPROGRESS);
    CHECK_OK(close(fd));

    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAILF("supervised child status %#x", st);
    close(sv[0]);
}

/* Once every task using the filter is gone: POLLHUP. */
static void hangup(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
        send_fd(sv[1], CHECK_OK(install(SYS_getppid, SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER)));
        _exit(0);
    }
    int fd = recv_fd(sv[0]);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_EQ(st, 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK_EQ(p.revents, POLLHUP);
    close(fd);
    close(sv[0]);
    close(sv[1]);
}

static int add_fd(int fd, __u64 id, __u32 flags, int srcfd, __u32 newfd, __u32 newfd_flags) {
    struct seccomp_notif_addfd a = {.id = id, .flags = flags, .srcfd = srcfd, .newfd = newfd, .newfd_flags = newfd_flags};
    return ioctl(fd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
}

/* The child of `addfd`: each getppid's result is a descriptor the
 * supervisor added; it checks what they are. */
static void addfd_supervised(int sock, const char *path) {
    CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    int fd = CHECK_OK(install(SYS_getppid, SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER));
    send_fd(sock, fd);
    CHECK_OK(close(fd));
    int locked = CHECK_OK(open(path, O_RDWR));
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    CHECK_OK(fcntl(locked, F_SETLK, &lk));
    /* Added at the lowest free number, at 100 close-on-exec, and over
     * `locked` (which drops its lock); the answer is the first one. */
    int lowest = CHECK_OK(dup(0));
    CHECK_OK(close(lowest));
    CHECK_EQ(syscall(SYS_getppid, locked), lowest);
    struct stat st;
    CHECK_OK(fstat(lowest, &st));
    CHECK(S_ISFIFO(st.st_mode));
    CHECK_EQ(fcntl(lowest, F_GETFD), 0);
    CHECK_EQ(fcntl(lowest, F_GETFL) & O_ACCMODE, O_WRONLY);
    CHECK_EQ(fcntl(100, F_GETFD), FD_CLOEXEC);
    CHECK_OK(fstat(locked, &st));
    CHECK(S_ISFIFO(st.st_mode));
    CHECK_EQ(write(lowest, "a", 1), 1);
    CHECK_EQ(write(100, "b", 1), 1);
    CHECK_EQ(write(locked, "c", 1), 1);
    CHECK_OK(close(lowest));
    CHECK_OK(close(100));
    CHECK_OK(close(locked));
    /* SEND: the new number is the result. */
    lowest = CHECK_OK(dup(0));
    CHECK_OK(close(lowest));
    int sent = CHECK_OK(syscall(SYS_getppid, lowest));
    CHECK_EQ(sent, lowest);
    CHECK_EQ(write(sent, "d", 1), 1);
    CHECK_OK(close(sent));
    /* No free number below RLIMIT_NOFILE: EMFILE, a failed SEND, EBADF at
     * newfd past it; then an ordinary answer. */
    struct rlimit rl = {.rlim_cur = lowest, .rlim_max = lowest + 64};
    CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
    CHECK_EQ(syscall(SYS_getppid, lowest), 5);
    _exit(0);
}

static void addfd(void) {
    int sv[2], p[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_OK(pipe(p));
    char path[] = "/tmp/seccomp_notify.XXXXXX";
    int file = CHECK_OK(mkstemp(path));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        close(sv[0]);
        close(p[0]);
        close(p[1]);
        close(file);
        addfd_supervised(sv[1], path);
    }
    close(sv[1]);
    int fd = recv_fd(sv[0]);

    /* Bad requests; then at the lowest free number, at 100, over another
     * descriptor. */
    CHECK_EQ(revents(fd, 5000), POLLIN);
    struct seccomp_notif n = recv_notif(fd);
    CHECK_ERR(add_fd(fd, n.id + 1, 0, p[1], 0, 0), ENOENT);
    CHECK_ERR(add_fd(fd, n.id, 4, p[1], 0, 0), EINVAL);
    CHECK_ERR(add_fd(fd, n.id, 0, p[1], 0, O_NONBLOCK), EINVAL);
    CHECK_ERR(add_fd(fd, n.id, 0, p[1], 100, 0), EINVAL);
    CHECK_ERR(add_fd(fd, n.id, 0, 9999, 0, 0), EBADF);
    CHECK_ERR(add_fd(fd, n.id, 0, -1, 0, 0), EBADF);
    struct {
        struct seccomp_notif_addfd a;
        __u64 more;
    } big = {.a = {.id = n.id, .srcfd = p[1]}, .more = 1};
    CHECK_ERR(ioctl(fd, _IOW('!', 3, big), &big), E2BIG);
    CHECK_ERR(ioctl(fd, _IOW('!', 3, __u64[2]), &big), EINVAL);
    big.more = 0;
    int lowest = CHECK_OK(ioctl(fd, _IOW('!', 3, big), &big));
    CHECK_EQ(add_fd(fd, n.id, SECCOMP_ADDFD_FLAG_SETFD, p[1], 100, O_CLOEXEC), 100);
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    CHECK_OK(fcntl(file, F_GETLK, &lk));
    CHECK_EQ(lk.l_type, F_WRLCK);
    CHECK_EQ(lk.l_pid, pid);
    CHECK_EQ(add_fd(fd, n.id, SECCOMP_ADDFD_FLAG_SETFD, p[1], n.data.args[0], 0), (int)n.data.args[0]);
    lk.l_type = F_WRLCK;
    CHECK_OK(fcntl(file, F_GETLK, &lk));
    CHECK_EQ(lk.l_type, F_UNLCK);
    CHECK_OK(ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id));
    CHECK_OK(send_resp(fd, n.id, lowest, 0, 0));
    char buf[4];
    for (int i = 0; i < 3; i++)
        CHECK_EQ(read(p[0], buf + i, 1), 1);
    CHECK(memcmp(buf, "abc", 3) == 0);

    /* Not received yet: EINPROGRESS. SEND answers the call. */
    __u64 last = n.id;
    CHECK_EQ(revents(fd, 5000), POLLIN);
    CHECK_ERR(add_fd(fd, last + 1, SECCOMP_ADDFD_FLAG_SEND, p[1], 0, 0), EINPROGRESS);
    n = recv_notif(fd);
    CHECK_EQ(n.id, last + 1);
    CHECK_EQ(add_fd(fd, n.id, SECCOMP_ADDFD_FLAG_SEND, p[1], 0, 0), (int)n.data.args[0]);
    CHECK_ERR(ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id), ENOENT);
    /* Answered: EINPROGRESS, or ENOENT once the call has returned. */
    CHECK_EQ(add_fd(fd, n.id, 0, p[1], 0, 0), -1);
    CHECK(errno == EINPROGRESS || errno == ENOENT);
    CHECK_EQ(read(p[0], buf, 1), 1);
    CHECK_EQ(buf[0], 'd');

    /* RLIMIT_NOFILE. */
    n = recv_notif(fd);
    CHECK_ERR(add_fd(fd, n.id, 0, p[1], 0, 0), EMFILE);
    CHECK_ERR(add_fd(fd, n.id, SECCOMP_ADDFD_FLAG_SEND, p[1], 0, 0), EMFILE);
    CHECK_ERR(add_fd(fd, n.id, SECCOMP_ADDFD_FLAG_SETFD, p[1], n.data.args[0], 0), EBADF);
    CHECK_OK(ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id));
    CHECK_OK(send_resp(fd, n.id, 5, 0, 0));

    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAILF("supervised child status %#x", st);
    close(fd);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(file);
    CHECK_OK(unlink(path));
}

static int without_listener(void) {
    CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    CHECK_OK(install(SYS_getppid, SECCOMP_RET_USER_NOTIF, 0));
    CHECK_ERR(syscall(SYS_getppid), ENOSYS);
    return 0;
}

int main(void) {
    struct seccomp_notif_sizes sizes;
    CHECK_OK(syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes));
    CHECK_EQ(sizes.seccomp_notif, sizeof(struct seccomp_notif));
    CHECK_EQ(sizes.seccomp_notif_resp, sizeof(struct seccomp_notif_resp));
    CHECK_EQ(sizes.seccomp_data, sizeof(struct seccomp_data));
    __u32 action = SECCOMP_RET_USER_NOTIF;
    CHECK_OK(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action));
    supervise();
    hangup();
    addfd();
    CHECK_EQ(exit_status_of(without_listener), 0);
    puts("seccomp_notify: ok");
    return 0;
}
