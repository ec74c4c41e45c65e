/* udp_exact.c — UDP corners where husk must answer as Linux does:
 * a socket connected to port 0 (no peer to show, datagrams from any port
 * of the address), sendto port 0 (EINVAL), SHUT_RD (EAGAIN when the call
 * may not wait, 0 when it would), SIOCGSTAMP/SIOCGSTAMPNS, the receive
 * buffer's accounting (what Linux's skb truesize charges on loopback),
 * control messages of an IPv4 datagram on an IPv6 socket (the IPv4 ones),
 * IP_RECVORIGDSTADDR and IPV6_RECVORIGDSTADDR, IP_PKTINFO of a datagram to a
 * group, IPv4 options of fewer than four bytes, SOL_IPV6 on an IPv4 socket,
 * SO_DETACH_FILTER without a filter, bind to AF_UNSPEC, an IPv6 datagram too
 * big for any packet on the error queue (SO_EE_ORIGIN_LOCAL), the
 * version of the source a dual-stack socket sends from, and the limited
 * broadcast on lo.
 */
#include "check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>

static int on = 1;

static struct sockaddr_in v4(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static struct sockaddr_in6 v6(const char *ip, int port)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    CHECK_EQ(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
    return a;
}

/* A socket of `family` bound to `a` (`len` bytes); its port. */
static int bound(int family, void *a, socklen_t len, int *port)
{
    int s = CHECK_OK(socket(family, SOCK_DGRAM, 0));
    CHECK_OK(bind(s, a, len));
    struct sockaddr_storage got;
    socklen_t l = sizeof got;
    CHECK_OK(getsockname(s, (struct sockaddr *)&got, &l));
    *port = ntohs(((struct sockaddr_in *)&got)->sin_port);
    return s;
}

static void wait_in(int s)
{
    struct pollfd p = {.fd = s, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
}

/* connect to port 0: connected (shutdown works) but getpeername has no
 * peer; datagrams from any port of the address arrive. */
static void connect_port_zero(void)
{
    int port;
    struct sockaddr_in a = v4(0);
    int s = bound(AF_INET, &a, sizeof a, &port);
    struct sockaddr_in any = {.sin_family = AF_INET};
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    CHECK_OK(connect(s, (struct sockaddr *)&any, sizeof any));
    CHECK_ERR(getpeername(s, (struct sockaddr *)&peer, &len), ENOTCONN);
    struct sockaddr_in lo = v4(4242);
    CHECK_OK(connect(s, (struct sockaddr *)&lo, sizeof lo));
    CHECK_OK(getpeername(s, (struct sockaddr *)&peer, &len));
    CHECK_EQ(ntohs(peer.sin_port), 4242);
    lo.sin_port = 0;
    CHECK_OK(connect(s, (struct sockaddr *)&lo, sizeof lo));
    CHECK_ERR(getpeername(s, (struct sockaddr *)&peer, &len), ENOTCONN);
    int w = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in to = v4(port);
    CHECK_EQ(sendto(w, "hi", 2, 0, (struct sockaddr *)&to, sizeof to), 2);
    char buf[4];
    wait_in(s);
    CHECK_EQ(recv(s, buf, sizeof buf, MSG_DONTWAIT), 2);
    close(w);
    close(s);
}

static void sendto_port_zero(void)
{
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in a = v4(0);
    CHECK_ERR(sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a), EINVAL);
    close(s);
    s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 b = v6("::1", 0);
    CHECK_ERR(sendto(s, "x", 1, 0, (struct sockaddr *)&b, sizeof b), EINVAL);
    /* Outside the sandbox too: the address is never looked at. */
    struct sockaddr_in6 far = v6("2001:db8::1", 0);
    CHECK_ERR(sendto(s, "x", 1, 0, (struct sockaddr *)&far, sizeof far), EINVAL);
    close(s);
    s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
    struct sockaddr_in6 m = v6("::ffff:127.0.0.1", 0);
    CHECK_ERR(sendto(s, "x", 1, 0, (struct sockaddr *)&m, sizeof m), ENETUNREACH);
    close(s);
}

/* SHUT_RD: queued datagrams stay readable; with nothing queued a call
 * that may not wait fails with EAGAIN and one that would wait returns 0. */
static void read_shutdown(void)
{
    int port;
    struct sockaddr_in a = v4(0);
    int r = bound(AF_INET, &a, sizeof a, &port);
    char buf[8];
    CHECK_ERR(shutdown(r, SHUT_RD), ENOTCONN);
    CHECK_ERR(recv(r, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    struct sockaddr_in to = v4(port);
    CHECK_OK(connect(r, (struct sockaddr *)&to, sizeof to));
    CHECK_EQ(send(r, "abc", 3, 0), 3);
    wait_in(r);
    CHECK_OK(shutdown(r, SHUT_RD));
    CHECK_EQ(recv(r, buf, 2, MSG_DONTWAIT), 2);
    CHECK_ERR(recv(r, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    CHECK_EQ(recv(r, buf, sizeof buf, 0), 0);
    CHECK_EQ(read(r, buf, sizeof buf), 0);
    struct pollfd p = {.fd = r, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK_EQ(p.revents & (POLLIN | POLLRDHUP), POLLIN);
    int fl = CHECK_OK(fcntl(r, F_GETFL));
    CHECK_OK(fcntl(r, F_SETFL, fl | O_NONBLOCK));
    CHECK_ERR(read(r, buf, sizeof buf), EAGAIN);
    /* SHUT_WR: EPIPE (with MSG_NOSIGNAL, no signal). */
    CHECK_OK(shutdown(r, SHUT_WR));
    CHECK_ERR(send(r, "x", 1, MSG_NOSIGNAL), EPIPE);
    close(r);
}

/* SIOCGSTAMP: ENOENT until a datagram was received; then when it came,
 * kept while SO_TIMESTAMP's messages take its place. */
static void stamps(void)
{
    int port;
    struct sockaddr_in a = v4(0);
    int r = bound(AF_INET, &a, sizeof a, &port);
    int w = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in to = v4(port);
    CHECK_OK(connect(w, (struct sockaddr *)&to, sizeof to));
    struct timeval tv, tv2, now;
    struct timespec ts;
    CHECK_ERR(ioctl(r, SIOCGSTAMP, &tv), ENOENT);
    CHECK_ERR(ioctl(r, SIOCGSTAMPNS, &ts), ENOENT);
    CHECK_EQ(send(w, "x", 1, 0), 1);
    wait_in(r);
    CHECK_ERR(ioctl(r, SIOCGSTAMP, &tv), ENOENT);
    char buf[4];
    CHECK_EQ(recv(r, buf, sizeof buf, 0), 1);
    CHECK_OK(ioctl(r, SIOCGSTAMP, &tv));
    CHECK_OK(ioctl(r, SIOCGSTAMPNS, &ts));
    gettimeofday(&now, NULL);
    CHECK(tv.tv_sec > 0 && tv.tv_sec <= now.tv_sec && now.tv_sec - tv.tv_sec < 10);
    CHECK_EQ(ts.tv_sec, tv.tv_sec);
    CHECK_EQ(ts.tv_nsec / 1000, tv.tv_usec);
    CHECK_OK(setsockopt(r, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on));
    usleep(2000);
    CHECK_EQ(send(w, "y", 1, 0), 1);
    wait_in(r);
    CHECK_EQ(recv(r, buf, sizeof buf, 0), 1);
    CHECK_OK(ioctl(r, SIOCGSTAMP, &tv2));
    CHECK_EQ(tv2.tv_sec, tv.tv_sec);
    CHECK_EQ(tv2.tv_usec, tv.tv_usec);
    /* A TCP socket keeps none. */
    int t = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_ERR(ioctl(t, SIOCGSTAMP, &tv), ENOENT);
    close(t);
    close(w);
    close(r);
}

/* How many datagrams of `size` bytes reach a socket whose SO_RCVBUF was
 * set to `rcvbuf` (-1: the default) before it drops them. */
static int fits(int rcvbuf, int size, int sent)
{
    int port;
    struct sockaddr_in a = v4(0);
    int r = bound(AF_INET, &a, sizeof a, &port);
    if (rcvbuf >= 0)
        CHECK_OK(setsockopt(r, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf));
    int w = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in to = v4(port);
    static char buf[4096];
    for (int i = 0; i < sent; i++)
        CHECK_EQ(sendto(w, buf, size, 0, (struct sockaddr *)&to, sizeof to), size);
    int n = 0;
    while (recv(r, buf, sizeof buf, MSG_DONTWAIT) == size)
        n++;
    CHECK_EQ(errno, EAGAIN);
    close(w);
    close(r);
    return n;
}

/* A datagram is charged its skb's truesize: 832 bytes up to 197 bytes of
 * payload, 1280 for 198, 4352 for 2304; one that would take the charge
 * past the buffer's size is dropped, unless nothing is queued. */
static void receive_buffer(void)
{
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    int zero = 0, min, size = 4608, got;
    socklen_t len = sizeof min;
    CHECK_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &zero, sizeof zero));
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_RCVBUF, &min, &len));
    CHECK_EQ(min, 2304);
    CHECK_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size));
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_RCVBUF, &got, &len));
    CHECK_EQ(got, 9216);
    close(s);
    CHECK_EQ(fits(4608, 2304, 10), 2);
    CHECK_EQ(fits(-1, 0, 300), 256);
    CHECK_EQ(fits(-1, 197, 300), 256);
    CHECK_EQ(fits(-1, 198, 300), 166);
    CHECK_EQ(fits(0, 0, 10), 2);
    /* An empty queue takes a datagram bigger than the buffer. */
    CHECK_EQ(fits(0, 4000, 3), 1);
}

/* The messages of `m` as (level, type, length) triples into `out`. */
static int cmsgs(struct msghdr *m, int out[][3], int max)
{
    int n = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c && n < max; c = CMSG_NXTHDR(m, c)) {
        out[n][0] = c->cmsg_level;
        out[n][1] = c->cmsg_type;
        out[n][2] = c->cmsg_len;
        n++;
    }
    return n;
}

/* An IPv4 datagram on an IPv6 socket: IPV6_PKTINFO, then the IPv4
 * messages (IP_PKTINFO, IP_TTL, IP_TOS), none of the IPv6 ones. */
static void dual_stack_messages(void)
{
    int port;
    struct sockaddr_in6 a = v6("::ffff:127.0.0.1", 0);
    int r = bound(AF_INET6, &a, sizeof a, &port);
    int opts[][2] = {{IPPROTO_IP, IP_PKTINFO},        {IPPROTO_IP, IP_RECVTTL},
                     {IPPROTO_IP, IP_RECVTOS},        {IPPROTO_IPV6, IPV6_RECVPKTINFO},
                     {IPPROTO_IPV6, IPV6_RECVHOPLIMIT}, {IPPROTO_IPV6, IPV6_RECVTCLASS}};
    for (unsigned i = 0; i < sizeof opts / sizeof *opts; i++)
        CHECK_OK(setsockopt(r, opts[i][0], opts[i][1], &on, sizeof on));
    int w = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    int tos = 0x10, ttl = 21;
    CHECK_OK(setsockopt(w, IPPROTO_IP, IP_TOS, &tos, sizeof tos));
    CHECK_OK(setsockopt(w, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl));
    struct sockaddr_in to = v4(port);
    CHECK_EQ(sendto(w, "abc", 3, 0, (struct sockaddr *)&to, sizeof to), 3);
    wait_in(r);
    char data[8], control[512];
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    CHECK_EQ(recvmsg(r, &m, 0), 3);
    int got[8][3];
    CHECK_EQ(cmsgs(&m, got, 8), 4);
    int want[4][3] = {{IPPROTO_IPV6, IPV6_PKTINFO, CMSG_LEN(sizeof(struct in6_pktinfo))},
                      {IPPROTO_IP, IP_PKTINFO, CMSG_LEN(sizeof(struct in_pktinfo))},
                      {IPPROTO_IP, IP_TTL, CMSG_LEN(sizeof(int))},
                      {IPPROTO_IP, IP_TOS, CMSG_LEN(1)}};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            CHECK_EQ(got[i][j], want[i][j]);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c = CMSG_NXTHDR(&m, c);
    c = CMSG_NXTHDR(&m, c);
    CHECK_EQ(*(int *)CMSG_DATA(c), 21);
    c = CMSG_NXTHDR(&m, c);
    CHECK_EQ(*CMSG_DATA(c), 0x10);
    close(w);
    close(r);
}

/* IP_RECVORIGDSTADDR and IPV6_RECVORIGDSTADDR: off by default, then the
 * datagram's destination address and port as a sockaddr. */
static void original_destination(void)
{
    int port, v;
    socklen_t len = sizeof v;
    struct sockaddr_in a = v4(0);
    int r = bound(AF_INET, &a, sizeof a, &port);
    CHECK_OK(getsockopt(r, IPPROTO_IP, IP_RECVORIGDSTADDR, &v, &len));
    CHECK_EQ(v, 0);
    CHECK_OK(setsockopt(r, IPPROTO_IP, IP_RECVORIGDSTADDR, &on, sizeof on));
    CHECK_OK(getsockopt(r, IPPROTO_IP, IP_RECVORIGDSTADDR, &v, &len));
    CHECK_EQ(v, 1);
    int w = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in to = v4(port);
    CHECK_EQ(sendto(w, "x", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    wait_in(r);
    char data[4], control[CMSG_SPACE(sizeof(struct sockaddr_in6))];
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    CHECK_EQ(recvmsg(r, &m, 0), 1);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, IPPROTO_IP);
    CHECK_EQ(c->cmsg_type, IP_ORIGDSTADDR);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(struct sockaddr_in)));
    struct sockaddr_in got;
    memcpy(&got, CMSG_DATA(c), sizeof got);
    CHECK_EQ(got.sin_family, AF_INET);
    CHECK_EQ(ntohs(got.sin_port), port);
    CHECK_EQ(ntohl(got.sin_addr.s_addr), INADDR_LOOPBACK);
    close(w);
    close(r);

    struct sockaddr_in6 b = v6("::1", 0);
    r = bound(AF_INET6, &b, sizeof b, &port);
    CHECK_OK(setsockopt(r, IPPROTO_IPV6, IPV6_RECVORIGDSTADDR, &on, sizeof on));
    w = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 to6 = v6("::1", port);
    CHECK_EQ(sendto(w, "x", 1, 0, (struct sockaddr *)&to6, sizeof to6), 1);
    wait_in(r);
    m.msg_controllen = sizeof control;
    CHECK_EQ(recvmsg(r, &m, 0), 1);
    c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, IPPROTO_IPV6);
    CHECK_EQ(c->cmsg_type, IPV6_ORIGDSTADDR);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(struct sockaddr_in6)));
    struct sockaddr_in6 got6;
    memcpy(&got6, CMSG_DATA(c), sizeof got6);
    CHECK_EQ(got6.sin6_family, AF_INET6);
    CHECK_EQ(ntohs(got6.sin6_port), port);
    CHECK(memcmp(&got6.sin6_addr, &in6addr_loopback, 16) == 0);
    CHECK_EQ(got6.sin6_scope_id, 0);
    close(w);
    close(r);
}

/* IP_PKTINFO of a datagram to a group joined on lo: the group as the
 * header's destination, lo's address (the route back to the sender's)
 * as the local one. */
static void group_pktinfo(void)
{
    int port;
    struct sockaddr_in a = {.sin_family = AF_INET};
    int r = bound(AF_INET, &a, sizeof a, &port);
    struct ip_mreqn join = {.imr_ifindex = 1};
    join.imr_multiaddr.s_addr = inet_addr("224.0.2.1");
    CHECK_OK(setsockopt(r, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof join));
    CHECK_OK(setsockopt(r, IPPROTO_IP, IP_PKTINFO, &on, sizeof on));
    /* Bound to 127.0.0.1, the sender sends on lo from there. */
    struct sockaddr_in from = v4(0);
    int wport;
    int w = bound(AF_INET, &from, sizeof from, &wport);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    to.sin_addr = join.imr_multiaddr;
    CHECK_EQ(sendto(w, "x", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    wait_in(r);
    char data[4], control[CMSG_SPACE(sizeof(struct in_pktinfo))];
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    CHECK_EQ(recvmsg(r, &m, 0), 1);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_type, IP_PKTINFO);
    struct in_pktinfo pi;
    memcpy(&pi, CMSG_DATA(c), sizeof pi);
    CHECK_EQ(pi.ipi_ifindex, 1);
    CHECK_EQ(ntohl(pi.ipi_spec_dst.s_addr), INADDR_LOOPBACK);
    CHECK_EQ(pi.ipi_addr.s_addr, join.imr_multiaddr.s_addr);
    close(w);
    close(r);
}

/* IPv4 options read and written with fewer than four bytes; SOL_IPV6 on
 * an IPv4 socket; SO_DETACH_FILTER with no filter. */
static void option_sizes(void)
{
    for (int ty = SOCK_STREAM; ty <= SOCK_DGRAM; ty++) {
        int s = CHECK_OK(socket(AF_INET, ty, 0));
        int v = 0xc0, got = -1;
        CHECK_OK(setsockopt(s, IPPROTO_IP, IP_TOS, &v, sizeof v));
        CHECK_OK(setsockopt(s, IPPROTO_IP, IP_TOS, &v, 0));
        socklen_t len = sizeof got;
        CHECK_OK(getsockopt(s, IPPROTO_IP, IP_TOS, &got, &len));
        CHECK_EQ(got, 0);
        CHECK_OK(setsockopt(s, IPPROTO_IP, IP_TOS, &v, 1));
        for (socklen_t n = 1; n < 4; n++) {
            got = -1;
            len = n;
            CHECK_OK(getsockopt(s, IPPROTO_IP, IP_TOS, &got, &len));
            CHECK_EQ(len, 1);
            CHECK_EQ(got & 0xff, ty == SOCK_STREAM ? 0xc0 : 0xc0);
            CHECK_EQ((unsigned)got >> 8, 0xffffff);
        }
        len = 0;
        CHECK_OK(getsockopt(s, IPPROTO_IP, IP_TOS, &got, &len));
        CHECK_EQ(len, 0);
        CHECK_ERR(setsockopt(s, IPPROTO_IP, IP_TTL, &v, 0), EINVAL);
        CHECK_ERR(setsockopt(s, IPPROTO_IP, IP_MULTICAST_TTL, &v, 0), EINVAL);
        CHECK_ERR(setsockopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, &v, 0), EINVAL);
        CHECK_OK(setsockopt(s, IPPROTO_IP, IP_RECVTTL, &v, 0));
        len = sizeof got;
        CHECK_ERR(getsockopt(s, IPPROTO_IPV6, IPV6_RECVERR, &got, &len), EOPNOTSUPP);
        CHECK_ERR(getsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &got, &len), EOPNOTSUPP);
        CHECK_ERR(setsockopt(s, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on), ENOPROTOOPT);
        int zero = 0;
        CHECK_ERR(setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof zero), ENOENT);
        CHECK_ERR(setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero, 1), EINVAL);
        close(s);
    }
}

/* bind(AF_UNSPEC): an IPv4 socket takes it as INADDR_ANY (with its port)
 * when the address is INADDR_ANY; an IPv6 socket never. */
static void bind_unspec(void)
{
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_storage u = {.ss_family = AF_UNSPEC};
    ((struct sockaddr_in *)&u)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_ERR(bind(s, (struct sockaddr *)&u, sizeof u), EAFNOSUPPORT);
    ((struct sockaddr_in *)&u)->sin_addr.s_addr = 0;
    CHECK_ERR(bind(s, (struct sockaddr *)&u, 8), EINVAL);
    CHECK_OK(bind(s, (struct sockaddr *)&u, sizeof u));
    struct sockaddr_in got;
    socklen_t len = sizeof got;
    CHECK_OK(getsockname(s, (struct sockaddr *)&got, &len));
    CHECK_EQ(got.sin_family, AF_INET);
    CHECK_EQ(got.sin_addr.s_addr, 0);
    CHECK(got.sin_port != 0);
    close(s);
    s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_storage z = {.ss_family = AF_UNSPEC};
    CHECK_ERR(bind(s, (struct sockaddr *)&z, sizeof z), EAFNOSUPPORT);
    close(s);
}

/* A datagram too big for any packet: EMSGSIZE; an IPv6 one also leaves a
 * local error on the queue of a socket with IPV6_RECVERR (the route's MTU,
 * no offender, the destination as msg_name), and no pending error. IPv4
 * queues nothing past 65535 bytes. */
static void too_big(void)
{
    static char big[70000];
    int port;
    struct sockaddr_in6 a = v6("::1", 0);
    int r = bound(AF_INET6, &a, sizeof a, &port);
    int s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 to = v6("::1", port);
    CHECK_OK(connect(s, (struct sockaddr *)&to, sizeof to));
    CHECK_ERR(send(s, big, 65528, 0), EMSGSIZE);
    char data[8], control[256];
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE), EAGAIN);
    CHECK_OK(setsockopt(s, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on));
    CHECK_EQ(send(s, big, 65527, 0), 65527);
    CHECK_ERR(send(s, big, 65536, 0), EMSGSIZE);
    struct sockaddr_in6 name;
    m.msg_name = &name;
    m.msg_namelen = sizeof name;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    CHECK_EQ(recvmsg(s, &m, MSG_ERRQUEUE), 0);
    CHECK_EQ(m.msg_flags, MSG_ERRQUEUE);
    CHECK_EQ(m.msg_namelen, sizeof name);
    CHECK_EQ(ntohs(name.sin6_port), port);
    CHECK(memcmp(&name.sin6_addr, &in6addr_loopback, 16) == 0);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, IPPROTO_IPV6);
    CHECK_EQ(c->cmsg_type, IPV6_RECVERR);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in6)));
    CHECK(CMSG_NXTHDR(&m, c) == NULL);
    struct sock_extended_err ee;
    memcpy(&ee, CMSG_DATA(c), sizeof ee);
    CHECK_EQ(ee.ee_errno, EMSGSIZE);
    CHECK_EQ(ee.ee_origin, SO_EE_ORIGIN_LOCAL);
    CHECK_EQ(ee.ee_type, 0);
    CHECK_EQ(ee.ee_code, 0);
    CHECK_EQ(ee.ee_info, 65536);
    struct sockaddr_in6 offender;
    memcpy(&offender, CMSG_DATA(c) + sizeof ee, sizeof offender);
    CHECK_EQ(offender.sin6_family, 0);
    int err = -1;
    socklen_t len = sizeof err;
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len));
    CHECK_EQ(err, 0);
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE), EAGAIN);
    close(s);
    close(r);

    s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(s, IPPROTO_IP, IP_RECVERR, &on, sizeof on));
    struct sockaddr_in to4 = v4(9);
    CHECK_ERR(sendto(s, big, 65536, 0, (struct sockaddr *)&to4, sizeof to4), EMSGSIZE);
    m.msg_controllen = sizeof control;
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE), EAGAIN);
    close(s);
}

/* The source of a dual-stack socket's datagram follows the destination's
 * version: connected to ::1, a datagram to 127.0.0.1 comes from
 * 127.0.0.1; connected to a v4-mapped peer, IPv6 is EAFNOSUPPORT. */
static void source_version(void)
{
    int port;
    struct sockaddr_in a = v4(0);
    int r = bound(AF_INET, &a, sizeof a, &port);
    int s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 peer = v6("::1", 5000);
    CHECK_OK(connect(s, (struct sockaddr *)&peer, sizeof peer));
    struct sockaddr_in6 to = v6("::ffff:127.0.0.1", port);
    CHECK_EQ(sendto(s, "x", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    wait_in(r);
    struct sockaddr_storage from;
    socklen_t len = sizeof from;
    char buf[4];
    CHECK_EQ(recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &len), 1);
    CHECK_EQ(len, sizeof(struct sockaddr_in));
    CHECK_EQ(from.ss_family, AF_INET);
    CHECK_EQ(ntohl(((struct sockaddr_in *)&from)->sin_addr.s_addr), INADDR_LOOPBACK);
    close(s);
    s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 mapped = v6("::ffff:127.0.0.1", 5000);
    CHECK_OK(connect(s, (struct sockaddr *)&mapped, sizeof mapped));
    struct sockaddr_in6 six = v6("::1", port);
    CHECK_ERR(sendto(s, "x", 1, 0, (struct sockaddr *)&six, sizeof six), EAFNOSUPPORT);
    close(s);
    close(r);
}

/* The limited broadcast on lo: a socket may bind 255.255.255.255; one
 * bound to 127.0.0.1 sends it out of lo with SO_BROADCAST (EACCES
 * without), and it reaches the sockets bound to the port's wildcard or
 * broadcast address, not one bound to 127.0.0.1. A socket bound to the
 * broadcast address sends from lo's address. */
static void broadcast(void)
{
    int port, one = 1;
    struct sockaddr_in b = {.sin_family = AF_INET};
    b.sin_addr.s_addr = htonl(INADDR_BROADCAST);
    int r = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(r, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
    CHECK_OK(bind(r, (struct sockaddr *)&b, sizeof b));
    struct sockaddr_in got;
    socklen_t len = sizeof got;
    CHECK_OK(getsockname(r, (struct sockaddr *)&got, &len));
    CHECK_EQ(got.sin_addr.s_addr, htonl(INADDR_BROADCAST));
    port = ntohs(got.sin_port);
    int any = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(any, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
    struct sockaddr_in wild = {.sin_family = AF_INET, .sin_port = htons(port)};
    CHECK_OK(bind(any, (struct sockaddr *)&wild, sizeof wild));
    int lo = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(lo, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
    struct sockaddr_in lo_addr = v4(port);
    CHECK_OK(bind(lo, (struct sockaddr *)&lo_addr, sizeof lo_addr));

    struct sockaddr_in src = v4(0);
    int wport;
    int w = bound(AF_INET, &src, sizeof src, &wport);
    struct sockaddr_in to = b;
    to.sin_port = htons(port);
    CHECK_ERR(sendto(w, "bc", 2, 0, (struct sockaddr *)&to, sizeof to), EACCES);
    CHECK_OK(setsockopt(w, SOL_SOCKET, SO_BROADCAST, &one, sizeof one));
    CHECK_EQ(sendto(w, "bc", 2, 0, (struct sockaddr *)&to, sizeof to), 2);
    char buf[4];
    wait_in(r);
    CHECK_EQ(recv(r, buf, sizeof buf, MSG_DONTWAIT), 2);
    wait_in(any);
    CHECK_EQ(recv(any, buf, sizeof buf, MSG_DONTWAIT), 2);
    CHECK_ERR(recv(lo, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    close(w);

    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(bind(s, (struct sockaddr *)&b, sizeof b));
    CHECK_EQ(sendto(s, "u", 1, 0, (struct sockaddr *)&lo_addr, sizeof lo_addr), 1);
    wait_in(lo);
    len = sizeof got;
    CHECK_EQ(recvfrom(lo, buf, sizeof buf, 0, (struct sockaddr *)&got, &len), 1);
    CHECK_EQ(ntohl(got.sin_addr.s_addr), INADDR_LOOPBACK);
    close(s);
    close(lo);
    close(any);
    close(r);
}

int main(void)
{
    connect_port_zero();
    sendto_port_zero();
    read_shutdown();
    stamps();
    receive_buffer();
    dual_stack_messages();
    original_destination();
    group_pktinfo();
    option_sizes();
    bind_unspec();
    too_big();
    source_version();
    broadcast();
    puts("udp_exact: ok");
    return 0;
}
