/* mmsg.c — sendmmsg and recvmmsg on UDP (loopback) and Unix datagram
 * sockets: several datagrams in one call, each message's length in its
 * msg_len, recvmmsg's MSG_WAITFORONE and MSG_DONTWAIT, a first message's
 * error returned as the call's. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#define N 3

static void fill(struct mmsghdr *m, struct iovec *iov, char bufs[][64], int n) {
    memset(m, 0, sizeof(*m) * n);
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = 64;
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
    }
}

/* Sends N datagrams "one", "two", "three" from tx in one call (to `to`,
 * or to the connected peer) and reads them back on rx in one call. */
static void exchange(int tx, int rx, struct sockaddr *to, socklen_t tolen) {
    const char *words[N] = {"one", "two", "three"};
    struct mmsghdr out[N];
    struct iovec oiov[N];
    memset(out, 0, sizeof(out));
    for (int i = 0; i < N; i++) {
        oiov[i].iov_base = (void *)words[i];
        oiov[i].iov_len = strlen(words[i]);
        out[i].msg_hdr.msg_iov = &oiov[i];
        out[i].msg_hdr.msg_iovlen = 1;
        out[i].msg_hdr.msg_name = to;
        out[i].msg_hdr.msg_namelen = tolen;
        out[i].msg_len = 999;
    }
    CHECK_EQ(sendmmsg(tx, out, N, 0), N);
    for (int i = 0; i < N; i++)
        CHECK_EQ(out[i].msg_len, strlen(words[i]));

    struct mmsghdr in[N + 1];
    struct iovec iiov[N + 1];
    char bufs[N + 1][64];
    fill(in, iiov, bufs, N + 1);
    /* One more slot than datagrams: MSG_WAITFORONE returns what came. */
    CHECK_EQ(recvmmsg(rx, in, N + 1, MSG_WAITFORONE, NULL), N);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(in[i].msg_len, strlen(words[i]));
        CHECK_MEM(bufs[i], words[i], strlen(words[i]));
    }
    /* Nothing left: a non-waiting call fails with EAGAIN. */
    CHECK_ERR(recvmmsg(rx, in, N, MSG_DONTWAIT, NULL), EAGAIN);
}

int main(void) {
    int rx = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_OK(bind(rx, (struct sockaddr *)&a, sizeof(a)));
    socklen_t alen = sizeof(a);
    CHECK_OK(getsockname(rx, (struct sockaddr *)&a, &alen));
    int tx = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    exchange(tx, rx, (struct sockaddr *)&a, sizeof(a));
    CHECK_OK(connect(tx, (struct sockaddr *)&a, sizeof(a)));
    exchange(tx, rx, NULL, 0);

    /* A first message's error is the call's; none sent is 0. */
    struct mmsghdr m[1];
    struct iovec iov[1];
    char bufs[1][64];
    fill(m, iov, bufs, 1);
    CHECK_ERR(sendmmsg(-1, m, 1, 0), EBADF);
    CHECK_EQ(sendmmsg(tx, m, 0, 0), 0);
    CHECK_ERR(recvmmsg(rx, m, 1, MSG_DONTWAIT, NULL), EAGAIN);
    close(tx);
    close(rx);

    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    exchange(sv[0], sv[1], NULL, 0);
    puts("mmsg ok");
    return 0;
}
