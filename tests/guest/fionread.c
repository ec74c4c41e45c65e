/* fionread.c — FIONREAD as Linux answers it: the bytes queued in a pipe;
 * on a pseudo-terminal, what the replica can read and what the master can
 * read; on Unix sockets, a stream's and a seqpacket's unread bytes, the
 * next datagram's size, EINVAL on a listening socket; on a TCP socket, the
 * bytes received. */
#include "check.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>

static int queued(int fd) {
    int n = -1;
    CHECK_OK(ioctl(fd, FIONREAD, &n));
    return n;
}

/* FIONREAD once `want` bytes arrived (a terminal and TCP deliver after
 * the write returns), or what is there after two seconds. */
static int queued_eventually(int fd, int want) {
    int n = 0;
    for (int i = 0; i < 200 && (n = queued(fd)) < want; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 10);
    }
    return n;
}

static void pipes(void) {
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_EQ(queued(p[0]), 0);
    CHECK_EQ(write(p[1], "hello", 5), 5);
    CHECK_EQ(queued(p[0]), 5);
    char b[2];
    CHECK_EQ(read(p[0], b, 2), 2);
    CHECK_EQ(queued(p[0]), 3);
    CHECK_ERR(ioctl(p[0], FIONREAD, (int *)8), EFAULT);
    close(p[0]);
    close(p[1]);
}

static void terminal(void) {
    int m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
    CHECK_OK(grantpt(m));
    CHECK_OK(unlockpt(m));
    int s = CHECK_OK(open(ptsname(m), O_RDWR | O_NOCTTY));
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    cfmakeraw(&t);
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    CHECK_EQ(queued(s), 0);
    CHECK_EQ(write(m, "typed", 5), 5);
    CHECK_EQ(queued_eventually(s, 5), 5);
    CHECK_EQ(write(s, "out", 3), 3);
    CHECK_EQ(queued_eventually(m, 3), 3);
    close(s);
    close(m);
}

static void unix_sockets(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_EQ(write(sv[0], "1234567", 7), 7);
    CHECK_EQ(write(sv[0], "abc", 3), 3);
    CHECK_EQ(queued(sv[1]), 10);
    CHECK_EQ(queued(sv[0]), 0);
    close(sv[0]);
    close(sv[1]);

    CHECK_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
    CHECK_EQ(send(sv[0], "12345", 5, 0), 5);
    CHECK_EQ(send(sv[0], "123456789", 9, 0), 9);
    CHECK_EQ(queued(sv[1]), 14);
    close(sv[0]);
    close(sv[1]);

    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    CHECK_EQ(queued(sv[1]), 0);
    CHECK_EQ(send(sv[0], "12345", 5, 0), 5);
    CHECK_EQ(send(sv[0], "123456789", 9, 0), 9);
    CHECK_EQ(queued(sv[1]), 5);
    char b[16];
    CHECK_EQ(recv(sv[1], b, sizeof b, 0), 5);
    CHECK_EQ(queued(sv[1]), 9);
    close(sv[0]);
    close(sv[1]);

    int l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, "\0fionread", 9);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof(sa_family_t) + 9));
    CHECK_OK(listen(l, 1));
    int n;
    CHECK_ERR(ioctl(l, FIONREAD, &n), EINVAL);
    close(l);
}

static void tcp(void) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
    socklen_t len = sizeof a;
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
    CHECK_OK(listen(l, 1));
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
    int s = CHECK_OK(accept(l, NULL, NULL));
    CHECK_EQ(queued(s), 0);
    CHECK_EQ(write(c, "segment", 7), 7);
    CHECK_EQ(queued_eventually(s, 7), 7);
    close(s);
    close(c);
    close(l);
}

int main(void) {
    pipes();
    terminal();
    unix_sockets();
    tcp();
    return 0;
}
