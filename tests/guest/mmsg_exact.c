/* mmsg_exact.c — recvmmsg and sendmmsg corner cases as Linux: without
 * MSG_WAITFORONE a blocking recvmmsg waits for every message (here until
 * SO_RCVTIMEO, then returns what came); the timeout argument is checked
 * after each message and written back with what is left (EINVAL for a bad
 * one, EFAULT for an unreadable one); a failure after the first message
 * returns the partial count; unreadable vectors are EFAULT. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#define N 4

static char bufs[N][16];
static struct iovec iov[N];
static struct mmsghdr in[N];

static void reset(void) {
    memset(in, 0, sizeof(in));
    for (int i = 0; i < N; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = sizeof(bufs[i]);
        in[i].msg_hdr.msg_iov = &iov[i];
        in[i].msg_hdr.msg_iovlen = 1;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void send_n(int tx, int n) {
    for (int i = 0; i < n; i++) {
        char c = (char)('a' + i);
        CHECK_EQ(send(tx, &c, 1, 0), 1);
    }
}

int main(void) {
    int rx = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof(a);
    CHECK_OK(bind(rx, (struct sockaddr *)&a, n));
    CHECK_OK(getsockname(rx, (struct sockaddr *)&a, &n));
    int tx = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(connect(tx, (struct sockaddr *)&a, n));

    /* Blocking, no MSG_WAITFORONE: waits for the third message until
     * SO_RCVTIMEO ends the wait, then returns the two that came. */
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    CHECK_OK(setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
    send_n(tx, 2);
    reset();
    double t0 = now();
    CHECK_EQ(recvmmsg(rx, in, 3, 0, NULL), 2);
    double waited = now() - t0;
    CHECK(waited >= 0.15);
    CHECK_EQ(in[0].msg_len, 1);
    CHECK_EQ(bufs[1][0], 'b');
    /* With MSG_WAITFORONE it returns at once. */
    send_n(tx, 2);
    reset();
    t0 = now();
    CHECK_EQ(recvmmsg(rx, in, 3, MSG_WAITFORONE, NULL), 2);
    CHECK(now() - t0 < 0.15);
    /* Nothing at all: the timeout's EAGAIN is the call's. */
    CHECK_ERR(recvmmsg(rx, in, 3, MSG_WAITFORONE, NULL), EAGAIN);

    /* A zero timeout stops after the first message. */
    send_n(tx, 3);
    reset();
    struct timespec ts = {0, 0};
    CHECK_EQ(recvmmsg(rx, in, 3, 0, &ts), 1);
    CHECK_EQ(bufs[0][0], 'a');
    /* A long one lets all come, and is written back with what is left. */
    ts.tv_sec = 5;
    ts.tv_nsec = 0;
    reset();
    CHECK_EQ(recvmmsg(rx, in, 3, MSG_DONTWAIT, &ts), 2);
    CHECK_EQ(bufs[1][0], 'c');
    CHECK(ts.tv_sec <= 5 && (ts.tv_sec < 5 || ts.tv_nsec == 0));
    CHECK(ts.tv_sec >= 4);
    /* A blocking call with a timeout waits for the rest until the
     * socket's own timeout; the timeout argument does not cut it short. */
    send_n(tx, 1);
    ts.tv_sec = 0;
    ts.tv_nsec = 50 * 1000 * 1000;
    reset();
    t0 = now();
    CHECK_EQ(recvmmsg(rx, in, 2, 0, &ts), 1);
    CHECK(now() - t0 >= 0.15);
    /* What was left after the first message (only then is it updated). */
    CHECK_EQ(ts.tv_sec, 0);
    CHECK(ts.tv_nsec > 0 && ts.tv_nsec <= 50 * 1000 * 1000);

    /* Bad timeouts. */
    send_n(tx, 1);
    ts.tv_sec = 0;
    ts.tv_nsec = 1000 * 1000 * 1000;
    CHECK_ERR(recvmmsg(rx, in, 1, MSG_DONTWAIT, &ts), EINVAL);
    ts.tv_sec = -1;
    ts.tv_nsec = 0;
    CHECK_ERR(recvmmsg(rx, in, 1, MSG_DONTWAIT, &ts), EINVAL);
    CHECK_ERR(recvmmsg(rx, in, 1, MSG_DONTWAIT, (struct timespec *)8), EFAULT);
    /* The message is still there. */
    reset();
    CHECK_EQ(recvmmsg(rx, in, 1, MSG_DONTWAIT, NULL), 1);

    /* Unreadable vectors. */
    CHECK_ERR(recvmmsg(rx, (struct mmsghdr *)8, 1, MSG_DONTWAIT, NULL), EFAULT);
    CHECK_ERR(sendmmsg(tx, (struct mmsghdr *)8, 1, 0), EFAULT);
    /* No messages at all: 0. */
    CHECK_EQ(sendmmsg(tx, in, 0, 0), 0);

    /* sendmmsg: the second message's buffer is unreadable, so one is
     * sent and counted. */
    struct mmsghdr out[2];
    struct iovec oiov[2] = {{.iov_base = "x", .iov_len = 1}, {.iov_base = (void *)8, .iov_len = 1}};
    memset(out, 0, sizeof(out));
    for (int i = 0; i < 2; i++) {
        out[i].msg_hdr.msg_iov = &oiov[i];
        out[i].msg_hdr.msg_iovlen = 1;
    }
    CHECK_EQ(sendmmsg(tx, out, 2, 0), 1);
    CHECK_EQ(out[0].msg_len, 1);
    /* The first message's fault is the call's. */
    CHECK_ERR(sendmmsg(tx, &out[1], 1, 0), EFAULT);
    /* recvmmsg: the second header's iovec array is unreadable: one. */
    send_n(tx, 1);
    reset();
    in[1].msg_hdr.msg_iov = (struct iovec *)8;
    CHECK_EQ(recvmmsg(rx, in, 2, MSG_DONTWAIT, NULL), 2 - 1);
    CHECK_EQ(bufs[0][0], 'x');
    puts("mmsg_exact: ok");
    return 0;
}
