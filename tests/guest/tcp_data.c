/* tcp_data.c — the data path of a TCP connection over loopback as Linux:
 * SO_SNDBUF/SO_RCVBUF (doubled when set, the send buffer grown once
 * connected) bound what a connection queues, so a non-blocking send larger
 * than the buffers is partial and a sender blocked on a full buffer wakes
 * when SO_SNDBUF grows; recv(MSG_TRUNC) discards (or peeks) without
 * copying; TCP_INQ's TCP_CM_INQ and SO_TIMESTAMP's control messages;
 * IP_MTU_DISCOVER. */
#include "check.h"
#include "tcp_loopback.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>

/* A connected pair: the client in c (its SO_SNDBUF set to `sndbuf` before
 * connecting unless 0), the server's end in s. */
static void connected(int *c, int *s, int sndbuf) {
    int port;
    int l = tcp_listener(&port);
    *c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    if (sndbuf)
        CHECK_OK(setsockopt(*c, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)));
    struct sockaddr_in a = loopback(port);
    CHECK_OK(connect(*c, (struct sockaddr *)&a, sizeof(a)));
    *s = CHECK_OK(accept(l, NULL, NULL));
    close(l);
}

static int intopt(int fd, int level, int name) {
    int v = -1;
    socklen_t n = sizeof(v);
    CHECK_OK(getsockopt(fd, level, name, &v, &n));
    CHECK_EQ(n, sizeof(v));
    return v;
}

static void setint(int fd, int level, int name, int v) {
    CHECK_OK(setsockopt(fd, level, name, &v, sizeof(v)));
}

/* Sends with MSG_DONTWAIT until the connection takes nothing more (twice
 * in a row, 50 ms apart); returns how much it took. */
static long fill(int fd) {
    static char chunk[1 << 16];
    long total = 0;
    int refused = 0;
    while (refused < 2) {
        ssize_t n = send(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (n < 0) {
            CHECK_EQ(errno, EAGAIN);
            refused++;
            usleep(50 * 1000);
            continue;
        }
        refused = 0;
        total += n;
    }
    return total;
}

static void buffer_sizes(void) {
    int fd = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_EQ(intopt(fd, SOL_SOCKET, SO_SNDBUF), 16384);
    CHECK_EQ(intopt(fd, SOL_SOCKET, SO_RCVBUF), 131072);
    setint(fd, SOL_SOCKET, SO_SNDBUF, 10000);
    setint(fd, SOL_SOCKET, SO_RCVBUF, 6000);
    CHECK_EQ(intopt(fd, SOL_SOCKET, SO_SNDBUF), 20000);
    CHECK_EQ(intopt(fd, SOL_SOCKET, SO_RCVBUF), 12000);
    close(fd);

    /* An unset send buffer grows once connected; the receive buffer and
     * a set one stay. */
    int c, s;
    connected(&c, &s, 0);
    CHECK(intopt(c, SOL_SOCKET, SO_SNDBUF) >= 1 << 20);
    CHECK(intopt(s, SOL_SOCKET, SO_SNDBUF) >= 1 << 20);
    CHECK_EQ(intopt(c, SOL_SOCKET, SO_RCVBUF), 131072);
    /* A non-blocking send of three send buffers is partial. */
    int size = 3 * intopt(c, SOL_SOCKET, SO_SNDBUF);
    char *big = calloc(1, size);
    CHECK(big != NULL);
    ssize_t n = CHECK_OK(send(c, big, size, MSG_DONTWAIT));
    CHECK(n > 0 && n < size);
    free(big);
    close(c);
    close(s);

    connected(&c, &s, 10000);
    CHECK_EQ(intopt(c, SOL_SOCKET, SO_SNDBUF), 20000);
    close(c);
    close(s);
}

/* A sender blocked on full buffers goes on when SO_SNDBUF grows. */
static void send_wakes_on_larger_buffer(void) {
    int c, s;
    connected(&c, &s, 4096);
    setint(s, SOL_SOCKET, SO_RCVBUF, 4096);
    long filled = fill(c);
    CHECK(filled > 0 && filled < 1 << 20);
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        alarm(10);
        char b = 'x';
        _exit(send(c, &b, 1, 0) == 1 ? 0 : 1);
    }
    usleep(200 * 1000);
    int status;
    CHECK_EQ(waitpid(pid, &status, WNOHANG), 0);
    setint(c, SOL_SOCKET, SO_SNDBUF, 1 << 20);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    close(c);
    close(s);
}

static void msg_trunc(void) {
    int c, s;
    connected(&c, &s, 0);
    char data[512];
    for (int i = 0; i < (int)sizeof(data); i++)
        data[i] = (char)(i | 1);
    CHECK_EQ(send(c, data, sizeof(data), 0), (ssize_t)sizeof(data));
    char zeros[1024] = {0}, got[1024] = {0};
    int fionread = 0;
    while (fionread < (int)sizeof(data)) {
        CHECK_OK(ioctl(s, FIONREAD, &fionread));
    }
    /* Peeked without a copy: all still there. */
    CHECK_EQ(recv(s, got, 100, MSG_TRUNC | MSG_PEEK), 100);
    CHECK_MEM(got, zeros, sizeof(got));
    CHECK_OK(ioctl(s, FIONREAD, &fionread));
    CHECK_EQ(fionread, 512);
    /* Taken without a copy; MSG_CTRUNC on input changes nothing. */
    CHECK_EQ(recv(s, got, 256, MSG_TRUNC | MSG_CTRUNC), 256);
    CHECK_MEM(got, zeros, sizeof(got));
    CHECK_OK(ioctl(s, FIONREAD, &fionread));
    CHECK_EQ(fionread, 256);
    /* A larger length takes what is there. */
    CHECK_EQ(recv(s, got, sizeof(got), MSG_TRUNC), 256);
    CHECK_MEM(got, zeros, sizeof(got));
    CHECK_EQ(send(c, "abc", 3, 0), 3);
    CHECK_EQ(recv(s, got, sizeof(got), 0), 3);
    CHECK_MEM(got, "abc", 3);
    close(c);
    close(s);
}

/* recvmsg into `buf`; the control messages land in `control`. */
static ssize_t recv_with_control(int fd, char *buf, size_t len, char *control, size_t clen, struct msghdr *msg) {
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    memset(msg, 0, sizeof(*msg));
    msg->msg_iov = &iov;
    msg->msg_iovlen = 1;
    msg->msg_control = control;
    msg->msg_controllen = clen;
    return recvmsg(fd, msg, 0);
}

static int cmsg_int(struct cmsghdr *cm) {
    int v;
    memcpy(&v, CMSG_DATA(cm), sizeof(v));
    return v;
}

static void tcp_inq(void) {
    int c, s;
    connected(&c, &s, 0);
    CHECK_EQ(intopt(s, SOL_TCP, TCP_INQ), 0);
    setint(s, SOL_TCP, TCP_INQ, 1);
    CHECK_EQ(intopt(s, SOL_TCP, TCP_INQ), 1);
    char buf[1024] = {0};
    CHECK_EQ(write(c, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    int fionread = 0;
    while (fionread < (int)sizeof(buf))
        CHECK_OK(ioctl(s, FIONREAD, &fionread));
    char control[CMSG_SPACE(sizeof(int))];
    struct msghdr msg;
    for (int left = 768; left >= 0; left -= 256) {
        CHECK_EQ(recv_with_control(s, buf, 256, control, sizeof(control), &msg), 256);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        CHECK(cm != NULL);
        CHECK_EQ(cm->cmsg_level, SOL_TCP);
        CHECK_EQ(cm->cmsg_type, TCP_CM_INQ);
        CHECK_EQ(cm->cmsg_len, CMSG_LEN(sizeof(int)));
        CHECK_EQ(cmsg_int(cm), left);
        CHECK(CMSG_NXTHDR(&msg, cm) == NULL);
    }
    /* After the peer's FIN, an empty queue says 1: read on (to EOF). */
    CHECK_OK(shutdown(c, SHUT_WR));
    usleep(50 * 1000);
    CHECK_EQ(recv_with_control(s, buf, 256, control, sizeof(control), &msg), 0);
    CHECK(CMSG_FIRSTHDR(&msg) != NULL);
    CHECK_EQ(cmsg_int(CMSG_FIRSTHDR(&msg)), 1);
    close(c);
    close(s);
}

/* SO_TIMESTAMP's message comes first, then TCP_CM_INQ. */
static void timestamp_then_inq(void) {
    int c, s;
    connected(&c, &s, 0);
    setint(s, SOL_TCP, TCP_INQ, 1);
    setint(s, SOL_SOCKET, SO_TIMESTAMP, 1);
    /* Linux turns receive timestamps on from a work queue: let it run. */
    usleep(100 * 1000);
    struct timeval before, after;
    gettimeofday(&before, NULL);
    char buf[100] = {0};
    CHECK_EQ(write(c, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    char control[CMSG_SPACE(sizeof(struct timeval)) + CMSG_SPACE(sizeof(int))];
    struct msghdr msg;
    CHECK_EQ(recv_with_control(s, buf, sizeof(buf), control, sizeof(control), &msg), (ssize_t)sizeof(buf));
    gettimeofday(&after, NULL);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    CHECK(cm != NULL);
    CHECK_EQ(cm->cmsg_level, SOL_SOCKET);
    CHECK_EQ(cm->cmsg_type, SO_TIMESTAMP);
    CHECK_EQ(cm->cmsg_len, CMSG_LEN(sizeof(struct timeval)));
    struct timeval at;
    memcpy(&at, CMSG_DATA(cm), sizeof(at));
    CHECK(!timercmp(&at, &before, <) && !timercmp(&at, &after, >));
    cm = CMSG_NXTHDR(&msg, cm);
    CHECK(cm != NULL);
    CHECK_EQ(cm->cmsg_level, SOL_TCP);
    CHECK_EQ(cm->cmsg_type, TCP_CM_INQ);
    CHECK_EQ(cmsg_int(cm), 0);
    CHECK(CMSG_NXTHDR(&msg, cm) == NULL);
    close(c);
    close(s);
}

static void mtu_discover(int domain, int type, int level, int name) {
    int fd = CHECK_OK(socket(domain, type, 0));
    CHECK_EQ(intopt(fd, level, name), IP_PMTUDISC_WANT);
    for (int mode = IP_PMTUDISC_DONT; mode <= IP_PMTUDISC_OMIT; mode++) {
        setint(fd, level, name, mode);
        CHECK_EQ(intopt(fd, level, name), mode);
    }
    int bad = IP_PMTUDISC_OMIT + 1;
    CHECK_ERR(setsockopt(fd, level, name, &bad, sizeof(bad)), EINVAL);
    bad = -1;
    CHECK_ERR(setsockopt(fd, level, name, &bad, sizeof(bad)), EINVAL);
    CHECK_EQ(intopt(fd, level, name), IP_PMTUDISC_OMIT);
    close(fd);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    buffer_sizes();
    send_wakes_on_larger_buffer();
    msg_trunc();
    tcp_inq();
    timestamp_then_inq();
    mtu_discover(AF_INET, SOCK_STREAM, IPPROTO_IP, IP_MTU_DISCOVER);
    mtu_discover(AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_MTU_DISCOVER);
    mtu_discover(AF_INET6, SOCK_STREAM, IPPROTO_IP, IP_MTU_DISCOVER);
    mtu_discover(AF_INET6, SOCK_STREAM, IPPROTO_IPV6, IPV6_MTU_DISCOVER);
    mtu_discover(AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_MTU_DISCOVER);
    return 0;
}
