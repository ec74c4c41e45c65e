/* ping_socket.c — ICMP echo sockets as unprivileged ping uses them
 * (SOCK_DGRAM, IPPROTO_ICMP): Linux's checks of the ICMP header, the echo
 * id the socket is given on its first send (getsockname's port) or by
 * bind, replies with their ICMP header and that id, poll readiness,
 * MSG_DONTWAIT, connect (and getpeername's ENOTCONN even then), IP_RECVTTL's
 * control message (MSG_CTRUNC without room for it), IP_RECVERR's empty
 * error queue (EAGAIN), options read back as set, IP_PKTINFO's control
 * message naming one of the receiving interface's own addresses, echo
 * replies from the machine's own addresses (loopback, 0.0.0.0). argv[1]: an IPv4 address that
 * answers echo requests. Run where net.ipv4.ping_group_range admits the
 * caller (the e2e test's network namespace sets it). */
#include "check.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/socket.h>

static const char payload[] = "husk-ping";

/* An echo request of type `type` with sequence `seq` and the payload. */
static size_t request(unsigned char *buf, int type, int seq) {
    struct icmphdr h = {.type = type, .code = 0};
    h.un.echo.sequence = htons(seq);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, payload, sizeof payload);
    return sizeof h + sizeof payload;
}

static unsigned short local_id(int s, struct in_addr *addr) {
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    CHECK_OK(getsockname(s, (struct sockaddr *)&me, &len));
    CHECK_EQ(len, sizeof me);
    CHECK_EQ(me.sin_family, AF_INET);
    *addr = me.sin_addr;
    return ntohs(me.sin_port);
}

/* Waits for and checks the reply to sequence `seq` from `dest`, whose id
 * must be `id`. */
static void reply(int s, const struct sockaddr_in *dest, int seq, unsigned short id) {
    struct pollfd p = {.fd = s, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK(p.revents & POLLIN);
    unsigned char buf[256];
    struct sockaddr_in from;
    socklen_t len = sizeof from;
    memset(&from, 0xaa, sizeof from);
    ssize_t n = CHECK_OK(recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &len));
    CHECK_EQ(n, sizeof(struct icmphdr) + sizeof payload);
    struct icmphdr h;
    memcpy(&h, buf, sizeof h);
    CHECK_EQ(h.type, ICMP_ECHOREPLY);
    CHECK_EQ(h.code, 0);
    CHECK_EQ(ntohs(h.un.echo.id), id);
    CHECK_EQ(ntohs(h.un.echo.sequence), seq);
    CHECK(memcmp(buf + sizeof h, payload, sizeof payload) == 0);
    CHECK_EQ(len, sizeof from);
    CHECK_EQ(from.sin_family, AF_INET);
    CHECK_EQ(from.sin_addr.s_addr, dest->sin_addr.s_addr);
    CHECK_EQ(from.sin_port, 0);
    CHECK_ERR(recv(s, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
}

/* With IP_RECVTTL, the reply to sequence `seq` carries its TTL (IP_TTL,
 * an int); with too little room for it, MSG_CTRUNC and no control data. */
static void reply_ttl(int s, const struct sockaddr_in *dest, int seq) {
    unsigned char buf[256];
    size_t n = request(buf, ICMP_ECHO, seq);
    CHECK_EQ(sendto(s, buf, n, 0, (const struct sockaddr *)dest, sizeof *dest), (ssize_t)n);
    struct pollfd p = {.fd = s, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    union {
        char bytes[CMSG_SPACE(sizeof(int)) + 64];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes,
                       .msg_controllen = sizeof control.bytes};
    CHECK_EQ(recvmsg(s, &m, 0), (ssize_t)n);
    CHECK_EQ(m.msg_flags, 0);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, SOL_IP);
    CHECK_EQ(c->cmsg_type, IP_TTL);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(int)));
    int ttl;
    memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
    CHECK(ttl > 0 && ttl <= 255);
    CHECK(CMSG_NXTHDR(&m, c) == NULL);

    /* No room for the header: cut, nothing written. */
    request(buf, ICMP_ECHO, seq + 1);
    CHECK_EQ(sendto(s, buf, n, 0, (const struct sockaddr *)dest, sizeof *dest), (ssize_t)n);
    CHECK_EQ(poll(&p, 1, 5000), 1);
    m.msg_controllen = sizeof(struct cmsghdr) - 1;
    m.msg_flags = 0;
    CHECK_EQ(recvmsg(s, &m, 0), (ssize_t)n);
    CHECK_EQ(m.msg_flags, MSG_CTRUNC);
    CHECK_EQ(m.msg_controllen, 0);
}

/* The options set on the socket read back as set (IP_TTL as an int, or
 * as one byte when asked for less, as Linux's ip_getsockopt gives it). */
static void options_read_back(int s) {
    int v = -1;
    socklen_t vl = sizeof v;
    CHECK_OK(getsockopt(s, SOL_IP, IP_RECVTTL, &v, &vl));
    CHECK_EQ(vl, sizeof v);
    CHECK_EQ(v, 0);
    int on = 1, ttl = 33;
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVTTL, &on, sizeof on));
    CHECK_OK(getsockopt(s, SOL_IP, IP_RECVTTL, &v, &vl));
    CHECK_EQ(v, 1);
    CHECK_OK(setsockopt(s, SOL_IP, IP_TTL, &ttl, sizeof ttl));
    CHECK_OK(getsockopt(s, SOL_IP, IP_TTL, &v, &vl));
    CHECK_EQ(v, 33);
    unsigned char byte = 0;
    vl = 1;
    CHECK_OK(getsockopt(s, SOL_IP, IP_TTL, &byte, &vl));
    CHECK_EQ(vl, 1);
    CHECK_EQ(byte, 33);
    vl = (socklen_t)-1;
    CHECK_ERR(getsockopt(s, SOL_IP, IP_TTL, &v, &vl), EINVAL);
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVERR, &on, sizeof on));
    vl = sizeof v;
    CHECK_OK(getsockopt(s, SOL_IP, IP_RECVERR, &v, &vl));
    CHECK_EQ(v, 1);
}

/* With IP_PKTINFO, a reply names the interface it came in on and the
 * address it was sent to: one of that interface's own addresses. */
static void reply_pktinfo(const struct sockaddr_in *dest) {
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
    int on = 1, v = 0;
    socklen_t vl = sizeof v;
    CHECK_OK(setsockopt(s, SOL_IP, IP_PKTINFO, &on, sizeof on));
    CHECK_OK(getsockopt(s, SOL_IP, IP_PKTINFO, &v, &vl));
    CHECK_EQ(v, 1);
    unsigned char buf[256];
    size_t n = request(buf, ICMP_ECHO, 9);
    CHECK_EQ(sendto(s, buf, n, 0, (const struct sockaddr *)dest, sizeof *dest), (ssize_t)n);
    struct pollfd p = {.fd = s, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    union {
        char bytes[CMSG_SPACE(sizeof(struct in_pktinfo))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes,
                       .msg_controllen = sizeof control.bytes};
    CHECK_EQ(recvmsg(s, &m, 0), (ssize_t)n);
    CHECK_EQ(m.msg_flags, 0);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, SOL_IP);
    CHECK_EQ(c->cmsg_type, IP_PKTINFO);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(struct in_pktinfo)));
    struct in_pktinfo info;
    memcpy(&info, CMSG_DATA(c), sizeof info);
    /* Linux leaves ipi_spec_dst unset on a ping socket's replies. */
    CHECK(info.ipi_spec_dst.s_addr == 0 || info.ipi_spec_dst.s_addr == info.ipi_addr.s_addr);
    char name[IF_NAMESIZE];
    CHECK(if_indextoname((unsigned)info.ipi_ifindex, name) != NULL);
    struct ifaddrs *all;
    CHECK_OK(getifaddrs(&all));
    int found = 0;
    for (struct ifaddrs *i = all; i; i = i->ifa_next) {
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && strcmp(i->ifa_name, name) == 0) {
            struct sockaddr_in a;
            memcpy(&a, i->ifa_addr, sizeof a);
            found |= a.sin_addr.s_addr == info.ipi_addr.s_addr;
        }
    }
    freeifaddrs(all);
    CHECK(found);
    /* Too little room: cut, MSG_CTRUNC. */
    request(buf, ICMP_ECHO, 10);
    CHECK_EQ(sendto(s, buf, n, 0, (const struct sockaddr *)dest, sizeof *dest), (ssize_t)n);
    CHECK_EQ(poll(&p, 1, 5000), 1);
    m.msg_controllen = CMSG_LEN(4);
    m.msg_flags = 0;
    CHECK_EQ(recvmsg(s, &m, 0), (ssize_t)n);
    CHECK_EQ(m.msg_flags, MSG_CTRUNC);
    close(s);
}

/* The Internet checksum of `len` bytes at `p`. */
static unsigned short checksum(const unsigned char *p, size_t len) {
    unsigned long sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (unsigned long)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        sum += (unsigned long)(p[len - 1] << 8);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (unsigned short)~sum;
}

/* The machine's own addresses answer: the reply (from `want_from`)
 * carries the socket's id, the sequence, the payload, a valid checksum
 * and TTL 64, as Linux's own stack answers. */
static void local_echo(const char *to, const char *want_from) {
    struct sockaddr_in dest = {.sin_family = AF_INET}, from;
    CHECK_EQ(inet_pton(AF_INET, to, &dest.sin_addr), 1);
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
    int on = 1;
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVTTL, &on, sizeof on));
    unsigned char buf[256];
    size_t n = request(buf, ICMP_ECHO, 21);
    buf[2] = 0x12; /* a wrong checksum: the kernel computes its own */
    CHECK_EQ(sendto(s, buf, n, 0, (struct sockaddr *)&dest, sizeof dest), (ssize_t)n);
    struct in_addr any;
    unsigned short id = local_id(s, &any);
    CHECK(id != 0);
    struct pollfd p = {.fd = s, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK_EQ(p.revents, POLLIN);
    union {
        char bytes[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = control.bytes, .msg_controllen = sizeof control.bytes};
    CHECK_EQ(recvmsg(s, &m, 0), (ssize_t)n);
    CHECK_EQ(m.msg_flags, 0);
    char shown[INET_ADDRSTRLEN];
    CHECK(inet_ntop(AF_INET, &from.sin_addr, shown, sizeof shown) != NULL);
    CHECK(strcmp(shown, want_from) == 0);
    CHECK_EQ(from.sin_port, 0);
    struct icmphdr h;
    memcpy(&h, buf, sizeof h);
    CHECK_EQ(h.type, ICMP_ECHOREPLY);
    CHECK_EQ(h.code, 0);
    CHECK_EQ(ntohs(h.un.echo.id), id);
    CHECK_EQ(ntohs(h.un.echo.sequence), 21);
    CHECK_EQ(checksum(buf, n), 0);
    CHECK(memcmp(buf + sizeof h, payload, sizeof payload) == 0);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_type, IP_TTL);
    int ttl;
    memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
    CHECK_EQ(ttl, 64);
    CHECK_ERR(recv(s, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    /* Connected to itself, plain writes are answered too. */
    CHECK_OK(connect(s, (struct sockaddr *)&dest, sizeof dest));
    n = request(buf, ICMP_ECHO, 22);
    CHECK_EQ(write(s, buf, n), (ssize_t)n);
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK_EQ(read(s, buf, sizeof buf), (ssize_t)n);
    memcpy(&h, buf, sizeof h);
    CHECK_EQ(ntohs(h.un.echo.sequence), 22);
    CHECK_EQ(ntohs(h.un.echo.id), id);
    close(s);
}

int main(int argc, char **argv) {
    if (argc != 2)
        FAILF("usage: ping_socket ADDRESS");
    struct sockaddr_in dest = {.sin_family = AF_INET};
    CHECK_EQ(inet_pton(AF_INET, argv[1], &dest.sin_addr), 1);
    unsigned char buf[256];

    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP));
    int v = 0;
    socklen_t vl = sizeof v;
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &vl));
    CHECK_EQ(v, SOCK_DGRAM);
    CHECK_OK(getsockopt(s, SOL_SOCKET, SO_PROTOCOL, &v, &vl));
    CHECK_EQ(v, IPPROTO_ICMP);
    /* No id before the first send. */
    struct in_addr addr;
    CHECK_EQ(local_id(s, &addr), 0);
    CHECK_EQ(addr.s_addr, htonl(INADDR_ANY));

    /* Linux's checks: a whole ICMP header, an echo request, an address. */
    size_t n = request(buf, ICMP_ECHO, 1);
    CHECK_ERR(sendto(s, buf, 4, 0, (struct sockaddr *)&dest, sizeof dest), EINVAL);
    request(buf, ICMP_TIMESTAMP, 1);
    CHECK_ERR(sendto(s, buf, n, 0, (struct sockaddr *)&dest, sizeof dest), EINVAL);
    request(buf, ICMP_ECHO, 1);
    CHECK_ERR(send(s, buf, n, 0), EDESTADDRREQ);
    struct sockaddr_in6 wrong = {.sin6_family = AF_INET6};
    CHECK_ERR(sendto(s, buf, n, 0, (struct sockaddr *)&wrong, sizeof wrong), EAFNOSUPPORT);
    CHECK_ERR(recv(s, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);

    /* An echo and its reply, which carries the id the socket was given. */
    CHECK_EQ(sendto(s, buf, n, 0, (struct sockaddr *)&dest, sizeof dest), (ssize_t)n);
    unsigned short id = local_id(s, &addr);
    CHECK(id != 0);
    CHECK_EQ(addr.s_addr, htonl(INADDR_ANY));
    reply(s, &dest, 1, id);
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    CHECK_ERR(getpeername(s, (struct sockaddr *)&peer, &pl), ENOTCONN);

    /* bind chooses the id; connect the destination of plain sends. */
    int b = CHECK_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(4242)};
    CHECK_OK(bind(b, (struct sockaddr *)&any, sizeof any));
    CHECK_EQ(local_id(b, &addr), 4242);
    CHECK_ERR(bind(b, (struct sockaddr *)&any, sizeof any), EINVAL);
    CHECK_OK(connect(b, (struct sockaddr *)&dest, sizeof dest));
    /* A ping socket has no peer port, so Linux shows no peer at all. */
    pl = sizeof peer;
    CHECK_ERR(getpeername(b, (struct sockaddr *)&peer, &pl), ENOTCONN);
    n = request(buf, ICMP_ECHO, 2);
    CHECK_EQ(write(b, buf, n), (ssize_t)n);
    reply(b, &dest, 2, 4242);

    /* IP_RECVTTL: the reply's TTL; IP_RECVERR: an empty error queue. */
    int on = 1;
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVTTL, &on, sizeof on));
    CHECK_OK(setsockopt(s, SOL_IP, IP_RECVERR, &on, sizeof on));
    reply_ttl(s, &dest, 3);
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE | MSG_DONTWAIT), EAGAIN);
    CHECK_ERR(recvmsg(s, &m, MSG_ERRQUEUE), EAGAIN);
    CHECK_ERR(setsockopt(s, SOL_IP, IP_TTL, &on, -1), EINVAL);
    options_read_back(b);
    reply_pktinfo(&dest);
    local_echo("127.0.0.1", "127.0.0.1");
    local_echo("127.1.2.3", "127.1.2.3");
    local_echo("0.0.0.0", "127.0.0.1");
    close(b);
    close(s);
    puts("ok");
    return 0;
}
