/* unix_edges.c — corners of Unix sockets exactly as Linux: an SCM_RIGHTS
 * message with no descriptors is accepted and carries none; rights that
 * meet no control buffer are discarded with MSG_CTRUNC; a zero-length
 * receive still takes the descriptors (and a packet, with MSG_TRUNC);
 * bytes sent while neither end asked for SO_PASSCRED carry no
 * credentials (pid 0, the overflow ids); an accepted socket inherits the
 * listener's SO_PASSCRED; shutdown keeps what was queued readable; a send
 * from a mapping past its file's end is EFAULT; TIOCOUTQ counts what the
 * peer has not read; protocol PF_UNIX is accepted; connect(2) to a socket
 * file needs write permission; a zero-length receive on an empty stream
 * waits for data like any other (EAGAIN when non-blocking) while read(2)
 * of no bytes returns 0 at once and takes nothing; a stream socket closed
 * with data of its own unread makes its peer's next read fail with
 * ECONNRESET, once; SO_PEERCRED of a stream socket is pid 0 and ids -1
 * until listen(2) makes it the listener's own, which it stays. */
#include "check.h"
#include <fcntl.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <linux/capability.h>

static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};

/* sendmsg of `len` bytes of `data` with one SCM_RIGHTS message of `n`
 * descriptors (n may be 0: cmsg_len = CMSG_LEN(0)). */
static long send_rights(int fd, const char *data, size_t len, const int *fds, int n) {
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 2)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf};
    m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    return sendmsg(fd, &m, 0);
}

/* recvmsg into buf (cap bytes) with `ctl` bytes of control room (NULL
 * when 0); m is left describing what came. */
static long recv_into(int fd, char *buf, size_t cap, char *ctlbuf, size_t ctl, struct msghdr *m) {
    static struct iovec iov;
    iov.iov_base = buf;
    iov.iov_len = cap;
    memset(m, 0, sizeof(*m));
    m->msg_iov = cap ? &iov : NULL;
    m->msg_iovlen = cap ? 1 : 0;
    m->msg_control = ctl ? ctlbuf : NULL;
    m->msg_controllen = ctl;
    return recvmsg(fd, m, 0);
}

static void zero_fd_pass(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_EQ(send_rights(sv[0], "hello", 5, NULL, 0), 5);
    char buf[16], ctl[64];
    struct msghdr m;
    CHECK_EQ(recv_into(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), &m), 5);
    CHECK_MEM(buf, "hello", 5);
    CHECK_EQ(m.msg_controllen, 0);
    CHECK_EQ(m.msg_flags, 0);
    close(sv[0]);
    close(sv[1]);
}

/* Rights queued for a receive without a control buffer: the data comes
 * with MSG_CTRUNC and the descriptors are closed (a pipe whose only
 * writer rode along then reads EOF). */
static void rights_without_control(int type) {
    int sv[2], p[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_OK(pipe(p));
    CHECK_EQ(send_rights(sv[0], "data", 4, &p[1], 1), 4);
    close(p[1]);
    char buf[16];
    struct msghdr m;
    CHECK_EQ(recv_into(sv[1], buf, sizeof(buf), NULL, 0, &m), 4);
    CHECK_MEM(buf, "data", 4);
    CHECK_EQ(m.msg_controllen, 0);
    CHECK_EQ(m.msg_flags, MSG_CTRUNC);
    CHECK_EQ(read(p[0], buf, 1), 0);
    close(p[0]);
    close(sv[0]);
    close(sv[1]);
}

/* A receive of no bytes still takes the descriptors; a stream keeps its
 * byte, a packet is consumed (MSG_TRUNC). */
static void zero_length_receive(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_EQ(send_rights(sv[0], "a", 1, &sv[0], 1), 1);
    char buf[4], ctl[CMSG_SPACE(sizeof(int))];
    struct msghdr m;
    CHECK_EQ(recv_into(sv[1], buf, 0, ctl, sizeof(ctl), &m), 0);
    CHECK_EQ(m.msg_flags, type == SOCK_STREAM ? 0 : MSG_TRUNC);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_type, SCM_RIGHTS);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(int)));
    int got;
    memcpy(&got, CMSG_DATA(c), sizeof(int));
    CHECK_OK(close(got));
    errno = 0;
    if (type == SOCK_STREAM) {
        CHECK_EQ(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), 1);
        CHECK_EQ(buf[0], 'a');
    } else {
        CHECK_ERR(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
    }
    close(sv[0]);
    close(sv[1]);
}

static struct ucred cred_of(struct msghdr *m) {
    struct cmsghdr *c = CMSG_FIRSTHDR(m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_type, SCM_CREDENTIALS);
    struct ucred u;
    memcpy(&u, CMSG_DATA(c), sizeof(u));
    return u;
}

static void set_passcred(int fd) {
    int one = 1;
    CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
}

/* What was sent before either end set SO_PASSCRED carries no
 * credentials; what was sent after the receiver (or the sender) set it
 * carries the sender's. */
static void passcred_late(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_EQ(write(sv[0], "early", 5), 5);
    set_passcred(sv[1]);
    char buf[16], ctl[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
    struct msghdr m;
    CHECK_EQ(recv_into(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), &m), 5);
    struct ucred u = cred_of(&m);
    CHECK_EQ(u.pid, 0);
    CHECK_EQ(u.uid, 65534);
    CHECK_EQ(u.gid, 65534);
    CHECK_EQ(write(sv[0], "late", 4), 4);
    CHECK_EQ(recv_into(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), &m), 4);
    u = cred_of(&m);
    CHECK_EQ(u.pid, getpid());
    CHECK_EQ(u.uid, getuid());
    CHECK_EQ(u.gid, getgid());
    close(sv[0]);
    close(sv[1]);

    /* The sender's SO_PASSCRED attaches them too. */
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    set_passcred(sv[0]);
    CHECK_EQ(write(sv[0], "x", 1), 1);
    set_passcred(sv[1]);
    CHECK_EQ(recv_into(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), &m), 1);
    u = cred_of(&m);
    CHECK_EQ(u.pid, getpid());
    close(sv[0]);
    close(sv[1]);

    /* Descriptors sent early: no credentials either, the rights come. */
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_EQ(send_rights(sv[0], "fd", 2, &sv[0], 1), 2);
    set_passcred(sv[1]);
    CHECK_EQ(recv_into(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), &m), 2);
    u = cred_of(&m);
    CHECK_EQ(u.pid, 0);
    CHECK_EQ(u.uid, 65534);
    struct cmsghdr *c = CMSG_NXTHDR(&m, CMSG_FIRSTHDR(&m));
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_type, SCM_RIGHTS);
    int got;
    memcpy(&got, CMSG_DATA(c), sizeof(int));
    CHECK_OK(close(got));
    close(sv[0]);
    close(sv[1]);
}

static void inherit_passcred(int type) {
    int l = CHECK_OK(socket(AF_UNIX, type, 0));
    set_passcred(l);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "husk-edges-%d-%d", getpid(), type);
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1);
    CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
    CHECK_OK(listen(l, 1));
    int c = CHECK_OK(socket(AF_UNIX, type, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&a, alen));
    int s = CHECK_OK(accept(l, NULL, NULL));
    int v = -1;
    socklen_t vl = sizeof(v);
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_PASSCRED, &v, &vl));
    CHECK_EQ(v, 1);
    vl = sizeof(v);
    CHECK_OK(getsockopt(c, SOL_SOCKET, SO_PASSCRED, &v, &vl));
    CHECK_EQ(v, 0);
    close(s);
    close(c);
    close(l);
}

/* shutdown of both ends, both ways, leaves what was queued readable;
 * then the end of data. */
static void shutdown_keeps_data(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_EQ(write(sv[0], "abc", 3), 3);
    CHECK_OK(shutdown(sv[0], SHUT_RDWR));
    CHECK_OK(shutdown(sv[1], SHUT_RDWR));
    char buf[8];
    CHECK_EQ(read(sv[1], buf, sizeof(buf)), 3);
    CHECK_MEM(buf, "abc", 3);
    CHECK_EQ(read(sv[1], buf, sizeof(buf)), 0);
    close(sv[0]);
    close(sv[1]);

    /* SHUT_RD alone: queued data stays, the peer's writes fail. */
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_EQ(write(sv[0], "xy", 2), 2);
    CHECK_OK(shutdown(sv[1], SHUT_RD));
    if (type != SOCK_DGRAM)
        CHECK_ERR(send(sv[0], "z", 1, MSG_NOSIGNAL), EPIPE);
    CHECK_EQ(read(sv[1], buf, sizeof(buf)), 2);
    CHECK_MEM(buf, "xy", 2);
    CHECK_EQ(read(sv[1], buf, sizeof(buf)), 0);
    close(sv[0]);
    close(sv[1]);
}

/* A send from a mapping of a file past its end: EFAULT, nothing sent. */
static void send_beyond_eof(int type) {
    const char *path = scratch_path("empty");
    int f = CHECK_OK(open(path, O_RDWR | O_CREAT, 0600));
    void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, f, 0);
    CHECK(p != MAP_FAILED);
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_ERR(send(sv[0], p, 4096, 0), EFAULT);
    CHECK_ERR(write(sv[0], p, 16), EFAULT);
    CHECK_ERR(recv(sv[1], (char[1]){0}, 1, MSG_DONTWAIT), EAGAIN);
    /* The guest's own access there is SIGBUS. */
    pid_t pid = CHECK_OK(fork());
    if (pid == 0)
        _exit(*(volatile char *)p);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st));
    CHECK_EQ(WTERMSIG(st), SIGBUS);
    munmap(p, 4096);
    close(f);
    close(sv[0]);
    close(sv[1]);
}

/* TIOCOUTQ on a connection: 0 when nothing is in flight; while the peer
 * has not read, at least what was sent (Linux counts its buffers). */
static void outq(int type) {
    int sv[2], n = -1;
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    CHECK_OK(ioctl(sv[1], TIOCOUTQ, &n));
    CHECK_EQ(n, 0);
    CHECK_EQ(write(sv[1], "dangerzone", 10), 10);
    CHECK_OK(ioctl(sv[1], TIOCOUTQ, &n));
    CHECK(n >= 10);
    char buf[16];
    CHECK_EQ(read(sv[0], buf, sizeof(buf)), 10);
    CHECK_OK(ioctl(sv[1], TIOCOUTQ, &n));
    CHECK_EQ(n, 0);
    close(sv[0]);
    close(sv[1]);
}

static void protocols(void) {
    int s = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, PF_UNIX));
    close(s);
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, PF_UNIX, sv));
    close(sv[0]);
    close(sv[1]);
    CHECK_ERR(socket(AF_UNIX, SOCK_STREAM, 2), EPROTONOSUPPORT);
    CHECK_ERR(socketpair(AF_UNIX, SOCK_STREAM, 2, sv), EPROTONOSUPPORT);
}

/* Without CAP_DAC_OVERRIDE, connecting to a socket file needs write
 * permission on it. */
static void connect_needs_write(void) {
    const char *path = scratch_path("sock");
    int l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, path, sizeof(a.sun_path) - 1);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
    CHECK_OK(listen(l, 4));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[2];
        CHECK_OK(syscall(SYS_capget, &h, d));
        d[0].effective &= ~(1u << CAP_DAC_OVERRIDE);
        CHECK_OK(syscall(SYS_capset, &h, d));
        CHECK_OK(chmod(path, 0500));
        int c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
        CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), EACCES);
        CHECK_OK(chmod(path, 0200));
        CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_EQ(st, 0);
    close(l);
}

/* The control buffer is read whole: below net.core.optmem_max (128 KiB
 * since Linux 6.9) a zeroed one is a malformed message (EINVAL); from
 * optmem_max on, ENOBUFS before anything is read. */
static void control_limit(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    static char ctl[131072 + 8];
    struct iovec io = {"x", 1};
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl};
    m.msg_controllen = 20480;
    CHECK_ERR(sendmsg(sv[0], &m, 0), EINVAL);
    m.msg_controllen = 131072;
    CHECK_ERR(sendmsg(sv[0], &m, 0), ENOBUFS);
    close(sv[0]);
    close(sv[1]);
}

static void zero_length_empty(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    char buf[4];
    if (type == SOCK_STREAM) {
        CHECK_ERR(recv(sv[0], buf, 0, MSG_DONTWAIT), EAGAIN);
        CHECK_ERR(recv(sv[0], buf, 0, MSG_DONTWAIT | MSG_PEEK), EAGAIN);
    }
    CHECK_EQ(read(sv[0], buf, 0), 0);
    CHECK_EQ(write(sv[1], "ab", 2), 2);
    CHECK_EQ(read(sv[0], buf, 0), 0);
    CHECK_EQ(recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT), 2);
    CHECK_MEM(buf, "ab", 2);
    CHECK_OK(close(sv[0]));
    CHECK_OK(close(sv[1]));
}

static void reset_by_unread_close(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    char buf[10] = {0};
    CHECK_EQ(write(sv[1], buf, sizeof(buf)), 10);
    CHECK_OK(shutdown(sv[0], SHUT_RDWR));
    CHECK_EQ(read(sv[1], buf, sizeof(buf)), 0);
    CHECK_OK(close(sv[0]));
    CHECK_ERR(read(sv[1], buf, sizeof(buf)), ECONNRESET);
    CHECK_EQ(read(sv[1], buf, sizeof(buf)), 0);
    CHECK_OK(close(sv[1]));
    /* Closed with everything read: the end, no error. */
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_OK(close(sv[0]));
    CHECK_EQ(read(sv[1], buf, sizeof(buf)), 0);
    CHECK_OK(close(sv[1]));
}

static void check_cred(int fd, pid_t pid, uid_t uid, gid_t gid) {
    struct ucred c;
    socklen_t len = sizeof(c);
    CHECK_OK(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len));
    CHECK_EQ(len, sizeof(c));
    CHECK_EQ(c.pid, pid);
    CHECK_EQ(c.uid, uid);
    CHECK_EQ(c.gid, gid);
}

static void listener_peercred(void) {
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(l >= 0);
    check_cred(l, 0, (uid_t)-1, (gid_t)-1);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, "\0husk_edges_peercred", 21);
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 21;
    CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
    check_cred(l, 0, (uid_t)-1, (gid_t)-1);
    CHECK_OK(listen(l, 5));
    check_cred(l, getpid(), getuid(), getgid());
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(c >= 0);
    CHECK_OK(connect(c, (struct sockaddr *)&a, alen));
    int s = accept(l, NULL, NULL);
    CHECK(s >= 0);
    check_cred(s, getpid(), getuid(), getgid());
    check_cred(c, getpid(), getuid(), getgid());
    check_cred(l, getpid(), getuid(), getgid());
    CHECK_OK(close(s));
    CHECK_OK(close(c));
    CHECK_OK(close(l));
}

int main(void) {
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        zero_fd_pass(types[i]);
        rights_without_control(types[i]);
        zero_length_receive(types[i]);
        passcred_late(types[i]);
        shutdown_keeps_data(types[i]);
        send_beyond_eof(types[i]);
        outq(types[i]);
        zero_length_empty(types[i]);
        if (types[i] != SOCK_DGRAM)
            inherit_passcred(types[i]);
    }
    protocols();
    control_limit();
    reset_by_unread_close();
    listener_peercred();
    if (geteuid() == 0)
        connect_needs_write();
    return 0;
}
