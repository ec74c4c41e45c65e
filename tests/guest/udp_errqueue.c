/* udp_errqueue.c — what a UDP sender learns when its datagram reaches a
 * loopback port nobody holds (Linux answers with an ICMP port unreachable):
 * a connected socket fails its next call with ECONNREFUSED; with IP_RECVERR
 * (IPV6_RECVERR) an unconnected one does too, and the datagram waits on the
 * socket's error queue for recvmsg(MSG_ERRQUEUE) with a sock_extended_err
 * and the offender; poll reports POLLERR (not POLLIN) while an error is
 * pending or queued. An entry also carries the control messages the socket
 * asked for, describing the ICMP error as it arrived (IP_RECVERR last).
 * TCP takes IP_RECVERR and has nothing queued. UDP takes no notice of
 * MSG_OOB on receive (and refuses it on send).
 */
#include "check.h"

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

static int on = 1, off = 0;

/* A loopback port (IPv4 and IPv6) no socket holds. */
static int free_port(void)
{
    int s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 a = { .sin6_family = AF_INET6 };
    socklen_t len = sizeof a;
    CHECK_OK(bind(s, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(s, (struct sockaddr *)&a, &len));
    close(s);
    return ntohs(a.sin6_port);
}

static struct sockaddr_in v4(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static struct sockaddr_in6 v6(const char *ip, int port)
{
    struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
    CHECK_EQ(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
    return a;
}

/* What poll reports for POLLIN|POLLOUT, after waiting up to `ms` for an
 * error (loopback's ICMP answer may come a little after the send). */
static int revents(int s, int ms)
{
    struct pollfd p = { .fd = s, .events = 0 };
    CHECK_OK(poll(&p, 1, ms));
    p.events = POLLIN | POLLOUT;
    CHECK_EQ(poll(&p, 1, 0), 1);
    return p.revents;
}

static int so_error(int s)
{
    int e = -1;
    socklen_t len = sizeof e;
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len));
    return e;
}

/* One recvmsg(MSG_ERRQUEUE) entry. */
struct entry {
    ssize_t n;
    int flags;
    char data[2048];
    struct sockaddr_in6 name;
    socklen_t namelen;
    size_t controllen;
    struct cmsghdr *cmsg;
    union {
        char buf[256];
        struct cmsghdr align;
    } control;
};

static void read_error(int s, struct entry *e, size_t room, size_t controllen)
{
    memset(e, 0, sizeof *e);
    struct iovec iov = { e->data, room };
    struct msghdr m = { .msg_name = &e->name, .msg_namelen = sizeof e->name, .msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = e->control.buf, .msg_controllen = controllen };
    e->n = CHECK_OK(recvmsg(s, &m, MSG_ERRQUEUE));
    e->flags = m.msg_flags;
    e->namelen = m.msg_namelen;
    e->controllen = m.msg_controllen;
    e->cmsg = controllen ? CMSG_FIRSTHDR(&m) : NULL;
}

static void no_error_queued(int s)
{
    char b[8];
    struct iovec iov = { b, sizeof b };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE), EAGAIN);
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE | MSG_PEEK), EAGAIN);
    /* The error queue comes before urgent data. */
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE | MSG_OOB), EAGAIN);
}

/* The IP_RECVERR message of a port unreachable from 127.0.0.1. */
static void check_v4_error(const struct entry *e, int port)
{
    const struct sockaddr_in *name = (const struct sockaddr_in *)&e->name;
    CHECK_EQ(e->namelen, sizeof(struct sockaddr_in));
    CHECK_EQ(name->sin_family, AF_INET);
    CHECK_EQ(ntohs(name->sin_port), port);
    CHECK_EQ(ntohl(name->sin_addr.s_addr), INADDR_LOOPBACK);
    CHECK(e->cmsg != NULL);
    CHECK_EQ(e->cmsg->cmsg_level, SOL_IP);
    CHECK_EQ(e->cmsg->cmsg_type, IP_RECVERR);
    CHECK_EQ(e->cmsg->cmsg_len, CMSG_LEN(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in)));
    struct sock_extended_err ee;
    memcpy(&ee, CMSG_DATA(e->cmsg), sizeof ee);
    CHECK_EQ(ee.ee_errno, ECONNREFUSED);
    CHECK_EQ(ee.ee_origin, SO_EE_ORIGIN_ICMP);
    CHECK_EQ(ee.ee_type, 3);
    CHECK_EQ(ee.ee_code, 3);
    CHECK_EQ(ee.ee_pad, 0);
    CHECK_EQ(ee.ee_info, 0);
    CHECK_EQ(ee.ee_data, 0);
    struct sockaddr_in offender;
    memcpy(&offender, CMSG_DATA(e->cmsg) + sizeof ee, sizeof offender);
    CHECK_EQ(offender.sin_family, AF_INET);
    CHECK_EQ(offender.sin_port, 0);
    CHECK_EQ(ntohl(offender.sin_addr.s_addr), INADDR_LOOPBACK);
}

/* Without IP_RECVERR only a connected socket hears of the port. */
static void connected_without_recverr(int port)
{
    struct sockaddr_in to = v4(port);
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(connect(s, (struct sockaddr *)&to, sizeof to));
    CHECK_EQ(send(s, "a", 1, 0), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_ERR(send(s, "b", 1, 0), ECONNREFUSED);
    CHECK_EQ(revents(s, 0), POLLOUT);
    CHECK_EQ(so_error(s), 0);
    char b[4];
    CHECK_ERR(recv(s, b, sizeof b, MSG_DONTWAIT), EAGAIN);
    no_error_queued(s);
    /* The next one is reported by recv, or by SO_ERROR. */
    CHECK_EQ(send(s, "c", 1, 0), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_ERR(recv(s, b, sizeof b, 0), ECONNREFUSED);
    CHECK_EQ(send(s, "d", 1, 0), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_EQ(so_error(s), ECONNREFUSED);
    CHECK_EQ(so_error(s), 0);
    no_error_queued(s);
    close(s);

    s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_EQ(sendto(s, "a", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 50), POLLOUT);
    CHECK_EQ(so_error(s), 0);
    CHECK_EQ(sendto(s, "b", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    close(s);
}

static void unconnected_with_recverr(int port)
{
    struct sockaddr_in to = v4(port);
    struct entry e;
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVERR, &on, sizeof on));
    no_error_queued(s);
    CHECK_EQ(sendto(s, "hello", 5, 0, (struct sockaddr *)&to, sizeof to), 5);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    /* SO_ERROR takes the pending error; the queued entry stays, and so
     * does POLLERR. */
    CHECK_EQ(so_error(s), ECONNREFUSED);
    CHECK_EQ(so_error(s), 0);
    CHECK_EQ(revents(s, 0), POLLOUT | POLLERR);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 5);
    CHECK(memcmp(e.data, "hello", 5) == 0);
    CHECK_EQ(e.flags, MSG_ERRQUEUE);
    check_v4_error(&e, port);
    CHECK_EQ(e.controllen, CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in)));
    no_error_queued(s);
    CHECK_EQ(revents(s, 0), POLLOUT);

    /* The next call fails once; the entry stays queued. */
    CHECK_EQ(sendto(s, "x", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_ERR(sendto(s, "y", 1, 0, (struct sockaddr *)&to, sizeof to), ECONNREFUSED);
    CHECK_EQ(revents(s, 0), POLLOUT | POLLERR);

    /* The error quotes 520 bytes of a larger datagram; a read that
     * leaves the error pending for the next entry takes x first. */
    char big[1500];
    memset(big, 'z', sizeof big);
    CHECK_EQ(sendto(s, big, sizeof big, 0, (struct sockaddr *)&to, sizeof to), (ssize_t)sizeof big);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_EQ(so_error(s), ECONNREFUSED);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 1);
    CHECK_EQ(e.data[0], 'x');
    CHECK_EQ(so_error(s), ECONNREFUSED);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 520);
    CHECK_EQ(e.flags, MSG_ERRQUEUE);
    CHECK(memcmp(e.data, big, 520) == 0);
    CHECK_EQ(so_error(s), 0);

    /* Cut: MSG_TRUNC, the count copied; no control room: MSG_CTRUNC.
     * MSG_PEEK takes the entry all the same. */
    CHECK_EQ(sendto(s, big, sizeof big, 0, (struct sockaddr *)&to, sizeof to), (ssize_t)sizeof big);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_ERR(sendto(s, "p", 1, 0, (struct sockaddr *)&to, sizeof to), ECONNREFUSED);
    CHECK_EQ(sendto(s, "p", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    read_error(s, &e, 3, sizeof e.control.buf);
    CHECK_EQ(e.n, 3);
    CHECK_EQ(e.flags, MSG_ERRQUEUE | MSG_TRUNC);
    check_v4_error(&e, port);
    char b[8];
    struct iovec iov = { b, sizeof b };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_EQ(recvmsg(s, &m, MSG_ERRQUEUE | MSG_PEEK), 1);
    CHECK_EQ(m.msg_flags, MSG_ERRQUEUE | MSG_CTRUNC);
    CHECK_EQ(b[0], 'p');
    no_error_queued(s);

    /* recvfrom reads the queue too, naming the destination (MSG_OOB
     * does not matter). */
    CHECK_EQ(sendto(s, "r", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    struct sockaddr_in from;
    socklen_t fromlen = sizeof from;
    CHECK_EQ(recvfrom(s, b, sizeof b, MSG_ERRQUEUE | MSG_OOB, (struct sockaddr *)&from, &fromlen), 1);
    CHECK_EQ(fromlen, sizeof from);
    CHECK_EQ(ntohs(from.sin_port), port);
    CHECK_EQ(b[0], 'r');

    /* IP_RECVERR off empties the queue; the pending error stays. */
    CHECK_EQ(sendto(s, "o", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVERR, &off, sizeof off));
    no_error_queued(s);
    CHECK_EQ(so_error(s), ECONNREFUSED);
    CHECK_EQ(revents(s, 0), POLLOUT);
    CHECK_EQ(sendto(s, "q", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 50), POLLOUT);

    /* A datagram that found its socket draws no error. */
    int r = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in bound = v4(0);
    socklen_t len = sizeof bound;
    CHECK_OK(bind(r, (struct sockaddr *)&bound, sizeof bound));
    CHECK_OK(getsockname(r, (struct sockaddr *)&bound, &len));
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVERR, &on, sizeof on));
    CHECK_EQ(sendto(s, "d", 1, 0, (struct sockaddr *)&bound, sizeof bound), 1);
    CHECK_EQ(recv(r, b, sizeof b, 0), 1);
    CHECK_EQ(revents(s, 50), POLLOUT);
    close(r);
    close(s);
}

/* A connected socket with IP_RECVERR: the call fails and the datagram is
 * queued as well. */
static void connected_with_recverr(int port)
{
    struct sockaddr_in to = v4(port);
    struct entry e;
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVERR, &on, sizeof on));
    CHECK_OK(connect(s, (struct sockaddr *)&to, sizeof to));
    CHECK_EQ(send(s, "c", 1, 0), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    char b[4];
    CHECK_ERR(recv(s, b, sizeof b, MSG_DONTWAIT), ECONNREFUSED);
    CHECK_EQ(revents(s, 0), POLLOUT | POLLERR);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 1);
    check_v4_error(&e, port);
    CHECK_EQ(revents(s, 0), POLLOUT);
    close(s);
}

static void ipv6(int port)
{
    struct sockaddr_in6 to = v6("::1", port);
    struct entry e;
    int s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    CHECK_OK(setsockopt(s, SOL_IPV6, IPV6_RECVERR, &on, sizeof on));
    char big[1500];
    memset(big, '6', sizeof big);
    CHECK_EQ(sendto(s, big, sizeof big, 0, (struct sockaddr *)&to, sizeof to), (ssize_t)sizeof big);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 1184);
    CHECK_EQ(e.flags, MSG_ERRQUEUE);
    CHECK_EQ(e.namelen, sizeof(struct sockaddr_in6));
    CHECK_EQ(ntohs(e.name.sin6_port), port);
    CHECK(IN6_IS_ADDR_LOOPBACK(&e.name.sin6_addr));
    CHECK(e.cmsg != NULL);
    CHECK_EQ(e.cmsg->cmsg_level, SOL_IPV6);
    CHECK_EQ(e.cmsg->cmsg_type, IPV6_RECVERR);
    CHECK_EQ(e.cmsg->cmsg_len, CMSG_LEN(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in6)));
    struct sock_extended_err ee;
    memcpy(&ee, CMSG_DATA(e.cmsg), sizeof ee);
    CHECK_EQ(ee.ee_errno, ECONNREFUSED);
    CHECK_EQ(ee.ee_origin, SO_EE_ORIGIN_ICMP6);
    CHECK_EQ(ee.ee_type, 1);
    CHECK_EQ(ee.ee_code, 4);
    struct sockaddr_in6 offender;
    memcpy(&offender, CMSG_DATA(e.cmsg) + sizeof ee, sizeof offender);
    CHECK_EQ(offender.sin6_family, AF_INET6);
    CHECK_EQ(offender.sin6_port, 0);
    CHECK(IN6_IS_ADDR_LOOPBACK(&offender.sin6_addr));
    CHECK_EQ(so_error(s), 0);

    /* To an IPv4 address the error is IPv4's: IP_RECVERR queues it, and
     * it reads as IPV6_RECVERR with v4-mapped addresses. */
    struct sockaddr_in6 mapped = v6("::ffff:127.0.0.1", port);
    CHECK_EQ(sendto(s, "m", 1, 0, (struct sockaddr *)&mapped, sizeof mapped), 1);
    CHECK_EQ(revents(s, 50), POLLOUT);
    CHECK_EQ(so_error(s), 0);
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVERR, &on, sizeof on));
    CHECK_EQ(sendto(s, "m", 1, 0, (struct sockaddr *)&mapped, sizeof mapped), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 1);
    CHECK(IN6_IS_ADDR_V4MAPPED(&e.name.sin6_addr));
    CHECK_EQ(e.cmsg->cmsg_level, SOL_IPV6);
    CHECK_EQ(e.cmsg->cmsg_type, IPV6_RECVERR);
    memcpy(&ee, CMSG_DATA(e.cmsg), sizeof ee);
    CHECK_EQ(ee.ee_origin, SO_EE_ORIGIN_ICMP);
    CHECK_EQ(ee.ee_type, 3);
    CHECK_EQ(ee.ee_code, 3);
    memcpy(&offender, CMSG_DATA(e.cmsg) + sizeof ee, sizeof offender);
    CHECK_EQ(offender.sin6_family, AF_INET6);
    CHECK(memcmp(&offender.sin6_addr, &mapped.sin6_addr, sizeof offender.sin6_addr) == 0);
    no_error_queued(s);
    close(s);

    /* An IPv4 socket has no IPV6_RECVERR. */
    s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_ERR(setsockopt(s, SOL_IPV6, IPV6_RECVERR, &on, sizeof on), ENOPROTOOPT);
    close(s);
}

/* The next control message of `e`, which must be (level, type) with
 * `len` bytes of data. */
static const unsigned char *next_cmsg(struct entry *e, struct cmsghdr **at, int level, int type, size_t len)
{
    struct msghdr m = { .msg_control = e->control.buf, .msg_controllen = e->controllen };
    *at = *at ? CMSG_NXTHDR(&m, *at) : CMSG_FIRSTHDR(&m);
    CHECK(*at != NULL);
    CHECK_EQ((*at)->cmsg_level, level);
    CHECK_EQ((*at)->cmsg_type, type);
    CHECK_EQ((*at)->cmsg_len, CMSG_LEN(len));
    return CMSG_DATA(*at);
}

static int int_at(const unsigned char *p)
{
    int v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The error's SO_TIMESTAMP: when it was queued, just now. */
static void check_stamp(struct entry *e, struct cmsghdr **at)
{
    struct timeval tv, now;
    memcpy(&tv, next_cmsg(e, at, SOL_SOCKET, SO_TIMESTAMP, sizeof tv), sizeof tv);
    CHECK_OK(gettimeofday(&now, NULL));
    CHECK(tv.tv_sec <= now.tv_sec && tv.tv_sec + 5 >= now.tv_sec);
}

/* The messages the socket asked for describe the ICMP error: it came on
 * lo to the datagram's source, with TTL 64 and the datagram's TOS bits
 * under the internetwork-control precedence, whatever TTL the datagram had;
 * they come first, IP_RECVERR last. */
static void entry_messages_v4(int port)
{
    struct sockaddr_in to = v4(port), from = v4(0);
    from.sin_addr.s_addr = htonl(0x7f000003);
    struct entry e;
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_OK(bind(s, (struct sockaddr *)&from, sizeof from));
    int opts[] = { IP_RECVERR, IP_PKTINFO, IP_RECVTTL, IP_RECVTOS };
    for (unsigned i = 0; i < sizeof opts / sizeof *opts; i++)
        CHECK_OK(setsockopt(s, SOL_IP, opts[i], &on, sizeof on));
    CHECK_OK(setsockopt(s, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on));
    int tos = 0x14, ttl = 5;
    CHECK_OK(setsockopt(s, SOL_IP, IP_TOS, &tos, sizeof tos));
    CHECK_OK(setsockopt(s, SOL_IP, IP_TTL, &ttl, sizeof ttl));
    CHECK_EQ(sendto(s, "t", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 1);
    CHECK_EQ(e.flags, MSG_ERRQUEUE);
    struct cmsghdr *at = NULL;
    check_stamp(&e, &at);
    struct in_pktinfo pi;
    memcpy(&pi, next_cmsg(&e, &at, SOL_IP, IP_PKTINFO, sizeof pi), sizeof pi);
    CHECK_EQ(pi.ipi_ifindex, 1);
    CHECK_EQ(pi.ipi_spec_dst.s_addr, 0);
    CHECK_EQ(ntohl(pi.ipi_addr.s_addr), 0x7f000003);
    CHECK_EQ(int_at(next_cmsg(&e, &at, SOL_IP, IP_TTL, sizeof(int))), 64);
    CHECK_EQ(*next_cmsg(&e, &at, SOL_IP, IP_TOS, 1), 0xd4);
    next_cmsg(&e, &at, SOL_IP, IP_RECVERR, sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in));
    e.cmsg = at;
    check_v4_error(&e, port);
    struct msghdr m = { .msg_control = e.control.buf, .msg_controllen = e.controllen };
    CHECK(CMSG_NXTHDR(&m, at) == NULL);

    /* With room for the first two only, the third is cut: MSG_CTRUNC. */
    CHECK_EQ(sendto(s, "u", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    size_t room = CMSG_SPACE(sizeof(struct timeval)) + CMSG_SPACE(sizeof(struct in_pktinfo));
    read_error(s, &e, sizeof e.data, room);
    CHECK_EQ(e.flags, MSG_ERRQUEUE | MSG_CTRUNC);
    CHECK_EQ(e.controllen, room);
    close(s);
}

/* On an IPv6 socket the ICMPv6 error's messages: IPV6_PKTINFO (lo, the
 * datagram's source), hop limit 64 and traffic class 0 whatever the datagram's. An
 * IPv4 error adds IPV6_PKTINFO (the v4-mapped source) to the IPv4 ones. */
static void entry_messages_v6(int port)
{
    struct sockaddr_in6 to = v6("::1", port);
    struct entry e;
    int s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    int opts[] = { IPV6_RECVERR, IPV6_RECVPKTINFO, IPV6_RECVHOPLIMIT, IPV6_RECVTCLASS };
    for (unsigned i = 0; i < sizeof opts / sizeof *opts; i++)
        CHECK_OK(setsockopt(s, SOL_IPV6, opts[i], &on, sizeof on));
    int tclass = 0xff, hops = 7;
    CHECK_OK(setsockopt(s, SOL_IPV6, IPV6_TCLASS, &tclass, sizeof tclass));
    CHECK_OK(setsockopt(s, SOL_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops));
    CHECK_EQ(sendto(s, "v", 1, 0, (struct sockaddr *)&to, sizeof to), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 1);
    struct cmsghdr *at = NULL;
    struct in6_pktinfo pi;
    memcpy(&pi, next_cmsg(&e, &at, SOL_IPV6, IPV6_PKTINFO, sizeof pi), sizeof pi);
    CHECK_EQ(pi.ipi6_ifindex, 1);
    CHECK(IN6_IS_ADDR_LOOPBACK(&pi.ipi6_addr));
    CHECK_EQ(int_at(next_cmsg(&e, &at, SOL_IPV6, IPV6_HOPLIMIT, sizeof(int))), 64);
    CHECK_EQ(int_at(next_cmsg(&e, &at, SOL_IPV6, IPV6_TCLASS, sizeof(int))), 0);
    struct sock_extended_err ee;
    memcpy(&ee, next_cmsg(&e, &at, SOL_IPV6, IPV6_RECVERR, sizeof ee + sizeof(struct sockaddr_in6)), sizeof ee);
    CHECK_EQ(ee.ee_origin, SO_EE_ORIGIN_ICMP6);
    close(s);

    struct sockaddr_in6 mapped = v6("::ffff:127.0.0.1", port);
    s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    for (unsigned i = 0; i < sizeof opts / sizeof *opts; i++)
        CHECK_OK(setsockopt(s, SOL_IPV6, opts[i], &on, sizeof on));
    int v4opts[] = { IP_RECVERR, IP_PKTINFO, IP_RECVTTL, IP_RECVTOS };
    for (unsigned i = 0; i < sizeof v4opts / sizeof *v4opts; i++)
        CHECK_OK(setsockopt(s, SOL_IP, v4opts[i], &on, sizeof on));
    CHECK_OK(setsockopt(s, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on));
    CHECK_EQ(sendto(s, "w", 1, 0, (struct sockaddr *)&mapped, sizeof mapped), 1);
    CHECK_EQ(revents(s, 2000), POLLOUT | POLLERR);
    read_error(s, &e, sizeof e.data, sizeof e.control.buf);
    CHECK_EQ(e.n, 1);
    at = NULL;
    check_stamp(&e, &at);
    memcpy(&pi, next_cmsg(&e, &at, SOL_IPV6, IPV6_PKTINFO, sizeof pi), sizeof pi);
    CHECK_EQ(pi.ipi6_ifindex, 1);
    CHECK(memcmp(&pi.ipi6_addr, &mapped.sin6_addr, sizeof pi.ipi6_addr) == 0);
    struct in_pktinfo pi4;
    memcpy(&pi4, next_cmsg(&e, &at, SOL_IP, IP_PKTINFO, sizeof pi4), sizeof pi4);
    CHECK_EQ(pi4.ipi_ifindex, 1);
    CHECK_EQ(pi4.ipi_spec_dst.s_addr, 0);
    CHECK_EQ(ntohl(pi4.ipi_addr.s_addr), INADDR_LOOPBACK);
    CHECK_EQ(int_at(next_cmsg(&e, &at, SOL_IP, IP_TTL, sizeof(int))), 64);
    CHECK_EQ(*next_cmsg(&e, &at, SOL_IP, IP_TOS, 1), 0xc0);
    memcpy(&ee, next_cmsg(&e, &at, SOL_IPV6, IPV6_RECVERR, sizeof ee + sizeof(struct sockaddr_in6)), sizeof ee);
    CHECK_EQ(ee.ee_origin, SO_EE_ORIGIN_ICMP);
    close(s);
}

/* recv(MSG_OOB) on UDP is an ordinary receive: EAGAIN with nothing queued
 * (after SO_RCVTIMEO when blocking), the datagram when there is one, no
 * MSG_OOB in msg_flags. Sending MSG_OOB is EOPNOTSUPP. */
static void oob(void)
{
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in me = v4(0);
    socklen_t len = sizeof me;
    CHECK_OK(bind(s, (struct sockaddr *)&me, sizeof me));
    CHECK_OK(getsockname(s, (struct sockaddr *)&me, &len));
    char b[8];
    CHECK_ERR(recv(s, b, sizeof b, MSG_OOB | MSG_DONTWAIT), EAGAIN);
    struct timeval tv = { 0, 50000 };
    CHECK_OK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    CHECK_ERR(recv(s, b, sizeof b, MSG_OOB), EAGAIN);
    CHECK_ERR(sendto(s, "x", 1, MSG_OOB, (struct sockaddr *)&me, sizeof me), EOPNOTSUPP);
    CHECK_EQ(sendto(s, "oob", 3, 0, (struct sockaddr *)&me, sizeof me), 3);
    CHECK_EQ(sendto(s, "two", 3, 0, (struct sockaddr *)&me, sizeof me), 3);
    struct sockaddr_in from;
    socklen_t fromlen = sizeof from;
    CHECK_EQ(recvfrom(s, b, sizeof b, MSG_OOB | MSG_PEEK, (struct sockaddr *)&from, &fromlen), 3);
    CHECK_EQ(fromlen, sizeof from);
    CHECK_EQ(from.sin_port, me.sin_port);
    CHECK(memcmp(b, "oob", 3) == 0);
    struct iovec iov = { b, sizeof b };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    CHECK_EQ(recvmsg(s, &m, MSG_OOB), 3);
    CHECK_EQ(m.msg_flags, 0);
    CHECK(memcmp(b, "oob", 3) == 0);
    CHECK_EQ(recv(s, b, sizeof b, MSG_OOB | MSG_DONTWAIT), 3);
    CHECK(memcmp(b, "two", 3) == 0);
    CHECK_ERR(recv(s, b, sizeof b, MSG_OOB | MSG_DONTWAIT), EAGAIN);
    close(s);
}

static void tcp(void)
{
    int domains[] = { AF_INET, AF_INET6 };
    for (int i = 0; i < 2; i++) {
        int s = CHECK_OK(socket(domains[i], SOCK_STREAM, 0));
        int level = domains[i] == AF_INET ? SOL_IP : SOL_IPV6;
        int name = domains[i] == AF_INET ? IP_RECVERR : IPV6_RECVERR;
        int v = -1;
        socklen_t len = sizeof v;
        CHECK_OK(setsockopt(s, level, name, &on, sizeof on));
        CHECK_OK(getsockopt(s, level, name, &v, &len));
        CHECK_EQ(v, 1);
        no_error_queued(s);
        close(s);
    }
}

int main(void)
{
    int port = free_port();
    connected_without_recverr(port);
    unconnected_with_recverr(port);
    connected_with_recverr(port);
    ipv6(port);
    entry_messages_v4(port);
    entry_messages_v6(port);
    oob();
    tcp();
    puts("udp_errqueue: ok");
    return 0;
}
