/* unix_sndbuf.c — a Unix socket's send buffer as Linux accounts it: what
 * a sender queued counts against its SO_SNDBUF until the peer reads it;
 * once it is full sends fail with EAGAIN and POLLOUT is off (a write
 * shutdown does not bring it back; a drain does), and raising SO_SNDBUF
 * lets the next send through; lowering it below what is queued makes the
 * next send wait; a datagram or packet may be at most SO_SNDBUF less 32
 * bytes (EMSGSIZE); and a datagram socket not connected back to its
 * sender takes at most net.unix.max_dgram_qlen + 1 messages from it. */
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};

static int sndbuf(int fd) {
    int v = 0;
    socklen_t len = sizeof(v);
    CHECK_OK(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len));
    return v;
}

static void set_sndbuf(int fd, int v) {
    CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
}

static short pollout(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    CHECK(poll(&p, 1, 0) >= 0);
    return p.revents & POLLOUT;
}

/* Fill with `chunk`-byte sends until EAGAIN; the number that went. */
static int fill(int fd, char *buf, size_t chunk) {
    int n = 0;
    for (;;) {
        long r = send(fd, buf, chunk, MSG_DONTWAIT);
        if (r < 0) {
            CHECK_EQ(errno, EAGAIN);
            return n;
        }
        CHECK(n++ < 100000);
    }
}

/* Full at EAGAIN, not writable, and a larger SO_SNDBUF lets more in. */
static void raise_unblocks(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    int size = sndbuf(sv[0]);
    CHECK_EQ(size, 212992);
    static char buf[212992];
    int sent = fill(sv[0], buf, size / 4);
    CHECK(sent >= 3 && sent <= 5);
    CHECK_EQ(pollout(sv[0]), 0);
    set_sndbuf(sv[0], size);
    CHECK(sndbuf(sv[0]) > size);
    CHECK_EQ(send(sv[0], buf, size / 4, MSG_DONTWAIT), size / 4);
    CHECK_OK(close(sv[0]));
    CHECK_OK(close(sv[1]));
}

/* A send buffer lowered below what is queued takes nothing more. */
static void lowered_below_queued(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    static char buf[16384];
    CHECK_EQ(send(sv[0], buf, sizeof(buf), MSG_DONTWAIT), (long)sizeof(buf));
    set_sndbuf(sv[0], 4096);
    CHECK_EQ(sndbuf(sv[0]), 8192);
    CHECK_ERR(send(sv[0], buf, type == SOCK_STREAM ? sizeof(buf) : 100, MSG_DONTWAIT), EAGAIN);
    /* Once the peer reads it, there is room again. */
    CHECK_EQ(recv(sv[1], buf, sizeof(buf), MSG_WAITALL), (long)sizeof(buf));
    CHECK(pollout(sv[0]));
    CHECK_EQ(send(sv[0], buf, 100, MSG_DONTWAIT), 100);
    CHECK_OK(close(sv[0]));
    CHECK_OK(close(sv[1]));
}

/* A message is at most SO_SNDBUF less 32 bytes. */
static void message_size(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    set_sndbuf(sv[0], 4096);
    static char buf[8192];
    CHECK_ERR(send(sv[0], buf, 8192 - 31, MSG_DONTWAIT), EMSGSIZE);
    CHECK_EQ(send(sv[0], buf, 8192 - 32, MSG_DONTWAIT), 8192 - 32);
    CHECK_OK(close(sv[0]));
    CHECK_OK(close(sv[1]));
}

/* POLLOUT of a datagram socket follows its buffer, not a write shutdown. */
static void pollout_after_shutdown(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    static char buf[4096];
    CHECK(fill(sv[0], buf, sizeof(buf)) > 10);
    CHECK_EQ(pollout(sv[0]), 0);
    CHECK_OK(shutdown(sv[0], SHUT_WR));
    CHECK_EQ(pollout(sv[0]), 0);
    while (recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT) > 0) {
    }
    CHECK(pollout(sv[0]));
    CHECK_ERR(send(sv[0], buf, 1, MSG_DONTWAIT | MSG_NOSIGNAL), EPIPE);
    CHECK_OK(close(sv[0]));
    CHECK_OK(close(sv[1]));
}

/* A receiver not connected back takes max_dgram_qlen (10) + 1 messages. */
static void dgram_qlen(void) {
    int r = socket(AF_UNIX, SOCK_DGRAM, 0), s = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK(r >= 0 && s >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, "\0husk_sndbuf_qlen", 17);
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 17;
    CHECK_OK(bind(r, (struct sockaddr *)&a, alen));
    for (int i = 0; i < 11; i++)
        CHECK_EQ(sendto(s, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&a, alen), 1);
    CHECK_ERR(sendto(s, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&a, alen), EAGAIN);
    /* Connected to it, the sender is not writable either. */
    CHECK_OK(connect(s, (struct sockaddr *)&a, alen));
    CHECK_EQ(pollout(s), 0);
    char c;
    CHECK_EQ(recv(r, &c, 1, 0), 1);
    CHECK(pollout(s));
    CHECK_EQ(send(s, "x", 1, MSG_DONTWAIT), 1);
    CHECK_OK(close(r));
    CHECK_OK(close(s));
}

int main(void) {
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        raise_unblocks(types[i]);
        lowered_below_queued(types[i]);
        if (types[i] != SOCK_STREAM)
            message_size(types[i]);
    }
    pollout_after_shutdown();
    dgram_qlen();
    return 0;
}
