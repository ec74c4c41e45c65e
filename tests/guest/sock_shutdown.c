/* sock_shutdown.c — shutdown(SHUT_RD/WR/RDWR) on Unix stream, seqpacket
 * and datagram pairs and on TCP and UDP over loopback: the poll bits of
 * both ends before and after (POLLIN, POLLOUT, POLLHUP, POLLRDHUP,
 * POLLERR) as Linux reports them, what sends and receives then return, and
 * SIGPIPE on a send after SHUT_WR where Linux raises it (MSG_NOSIGNAL
 * suppresses it). */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#define BITS (POLLIN | POLLOUT | POLLHUP | POLLRDHUP | POLLERR)
#define IO (POLLIN | POLLOUT)
#define RD (POLLIN | POLLOUT | POLLRDHUP)
#define ALLHUP (POLLIN | POLLOUT | POLLHUP | POLLRDHUP)

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig) {
    (void)sig;
    sigpipes++;
}

/* fd's poll bits of interest, waiting up to `ms` for `want` to show (a
 * loopback FIN may take a moment), then as they are. */
static int bits(int fd, int want, int ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP};
    for (int i = 0; i <= ms; i++) {
        p.revents = 0;
        CHECK_OK(poll(&p, 1, 0));
        if ((p.revents & BITS) == want)
            break;
        usleep(1000);
    }
    return p.revents & BITS;
}

#define CHECK_BITS(fd, want) CHECK_EQ(bits(fd, want, 200), want)

enum kind { UNIX_STREAM, UNIX_SEQPACKET, UNIX_DGRAM, TCP, UDP };

static const char *names[] = {"unix stream", "unix seqpacket", "unix dgram", "tcp", "udp"};

/* A connected pair of kind k. */
static void pair(enum kind k, int sv[2]) {
    if (k == UNIX_STREAM || k == UNIX_SEQPACKET || k == UNIX_DGRAM) {
        int ty = k == UNIX_STREAM ? SOCK_STREAM : k == UNIX_SEQPACKET ? SOCK_SEQPACKET : SOCK_DGRAM;
        CHECK_OK(socketpair(AF_UNIX, ty, 0, sv));
        return;
    }
    int ty = k == TCP ? SOCK_STREAM : SOCK_DGRAM;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof(a);
    int l = CHECK_OK(socket(AF_INET, ty, 0));
    CHECK_OK(bind(l, (struct sockaddr *)&a, n));
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &n));
    sv[0] = CHECK_OK(socket(AF_INET, ty, 0));
    if (k == TCP) {
        CHECK_OK(listen(l, 1));
        CHECK_OK(connect(sv[0], (struct sockaddr *)&a, n));
        sv[1] = CHECK_OK(accept(l, NULL, NULL));
        close(l);
        return;
    }
    struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_OK(bind(sv[0], (struct sockaddr *)&b, n));
    CHECK_OK(getsockname(sv[0], (struct sockaddr *)&b, &n));
    CHECK_OK(connect(sv[0], (struct sockaddr *)&a, n));
    CHECK_OK(connect(l, (struct sockaddr *)&b, n));
    sv[1] = l;
}

static void check_kind(enum kind k) {
    int sv[2];
    char c;
    int stream = k == UNIX_STREAM || k == TCP;
    fprintf(stderr, "%s\n", names[k]);

    /* SHUT_RD: the end reads as ended; a Unix peer can no longer send
     * to it, an IP peer still can. */
    pair(k, sv);
    CHECK_BITS(sv[0], POLLOUT);
    CHECK_BITS(sv[1], POLLOUT);
    CHECK_OK(shutdown(sv[0], SHUT_RD));
    CHECK_BITS(sv[0], RD);
    CHECK_BITS(sv[1], POLLOUT);
    CHECK_EQ(send(sv[0], "a", 1, MSG_NOSIGNAL), 1);
    CHECK_BITS(sv[1], IO);
    if (k == TCP || k == UDP) {
        CHECK_EQ(send(sv[1], "b", 1, MSG_NOSIGNAL), 1);
        CHECK_EQ(bits(sv[0], RD, 200), RD);
        CHECK_EQ(recv(sv[0], &c, 1, MSG_DONTWAIT), 1);
    } else {
        CHECK_ERR(send(sv[1], "b", 1, MSG_NOSIGNAL), EPIPE);
        if (k == UNIX_DGRAM) {
            CHECK_ERR(recv(sv[0], &c, 1, MSG_DONTWAIT), EAGAIN);
            CHECK_EQ(recv(sv[0], &c, 1, 0), 0);
        } else {
            CHECK_EQ(recv(sv[0], &c, 1, MSG_DONTWAIT), 0);
        }
    }
    close(sv[0]);
    close(sv[1]);

    /* SHUT_WR: sends fail with EPIPE (SIGPIPE for a stream unless
     * MSG_NOSIGNAL); a connected peer reads the end. */
    pair(k, sv);
    CHECK_OK(shutdown(sv[0], SHUT_WR));
    CHECK_BITS(sv[0], POLLOUT);
    CHECK_BITS(sv[1], k == UNIX_DGRAM || k == UDP ? POLLOUT : RD);
    sigpipes = 0;
    CHECK_ERR(send(sv[0], "a", 1, MSG_NOSIGNAL), EPIPE);
    CHECK_EQ(sigpipes, 0);
    CHECK_ERR(send(sv[0], "a", 1, 0), EPIPE);
    CHECK_EQ(sigpipes, stream ? 1 : 0);
    CHECK_ERR(write(sv[0], "a", 1), EPIPE);
    CHECK_EQ(sigpipes, stream ? 2 : 0);
    CHECK_EQ(send(sv[1], "b", 1, MSG_NOSIGNAL), 1);
    CHECK_EQ(bits(sv[0], IO, 200), IO);
    CHECK_EQ(recv(sv[0], &c, 1, MSG_DONTWAIT), 1);
    if (k != UNIX_DGRAM && k != UDP)
        CHECK_EQ(recv(sv[1], &c, 1, MSG_DONTWAIT), 0);
    /* Closing it: a Unix stream or seqpacket peer sees a hangup. */
    close(sv[0]);
    if (k == UNIX_STREAM || k == UNIX_SEQPACKET)
        CHECK_BITS(sv[1], ALLHUP);
    else if (k == TCP)
        CHECK_BITS(sv[1], RD);
    else
        CHECK_BITS(sv[1], POLLOUT);
    close(sv[1]);

    /* SHUT_RDWR: a hangup on this end; a Unix stream or seqpacket peer
     * is shut both ways too, a TCP peer reads the end. */
    pair(k, sv);
    CHECK_OK(shutdown(sv[0], SHUT_RDWR));
    CHECK_BITS(sv[0], ALLHUP);
    if (k == UNIX_STREAM || k == UNIX_SEQPACKET)
        CHECK_BITS(sv[1], ALLHUP);
    else if (k == TCP)
        CHECK_BITS(sv[1], RD);
    else
        CHECK_BITS(sv[1], POLLOUT);
    CHECK_ERR(send(sv[0], "a", 1, MSG_NOSIGNAL), EPIPE);
    /* Shutting down again is no error. */
    CHECK_OK(shutdown(sv[0], SHUT_RDWR));
    CHECK_ERR(shutdown(sv[0], 3), EINVAL);
    close(sv[0]);
    close(sv[1]);
}

int main(void) {
    struct sigaction sa = {.sa_handler = on_sigpipe};
    CHECK_OK(sigaction(SIGPIPE, &sa, NULL));
    for (int k = UNIX_STREAM; k <= UDP; k++)
        check_kind(k);

    /* An unconnected IP socket: ENOTCONN, yet Linux records the shutdown
     * (it then polls as shut both ways). An unconnected Unix one: fine. */
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_ERR(shutdown(s, SHUT_RDWR), ENOTCONN);
    CHECK_BITS(s, ALLHUP);
    close(s);
    s = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERR(shutdown(s, SHUT_RDWR), ENOTCONN);
    close(s);
    s = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    CHECK_OK(shutdown(s, SHUT_RDWR));
    CHECK_BITS(s, ALLHUP);
    close(s);
    s = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
    CHECK_OK(shutdown(s, SHUT_RDWR));
    CHECK_BITS(s, ALLHUP);
    close(s);
    puts("sock_shutdown: ok");
    return 0;
}
