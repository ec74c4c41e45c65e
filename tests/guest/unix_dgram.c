/* unix_dgram.c — message-oriented Unix sockets: SOCK_DGRAM (pairs, named
 * sockets, sendto/recvfrom, connect) and SOCK_SEQPACKET (pairs, listen/
 * accept): message boundaries, truncation (MSG_TRUNC), sender addresses,
 * SCM_RIGHTS per message, the end of a packet connection, errors; and
 * SCM_CREDENTIALS with SO_PASSCRED on every socket type. */
#include "check.h"
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static volatile sig_atomic_t pipes;
static void on_pipe(int sig) { (void)sig; pipes++; }

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(a->sun_path + 1, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Sends `data` with one SOL_SOCKET control message of `type`. */
static ssize_t send_control(int sock, const char *data, int type, const void *payload, size_t len) {
    char cbuf[CMSG_SPACE(sizeof(struct ucred))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {(void *)data, strlen(data)};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf;
    m.msg_controllen = CMSG_SPACE(len);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(len);
    memcpy(CMSG_DATA(c), payload, len);
    return sendmsg(sock, &m, 0);
}

static void send_fd(int sock, int fd, const char *data) {
    CHECK_EQ(send_control(sock, data, SCM_RIGHTS, &fd, sizeof fd), (long)strlen(data));
}

static int sock_type(int sock) {
    int type = 0;
    socklen_t len = sizeof type;
    CHECK_OK(getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len));
    return type;
}

static void datagram_pairs(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    CHECK_EQ(sock_type(sv[0]), SOCK_DGRAM);
    struct ucred cred;
    socklen_t len = sizeof cred;
    CHECK_OK(getsockopt(sv[1], SOL_SOCKET, SO_PEERCRED, &cred, &len));
    CHECK_EQ(cred.pid, getpid()); /* a pair's maker */
    CHECK_EQ(send(sv[0], "a", 1, 0), 1);
    CHECK_EQ(send(sv[0], "bc", 2, 0), 2);
    CHECK_EQ(send(sv[0], "def", 3, 0), 3);
    CHECK_EQ(send(sv[0], "", 0, 0), 0);
    struct pollfd p = {sv[1], POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLIN);
    char buf[8] = {0};
    CHECK_EQ(recv(sv[1], buf, 2, 0), 1);
    CHECK_EQ(buf[0], 'a');
    CHECK_EQ(recv(sv[1], buf, 2, MSG_PEEK), 2);
    CHECK_EQ(recv(sv[1], buf, 2, 0), 2);
    CHECK(memcmp(buf, "bc", 2) == 0);
    /* A message longer than the buffer: the rest is dropped. */
    CHECK_EQ(recv(sv[1], buf, 2, MSG_TRUNC | MSG_PEEK), 3);
    struct iovec iov = {buf, 2};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    CHECK_EQ(recvmsg(sv[1], &m, 0), 2);
    CHECK(m.msg_flags & MSG_TRUNC);
    CHECK(memcmp(buf, "de", 2) == 0);
    CHECK_EQ(recv(sv[1], buf, sizeof buf, 0), 0); /* the empty datagram */
    CHECK_ERR(recv(sv[1], buf, sizeof buf, MSG_DONTWAIT), EAGAIN);

    /* Descriptors travel with their message. */
    int pfd[2];
    CHECK_OK(pipe(pfd));
    send_fd(sv[0], pfd[1], "fd");
    CHECK_EQ(send(sv[0], "next", 4, 0), 4);
    char cbuf[CMSG_SPACE(sizeof(int))];
    iov.iov_base = buf;
    iov.iov_len = sizeof buf;
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    m.msg_flags = 0;
    CHECK_EQ(recvmsg(sv[1], &m, 0), 2);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL && c->cmsg_type == SCM_RIGHTS);
    int got;
    memcpy(&got, CMSG_DATA(c), sizeof got);
    CHECK_EQ(write(got, "x", 1), 1);
    CHECK_EQ(read(pfd[0], buf, 1), 1);
    m.msg_controllen = sizeof cbuf;
    CHECK_EQ(recvmsg(sv[1], &m, 0), 4);
    CHECK_EQ(m.msg_controllen, 0);
    close(got);
    close(pfd[0]);
    close(pfd[1]);

    /* A huge length costs nothing: only the message is copied (into a
     * static buffer, low enough for the range to stay in user space). */
    static char low[16];
    CHECK_EQ(send(sv[0], "h", 1, 0), 1);
    CHECK_EQ(recv(sv[1], low, (size_t)1 << 40, 0), 1);
    /* msg_name with msg_namelen 0 means the connected peer. */
    struct sockaddr_un unused;
    struct iovec one = {"n", 1};
    struct msghdr named = {0};
    named.msg_name = &unused;
    named.msg_iov = &one;
    named.msg_iovlen = 1;
    CHECK_EQ(sendmsg(sv[0], &named, 0), 1);
    CHECK_EQ(recv(sv[1], buf, sizeof buf, 0), 1);
    /* Empty datagrams are bounded like any others. */
    int queued = 0;
    while (send(sv[0], "", 0, MSG_DONTWAIT) == 0) {
        queued++;
    }
    CHECK_EQ(errno, EAGAIN);
    CHECK(queued > 0 && queued < 100000);
    while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) == 0) {
    }

    /* A peer that is gone refuses. */
    close(sv[1]);
    CHECK_ERR(send(sv[0], "x", 1, 0), ECONNREFUSED);
    close(sv[0]);
}

static void named_datagrams(void) {
    char name[64];
    snprintf(name, sizeof name, "husk-dgram-%d", getpid());
    struct sockaddr_un srv_addr, cli_addr, from;
    socklen_t srv_len = abstract_addr(&srv_addr, name);
    int srv = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
    CHECK_OK(bind(srv, (struct sockaddr *)&srv_addr, srv_len));
    CHECK_ERR(listen(srv, 1), EOPNOTSUPP);

    /* From an unbound sender: no address. */
    int cli = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
    CHECK_ERR(send(cli, "x", 1, 0), ENOTCONN);
    CHECK_EQ(sendto(cli, "one", 3, 0, (struct sockaddr *)&srv_addr, srv_len), 3);
    char buf[16];
    socklen_t flen = sizeof from;
    CHECK_EQ(recvfrom(srv, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen), 3);
    CHECK_EQ(flen, 0);

    /* From a bound one: its name, to which the server can answer. */
    char cname[64];
    snprintf(cname, sizeof cname, "husk-dgram-cli-%d", getpid());
    socklen_t cli_len = abstract_addr(&cli_addr, cname);
    CHECK_OK(bind(cli, (struct sockaddr *)&cli_addr, cli_len));
    CHECK_EQ(sendto(cli, "two", 3, 0, (struct sockaddr *)&srv_addr, srv_len), 3);
    flen = sizeof from;
    CHECK_EQ(recvfrom(srv, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen), 3);
    CHECK_EQ(flen, cli_len);
    CHECK(memcmp(from.sun_path, cli_addr.sun_path, cli_len - offsetof(struct sockaddr_un, sun_path)) == 0);
    CHECK_EQ(sendto(srv, "back", 4, 0, (struct sockaddr *)&from, flen), 4);
    CHECK_EQ(recv(cli, buf, sizeof buf, 0), 4);

    /* connect: a default destination, and getpeername. */
    CHECK_OK(connect(cli, (struct sockaddr *)&srv_addr, srv_len));
    CHECK_EQ(send(cli, "three", 5, 0), 5);
    CHECK_EQ(recv(srv, buf, sizeof buf, 0), 5);
    struct sockaddr_un peer;
    socklen_t plen = sizeof peer;
    CHECK_OK(getpeername(cli, (struct sockaddr *)&peer, &plen));
    CHECK_EQ(plen, srv_len);

    /* Abstract names are per socket type: a stream socket finds no
     * datagram one, and may bind the same name. */
    int st = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_ERR(connect(st, (struct sockaddr *)&srv_addr, srv_len), ECONNREFUSED);
    CHECK_OK(bind(st, (struct sockaddr *)&srv_addr, srv_len));
    close(st);
    /* A socket file of another type: EPROTOTYPE. */
    struct sockaddr_un path = {0};
    path.sun_family = AF_UNIX;
    snprintf(path.sun_path, sizeof path.sun_path, "/tmp/husk-dgram-%d.sock", getpid());
    unlink(path.sun_path);
    int pd = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
    CHECK_OK(bind(pd, (struct sockaddr *)&path, sizeof path));
    st = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_ERR(connect(st, (struct sockaddr *)&path, sizeof path), EPROTOTYPE);
    CHECK_EQ(sendto(cli, "p", 1, 0, (struct sockaddr *)&path, sizeof path), 1);
    CHECK_EQ(recv(pd, buf, sizeof buf, 0), 1);
    close(st);
    close(pd);
    unlink(path.sun_path);
    close(srv);
    CHECK_ERR(send(cli, "x", 1, 0), ECONNREFUSED);
    CHECK_ERR(send(cli, "x", 1, 0), ENOTCONN); /* refused once, then disconnected */
    close(cli);
}

static void seqpackets(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
    CHECK_EQ(sock_type(sv[1]), SOCK_SEQPACKET);
    CHECK_EQ(write(sv[0], "hello", 5), 5);
    CHECK_EQ(write(sv[0], "world", 5), 5);
    char buf[16];
    CHECK_EQ(read(sv[1], buf, 3), 3);
    CHECK_EQ(read(sv[1], buf, sizeof buf), 5);
    CHECK(memcmp(buf, "world", 5) == 0);
    close(sv[0]);
    CHECK_EQ(read(sv[1], buf, sizeof buf), 0);
    /* EPIPE, and no SIGPIPE: that is for stream sockets. */
    signal(SIGPIPE, on_pipe);
    CHECK_ERR(send(sv[1], "x", 1, 0), EPIPE);
    CHECK_ERR(write(sv[1], "x", 1), EPIPE);
    CHECK_EQ(pipes, 0);
    signal(SIGPIPE, SIG_IGN);
    close(sv[1]);

    /* A socket sent through itself, then closed: nothing hangs. */
    CHECK_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
    send_fd(sv[0], sv[0], "self");
    send_fd(sv[1], sv[1], "self");
    close(sv[0]);
    close(sv[1]);

    /* Named: listen, connect, accept; boundaries hold. */
    char name[64];
    snprintf(name, sizeof name, "husk-seqpacket-%d", getpid());
    struct sockaddr_un addr;
    socklen_t alen = abstract_addr(&addr, name);
    int l = CHECK_OK(socket(AF_UNIX, SOCK_SEQPACKET, 0));
    CHECK_OK(bind(l, (struct sockaddr *)&addr, alen));
    CHECK_OK(listen(l, 4));
    int c = CHECK_OK(socket(AF_UNIX, SOCK_SEQPACKET, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&addr, alen));
    int a = CHECK_OK(accept(l, NULL, NULL));
    CHECK_EQ(send(c, "ab", 2, 0), 2);
    CHECK_EQ(send(c, "cde", 3, 0), 3);
    CHECK_EQ(recv(a, buf, sizeof buf, 0), 2);
    CHECK_EQ(recv(a, buf, sizeof buf, 0), 3);
    int st = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_ERR(connect(st, (struct sockaddr *)&addr, alen), ECONNREFUSED);
    close(st);
    close(a);
    close(c);
    close(l);
}

/* Receives one byte with room for credentials; returns them. */
static struct ucred recv_cred(int sock) {
    char data;
    struct iovec iov = {&data, 1};
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(struct ucred))]; } u;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = u.buf;
    m.msg_controllen = sizeof u.buf;
    CHECK_EQ(recvmsg(sock, &m, 0), 1);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, SOL_SOCKET);
    CHECK_EQ(c->cmsg_type, SCM_CREDENTIALS);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(struct ucred)));
    struct ucred cr;
    memcpy(&cr, CMSG_DATA(c), sizeof cr);
    return cr;
}

static ssize_t send_cred(int sock, struct ucred cr) {
    return send_control(sock, "c", SCM_CREDENTIALS, &cr, sizeof cr);
}

static void credentials(void) {
    int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};
    for (int i = 0; i < 3; i++) {
        int sv[2];
        CHECK_OK(socketpair(AF_UNIX, types[i], 0, sv));
        int on = 1, v = 0;
        socklen_t len = sizeof v;
        CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
        CHECK_OK(getsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &v, &len));
        CHECK_EQ(v, 1);
        /* Without SCM_CREDENTIALS: the sender's own. */
        CHECK_EQ(send(sv[0], "x", 1, 0), 1);
        struct ucred cr = recv_cred(sv[1]);
        CHECK_EQ(cr.pid, getpid());
        CHECK_EQ(cr.uid, getuid());
        CHECK_EQ(cr.gid, getgid());
        /* Sent explicitly. */
        struct ucred mine = {getpid(), getuid(), getgid()};
        CHECK_EQ(send_cred(sv[0], mine), 1);
        cr = recv_cred(sv[1]);
        CHECK_EQ(cr.pid, getpid());
        if (geteuid() == 0) {
            /* Root may claim other ids, but only of a live process. */
            struct ucred other = {getpid(), 1234, 4321};
            CHECK_EQ(send_cred(sv[0], other), 1);
            cr = recv_cred(sv[1]);
            CHECK_EQ(cr.uid, 1234);
            CHECK_EQ(cr.gid, 4321);
            struct ucred ghost = {999999, 0, 0};
            CHECK_ERR(send_cred(sv[0], ghost), ESRCH);
        }
        close(sv[0]);
        close(sv[1]);
    }
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    credentials();
    CHECK_ERR(socket(AF_UNIX, SOCK_RDM, 0), ESOCKTNOSUPPORT);
    CHECK_ERR(socket(AF_UNIX, 11, 0), EINVAL);
    int raw = CHECK_OK(socket(AF_UNIX, SOCK_RAW, 0)); /* a datagram socket */
    CHECK_EQ(sock_type(raw), SOCK_DGRAM);
    close(raw);
    datagram_pairs();
    named_datagrams();
    seqpackets();
    return 0;
}
