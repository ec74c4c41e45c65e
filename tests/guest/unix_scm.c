/* unix_scm.c — ancillary data on Unix sockets exactly as Linux: a stream
 * receive never runs past the send that carried descriptors (they ride on
 * its first byte), never glues two writers' bytes when SO_PASSCRED asks
 * for their credentials, MSG_PEEK installs the descriptors too, a short
 * control buffer truncates with MSG_CTRUNC (a credentials message cut to
 * the room, as put_cmsg does), and control messages are aligned. */
#include "check.h"
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

/* Sends `data` on `fd` with the descriptors fds[0..n) (n may be 0). */
static void send_fds(int fd, const char *data, const int *fds, int n) {
    struct iovec iov = {.iov_base = (void *)data, .iov_len = strlen(data)};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n > 0) {
        memset(&u, 0, sizeof(u));
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    }
    CHECK_EQ(sendmsg(fd, &m, 0), (long)strlen(data));
}

/* One receive into buf (cap bytes) with a control buffer of `ctl` bytes;
 * the data length; the message header for its control part. */
static long recv_ctl(int fd, char *buf, size_t cap, char *ctlbuf, size_t ctl, int flags, struct msghdr *m) {
    static struct iovec iov;
    iov.iov_base = buf;
    iov.iov_len = cap;
    memset(m, 0, sizeof(*m));
    m->msg_iov = &iov;
    m->msg_iovlen = 1;
    m->msg_control = ctl ? ctlbuf : NULL;
    m->msg_controllen = ctl;
    memset(buf, 0, cap);
    return recvmsg(fd, m, flags);
}

/* The descriptors of the SCM_RIGHTS message in m (at most max): count. */
static int rights_of(struct msghdr *m, int *out, int max) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            CHECK(n <= max);
            memcpy(out, CMSG_DATA(c), sizeof(int) * n);
            return n;
        }
    }
    return 0;
}

/* The inode of descriptor fd. */
static ino_t ino_of(int fd) {
    struct stat st;
    CHECK_OK(fstat(fd, &st));
    return st.st_ino;
}

/* How many descriptors are open below 256. */
static int open_fds(void) {
    int n = 0;
    for (int fd = 0; fd < 256; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

static void stream_boundaries(void) {
    int sv[2], p1[2], p2[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_OK(pipe(p1));
    CHECK_OK(pipe(p2));
    char buf[64], ctl[CMSG_SPACE(sizeof(int) * 4)];
    struct msghdr m;
    int got[4];

    /* Plain bytes, then a send with a descriptor, then another: the first
     * receive takes the plain bytes and the first send with rights, and
     * stops at its end. */
    CHECK_EQ(write(sv[0], "ab", 2), 2);
    send_fds(sv[0], "cde", &p1[0], 1);
    send_fds(sv[0], "fg", &p2[0], 1);
    CHECK_EQ(write(sv[0], "hi", 2), 2);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 5);
    CHECK_STR(buf, "abcde");
    CHECK_EQ(rights_of(&m, got, 4), 1);
    CHECK_EQ(ino_of(got[0]), ino_of(p1[0]));
    CHECK_EQ(m.msg_flags & MSG_CTRUNC, 0);
    close(got[0]);
    /* The second send with rights comes alone too (no gluing of "hi"). */
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 2);
    CHECK_STR(buf, "fg");
    CHECK_EQ(rights_of(&m, got, 4), 1);
    CHECK_EQ(ino_of(got[0]), ino_of(p2[0]));
    close(got[0]);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 2);
    CHECK_STR(buf, "hi");
    CHECK_EQ(m.msg_controllen, 0);

    /* A short read takes the descriptors with the first byte; the rest of
     * that send comes without them. */
    send_fds(sv[0], "xyz", &p1[1], 1);
    CHECK_EQ(recv_ctl(sv[1], buf, 1, ctl, sizeof(ctl), 0, &m), 1);
    CHECK_EQ(rights_of(&m, got, 4), 1);
    close(got[0]);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 2);
    CHECK_STR(buf, "yz");
    CHECK_EQ(m.msg_controllen, 0);

    /* MSG_PEEK installs the descriptors too (new numbers, same file), and
     * stops where a receive would; the receive then gets them again. */
    CHECK_EQ(write(sv[0], "p", 1), 1);
    send_fds(sv[0], "q", &p2[1], 1);
    CHECK_EQ(write(sv[0], "r", 1), 1);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), MSG_PEEK, &m), 2);
    CHECK_STR(buf, "pq");
    CHECK_EQ(rights_of(&m, got, 4), 1);
    CHECK_EQ(ino_of(got[0]), ino_of(p2[1]));
    int peeked = got[0];
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 2);
    CHECK_STR(buf, "pq");
    CHECK_EQ(rights_of(&m, got, 4), 1);
    CHECK(got[0] != peeked);
    CHECK_EQ(ino_of(got[0]), ino_of(p2[1]));
    close(got[0]);
    close(peeked);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 1);
    CHECK_STR(buf, "r");

    /* A control buffer for one descriptor of three: one installed, the
     * rest closed, MSG_CTRUNC. */
    int three[3] = {p1[0], p1[1], p2[0]};
    send_fds(sv[0], "t", three, 3);
    char small[CMSG_SPACE(sizeof(int))];
    int before = open_fds();
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), small, CMSG_LEN(sizeof(int)), 0, &m), 1);
    CHECK(m.msg_flags & MSG_CTRUNC);
    CHECK_EQ(rights_of(&m, got, 4), 1);
    CHECK_EQ(open_fds(), before + 1);
    close(got[0]);
    /* No control buffer at all: nothing installed, MSG_CTRUNC. */
    send_fds(sv[0], "u", three, 1);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, 0, 0, &m), 1);
    CHECK(m.msg_flags & MSG_CTRUNC);
    CHECK_EQ(m.msg_controllen, 0);
    CHECK_EQ(open_fds(), before);

    close(sv[0]);
    close(sv[1]);
    close(p1[0]);
    close(p1[1]);
    close(p2[0]);
    close(p2[1]);
}

/* The SCM_CREDENTIALS message of m, or NULL. */
static struct ucred *cred_of(struct msghdr *m) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
            return (struct ucred *)CMSG_DATA(c);
    return NULL;
}

static void per_writer_credentials(void) {
    int sv[2], one = 1;
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
    char buf[64], ctl[256];
    struct msghdr m;

    /* The parent writes, then a child, then the parent again. */
    CHECK_EQ(write(sv[0], "par", 3), 3);
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        _exit(write(sv[0], "kid", 3) == 3 ? 0 : 1);
    }
    int status;
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(write(sv[0], "ent", 3), 3);

    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 3);
    CHECK_STR(buf, "par");
    struct ucred *uc = cred_of(&m);
    CHECK(uc != NULL);
    CHECK_EQ(uc->pid, getpid());
    CHECK_EQ(uc->uid, getuid());
    CHECK_EQ(uc->gid, getgid());
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 3);
    CHECK_STR(buf, "kid");
    uc = cred_of(&m);
    CHECK(uc != NULL);
    CHECK_EQ(uc->pid, child);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 3);
    CHECK_STR(buf, "ent");
    CHECK_EQ(cred_of(&m)->pid, getpid());

    /* Without SO_PASSCRED the writers' bytes are glued in one read. */
    int off = 0;
    CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &off, sizeof(off)));
    CHECK_EQ(write(sv[0], "a", 1), 1);
    child = CHECK_OK(fork());
    if (child == 0)
        _exit(write(sv[0], "b", 1) == 1 ? 0 : 1);
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 2);
    CHECK_STR(buf, "ab");
    CHECK_EQ(m.msg_controllen, 0);

    /* A control buffer shorter than the credentials message: the message
     * is cut to the room (cmsg_len the room), MSG_CTRUNC. */
    CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
    CHECK_EQ(write(sv[0], "c", 1), 1);
    size_t room = sizeof(struct cmsghdr) + 4;
    memset(ctl, 0xee, sizeof(ctl));
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, room, 0, &m), 1);
    CHECK(m.msg_flags & MSG_CTRUNC);
    CHECK_EQ(m.msg_controllen, room);
    struct cmsghdr *c = (struct cmsghdr *)ctl;
    CHECK_EQ(c->cmsg_len, room);
    CHECK_EQ(c->cmsg_type, SCM_CREDENTIALS);
    int pid;
    memcpy(&pid, CMSG_DATA(c), sizeof(pid));
    CHECK_EQ(pid, getpid());
    CHECK_EQ((unsigned char)ctl[room], 0xee);
    /* Shorter than a header: nothing, MSG_CTRUNC. */
    CHECK_EQ(write(sv[0], "d", 1), 1);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(struct cmsghdr) - 1, 0, &m), 1);
    CHECK(m.msg_flags & MSG_CTRUNC);
    CHECK_EQ(m.msg_controllen, 0);

    /* Credentials first, then the descriptors at the next aligned place. */
    int p[2];
    CHECK_OK(pipe(p));
    send_fds(sv[0], "e", &p[0], 1);
    memset(ctl, 0, sizeof(ctl));
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 1);
    CHECK_EQ(m.msg_flags & MSG_CTRUNC, 0);
    CHECK_EQ(m.msg_controllen, CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int)));
    c = CMSG_FIRSTHDR(&m);
    CHECK_EQ(c->cmsg_type, SCM_CREDENTIALS);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(struct ucred)));
    c = CMSG_NXTHDR(&m, c);
    CHECK(c != NULL);
    CHECK_EQ((char *)c - ctl, CMSG_SPACE(sizeof(struct ucred)));
    CHECK_EQ(c->cmsg_type, SCM_RIGHTS);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(int)));
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(fd));
    CHECK_EQ(ino_of(fd), ino_of(p[0]));
    close(fd);
    /* Room for the credentials and a header but no descriptor: the
     * descriptors are dropped, MSG_CTRUNC, only the credentials used. */
    send_fds(sv[0], "f", &p[0], 1);
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, CMSG_SPACE(sizeof(struct ucred)) + sizeof(struct cmsghdr), 0, &m),
             1);
    CHECK(m.msg_flags & MSG_CTRUNC);
    CHECK_EQ(m.msg_controllen, CMSG_SPACE(sizeof(struct ucred)));

    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
}

static void dgram_peek_rights(void) {
    int sv[2], p[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    CHECK_OK(pipe(p));
    send_fds(sv[0], "one", &p[1], 1);
    char buf[64], ctl[CMSG_SPACE(sizeof(int) * 4)];
    struct msghdr m;
    int got[4];
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), MSG_PEEK, &m), 3);
    CHECK_EQ(rights_of(&m, got, 4), 1);
    CHECK_EQ(ino_of(got[0]), ino_of(p[1]));
    int peeked = got[0];
    CHECK_EQ(recv_ctl(sv[1], buf, sizeof(buf), ctl, sizeof(ctl), 0, &m), 3);
    CHECK_EQ(rights_of(&m, got, 4), 1);
    CHECK(got[0] != peeked);
    CHECK_EQ(ino_of(got[0]), ino_of(p[1]));
    close(got[0]);
    close(peeked);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
}

int main(void) {
    stream_boundaries();
    per_writer_credentials();
    dgram_peek_rights();
    puts("unix_scm: ok");
    return 0;
}
