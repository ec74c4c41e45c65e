/* unix_sockets.c — named Unix stream sockets: bind to a path and to an
 * abstract name, listen, connect, accept (across fork), getsockname,
 * getpeername, SO_PEERCRED, SO_ACCEPTCONN, MSG_PEEK, descriptor passing
 * (SCM_RIGHTS) and the errors Linux gives.
 */
#include "check.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

static socklen_t path_addr(struct sockaddr_un *a, const char *path) {
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    strcpy(a->sun_path, path);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name) {
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path + 1, name, strlen(name));
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

static void path_socket(void) {
    const char *path = scratch_path("sock");
    struct sockaddr_un a, got;
    socklen_t len = path_addr(&a, path);
    int srv = CHECK_OK(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    CHECK_OK(bind(srv, (struct sockaddr *)&a, len));
    struct stat st;
    CHECK_OK(stat(path, &st));
    CHECK(S_ISSOCK(st.st_mode));
    /* The path is taken; another path is refused as the socket is bound. */
    CHECK_ERR(bind(srv, (struct sockaddr *)&a, len), EADDRINUSE);
    struct sockaddr_un a2;
    CHECK_ERR(bind(srv, (struct sockaddr *)&a2, path_addr(&a2, scratch_path("sock2"))), EINVAL);
    CHECK_ERR(access(scratch_path("sock2"), F_OK), ENOENT);

    int other = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_ERR(bind(other, (struct sockaddr *)&a, len), EADDRINUSE);
    /* Bound but not listening: nobody to connect to. */
    CHECK_ERR(connect(other, (struct sockaddr *)&a, len), ECONNREFUSED);
    CHECK_ERR(accept(srv, NULL, NULL), EINVAL);

    int v = -1;
    socklen_t vl = sizeof(v);
    CHECK_OK(getsockopt(srv, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl));
    CHECK_EQ(v, 0);
    CHECK_OK(listen(srv, 4));
    CHECK_OK(getsockopt(srv, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl));
    CHECK_EQ(v, 1);

    socklen_t gl = sizeof(got);
    CHECK_OK(getsockname(srv, (struct sockaddr *)&got, &gl));
    CHECK_EQ(gl, len);
    CHECK_STR(got.sun_path, path);

    pid_t server = getpid();
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, len) != 0)
            _exit(2);
        /* The client sees the listener's credentials. */
        struct ucred sc;
        socklen_t scl = sizeof(sc);
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &sc, &scl) != 0 || sc.pid != server)
            _exit(4);
        char buf[8] = {0};
        if (write(c, "ping", 4) != 4 || read(c, buf, sizeof(buf)) != 4 || memcmp(buf, "pong", 4) != 0)
            _exit(3);
        _exit(0);
    }
    gl = sizeof(got);
    int conn = CHECK_OK(accept4(srv, (struct sockaddr *)&got, &gl, SOCK_CLOEXEC));
    /* The client never bound: its address is the family alone. */
    CHECK_EQ(gl, sizeof(sa_family_t));
    CHECK_EQ(fcntl(conn, F_GETFD), FD_CLOEXEC);
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    CHECK_OK(getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl));
    CHECK_EQ(cred.uid, getuid());
    CHECK_EQ(cred.pid, child); /* the server sees the client's */
    char buf[8] = {0};
    CHECK_EQ(read(conn, buf, sizeof(buf)), 4);
    CHECK_MEM(buf, "ping", 4);
    CHECK_EQ(write(conn, "pong", 4), 4);
    int status;
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    /* The child exited: end of stream. */
    CHECK_EQ(read(conn, buf, sizeof(buf)), 0);

    CHECK_OK(close(conn));
    CHECK_OK(close(srv));
    CHECK_OK(close(other));
    CHECK_OK(unlink(path));
}

static void abstract_socket(void) {
    struct sockaddr_un a, got;
    socklen_t len = abstract_addr(&a, "husk-guest-abstract");
    int srv = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_OK(bind(srv, (struct sockaddr *)&a, len));
    CHECK_OK(listen(srv, 1));
    socklen_t gl = sizeof(got);
    CHECK_OK(getsockname(srv, (struct sockaddr *)&got, &gl));
    CHECK_EQ(gl, len);
    CHECK_MEM(got.sun_path, a.sun_path, len - offsetof(struct sockaddr_un, sun_path));

    int c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
    CHECK_ERR(getpeername(c, (struct sockaddr *)&got, &gl), ENOTCONN);
    CHECK_ERR(write(c, "x", 1), ENOTCONN);
    CHECK_OK(connect(c, (struct sockaddr *)&a, len));
    CHECK_ERR(connect(c, (struct sockaddr *)&a, len), EISCONN);
    gl = sizeof(got);
    CHECK_OK(getpeername(c, (struct sockaddr *)&got, &gl));
    CHECK_EQ(gl, len);
    CHECK_MEM(got.sun_path, a.sun_path, len - offsetof(struct sockaddr_un, sun_path));

    int s = CHECK_OK(accept(srv, NULL, NULL));
    /* An empty queue blocks unless the listener itself is non-blocking. */
    CHECK_OK(fcntl(srv, F_SETFL, O_NONBLOCK));
    CHECK_ERR(accept(srv, NULL, NULL), EAGAIN);
    CHECK_EQ(send(c, "abc", 3, 0), 3);
    char buf[4];
    /* MSG_PEEK leaves the bytes queued. */
    CHECK_EQ(recv(s, buf, 2, MSG_PEEK), 2);
    CHECK_MEM(buf, "ab", 2);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 3);
    CHECK_MEM(buf, "abc", 3);
    CHECK_ERR(recv(c, buf, sizeof(buf), 0), EAGAIN);
    /* recvfrom names the sender: the listener's name for the client, and
     * nothing (length 0) for the server, as the client never bound. */
    CHECK_EQ(send(s, "d", 1, 0), 1);
    gl = sizeof(got);
    CHECK_EQ(recvfrom(c, buf, sizeof(buf), 0, (struct sockaddr *)&got, &gl), 1);
    CHECK_EQ(gl, len);
    CHECK_MEM(got.sun_path, a.sun_path, len - offsetof(struct sockaddr_un, sun_path));
    CHECK_EQ(send(c, "e", 1, 0), 1);
    gl = sizeof(got);
    CHECK_EQ(recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&got, &gl), 1);
    CHECK_EQ(gl, 0);

    struct sockaddr_un none;
    CHECK_ERR(connect(CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0)), (struct sockaddr *)&none,
                      abstract_addr(&none, "husk-guest-nobody")),
              ECONNREFUSED);
    CHECK_OK(close(s));
    CHECK_OK(close(c));
    CHECK_OK(close(srv));
}

/* sendmsg with `fd` in an SCM_RIGHTS message and one byte of data. */
static ssize_t send_fd(int sock, int fd) {
    char data = 'F';
    struct iovec iov = {&data, 1};
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &m, 0);
}

static void fd_passing(void) {
    int sv[2], p[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_OK(pipe(p));
    CHECK_EQ(send_fd(sv[0], p[1]), 1);

    char data;
    struct iovec iov = {&data, 1};
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    CHECK_EQ(recvmsg(sv[1], &m, MSG_CMSG_CLOEXEC), 1);
    CHECK_EQ(data, 'F');
    /* Linux echoes MSG_CMSG_CLOEXEC in msg_flags. */
    CHECK_EQ(m.msg_flags, MSG_CMSG_CLOEXEC);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, SOL_SOCKET);
    CHECK_EQ(c->cmsg_type, SCM_RIGHTS);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(int)));
    int got;
    memcpy(&got, CMSG_DATA(c), sizeof(int));
    CHECK(got != p[1]);
    CHECK_EQ(fcntl(got, F_GETFD), FD_CLOEXEC);
    /* The received descriptor is the same open pipe. */
    CHECK_EQ(write(got, "via", 3), 3);
    char buf[4];
    CHECK_EQ(read(p[0], buf, sizeof(buf)), 3);
    CHECK_MEM(buf, "via", 3);
    CHECK_OK(close(got));

    /* No room for the descriptor: the data arrives, MSG_CTRUNC is set. */
    CHECK_EQ(send_fd(sv[0], p[1]), 1);
    struct msghdr small = {.msg_iov = &iov, .msg_iovlen = 1};
    CHECK_EQ(recvmsg(sv[1], &small, 0), 1);
    CHECK_EQ(small.msg_flags & MSG_CTRUNC, MSG_CTRUNC);
    CHECK_EQ(small.msg_controllen, 0);

    /* A plain read discards descriptors that rode on the bytes it read. */
    CHECK_EQ(send_fd(sv[0], p[1]), 1);
    CHECK_EQ(read(sv[1], buf, 1), 1);
    CHECK_EQ(write(sv[0], "z", 1), 1);
    m.msg_controllen = sizeof(u.buf);
    CHECK_EQ(recvmsg(sv[1], &m, 0), 1);
    CHECK_EQ(m.msg_controllen, 0);

    CHECK_ERR(send_fd(sv[0], 999), EBADF);

    /* Received descriptors leave flight: passing many more than
     * RLIMIT_NOFILE, one at a time, never hits ETOOMANYREFS. */
    for (int i = 0; i < 3000; i++) {
        CHECK_EQ(send_fd(sv[0], p[1]), 1);
        m.msg_controllen = sizeof(u.buf);
        CHECK_EQ(recvmsg(sv[1], &m, 0), 1);
        c = CMSG_FIRSTHDR(&m);
        CHECK(c != NULL);
        memcpy(&got, CMSG_DATA(c), sizeof(int));
        CHECK_OK(close(got));
    }
    CHECK_OK(close(p[0]));
    CHECK_OK(close(p[1]));
    CHECK_OK(close(sv[0]));
    CHECK_OK(close(sv[1]));
}

int main(void) {
    path_socket();
    abstract_socket();
    fd_passing();
    return 0;
}
