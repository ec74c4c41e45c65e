/* rw_vectors.c — readv and writev on files without a position take the
 * path read and write take, for every file type: a pipe's readv fills
 * each buffer in turn; a datagram socket's writev sends one datagram of
 * all the buffers and its readv receives one datagram spread over them
 * (UDP and Unix), the rest of a longer one discarded; a stream's writev
 * arrives in order; an unmapped buffer is EFAULT. */
#include "check.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

static void pipes(void) {
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_EQ(write(p[1], "abcdefgh", 8), 8);
    char a[3], b[3], c[8];
    struct iovec rv[] = {{a, 3}, {NULL, 0}, {b, 3}, {c, sizeof c}};
    CHECK_EQ(readv(p[0], rv, 4), 8);
    CHECK(memcmp(a, "abc", 3) == 0 && memcmp(b, "def", 3) == 0 && memcmp(c, "gh", 2) == 0);
    struct iovec wv[] = {{"12", 2}, {"345", 3}};
    CHECK_EQ(writev(p[1], wv, 2), 5);
    CHECK_EQ(read(p[0], c, sizeof c), 5);
    CHECK(memcmp(c, "12345", 5) == 0);
    struct iovec bad[] = {{(void *)8, 4}};
    CHECK_ERR(writev(p[1], bad, 1), EFAULT);
    CHECK_EQ(write(p[1], "x", 1), 1);
    CHECK_ERR(readv(p[0], bad, 1), EFAULT);
    close(p[0]);
    close(p[1]);
}

/* `s` and `r` a connected pair of datagram sockets. */
static void datagrams(int s, int r) {
    struct iovec wv[] = {{"one", 3}, {"two", 3}, {"three", 5}};
    CHECK_EQ(writev(s, wv, 3), 11);
    CHECK_EQ(write(s, "next", 4), 4);
    char a[4], b[20];
    struct iovec rv[] = {{a, 4}, {b, sizeof b}};
    CHECK_EQ(readv(r, rv, 2), 11);
    CHECK(memcmp(a, "onet", 4) == 0 && memcmp(b, "wothree", 7) == 0);
    CHECK_EQ(readv(r, rv, 2), 4);
    CHECK(memcmp(a, "next", 4) == 0);
    /* A datagram longer than the buffers: the rest is gone. */
    CHECK_EQ(writev(s, wv, 3), 11);
    CHECK_EQ(write(s, "last", 4), 4);
    struct iovec small[] = {{a, 2}, {b, 3}};
    CHECK_EQ(readv(r, small, 2), 5);
    CHECK(memcmp(a, "on", 2) == 0 && memcmp(b, "etw", 3) == 0);
    CHECK_EQ(read(r, b, sizeof b), 4);
    CHECK(memcmp(b, "last", 4) == 0);
}

static void udp(void) {
    int r = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_OK(bind(r, (struct sockaddr *)&a, sizeof a));
    socklen_t len = sizeof a;
    CHECK_OK(getsockname(r, (struct sockaddr *)&a, &len));
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(connect(s, (struct sockaddr *)&a, sizeof a));
    datagrams(s, r);
    close(s);
    close(r);
}

static void unix_dgram(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    datagrams(sv[0], sv[1]);
    close(sv[0]);
    close(sv[1]);
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
    struct iovec wv[] = {{"stream", 6}, {"ing", 3}};
    CHECK_EQ(writev(c, wv, 2), 9);
    char buf[16];
    size_t got = 0;
    while (got < 9) {
        char x[4], y[12];
        struct iovec rv[] = {{x, sizeof x}, {y, sizeof y}};
        ssize_t n = CHECK_OK(readv(s, rv, 2));
        CHECK(n > 0);
        memcpy(buf + got, x, n < 4 ? (size_t)n : 4);
        if (n > 4)
            memcpy(buf + got + 4, y, (size_t)n - 4);
        got += (size_t)n;
    }
    CHECK_EQ(got, 9);
    CHECK(memcmp(buf, "streaming", 9) == 0);
    close(s);
    close(c);
    close(l);
}

int main(void) {
    pipes();
    udp();
    unix_dgram();
    tcp();
    return 0;
}
