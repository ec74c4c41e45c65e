/* sockets.c LIMIT_MB — fills many Unix socketpairs (stream and datagram)
 * and loopback TCP connections without reading: what they queue together
 * must stay under the sandbox's memory limit. Stream and TCP sends past it
 * find no room (EAGAIN, or ENOMEM/ENOBUFS), datagrams ENOBUFS. */
#include "check.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define MiB (1024L * 1024)

static char chunk[65536];
static long total;
static long limit;

/* Sends until the socket takes no more; returns the bytes it took. */
static long fill(int fd, size_t len) {
    long took = 0;
    for (;;) {
        ssize_t n = send(fd, chunk, len, MSG_DONTWAIT);
        if (n > 0) {
            took += n;
            continue;
        }
        CHECK(n == -1);
        CHECK(errno == EAGAIN || errno == ENOMEM || errno == ENOBUFS);
        break;
    }
    total += took;
    if (total > limit)
        FAILF("sockets queue %ld MiB, past the %ld MiB limit", total / MiB, limit / MiB);
    return took;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    limit = atol(argv[1]) * MiB;
    struct rlimit rl = {65536, 65536};
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);

    /* Unix stream pairs until one takes nothing at all. */
    int empty = 0;
    for (int i = 0; i < 8192 && !empty; i++) {
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        empty = fill(sv[0], sizeof chunk) == 0;
    }
    CHECK(empty);
    long unix_stream = total;

    /* Datagram pairs find the memory spent. */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
    long dgram = 0;
    while (send(sv[0], chunk, 1024, MSG_DONTWAIT) == 1024)
        dgram += 1024;
    CHECK_EQ(errno, ENOBUFS);
    /* What the streams left is less than one of their 64 KiB writes. */
    if (dgram >= 64 * 1024)
        FAILF("datagrams took %ld KiB past the spent memory", dgram / 1024);

    /* Loopback TCP connections, likewise. */
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t alen = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &alen) == 0);
    CHECK(listen(l, 4096) == 0);
    long tcp = 0;
    for (int i = 0; i < 64; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(c >= 0);
        CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
        tcp += fill(c, sizeof chunk);
    }
    /* Without the limit each would take its 512 KiB buffer. */
    if (tcp >= MiB)
        FAILF("64 loopback TCP connections took %ld KiB past the spent memory", tcp / 1024);
    printf("sockets: %ld MiB queued in Unix streams, then nothing more, of a %ld MiB limit\n", unix_stream / MiB,
           limit / MiB);
    return 0;
}
