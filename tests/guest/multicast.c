/* multicast.c — IP multicast on UDP sockets, as Linux does it in a network
 * namespace with only `lo` (argument "lo") or with `lo` and an `eth0` of
 * 10.0.2.15/24, the default route and no IPv6 (argument "eth0"): the
 * options (IP_ADD_MEMBERSHIP with ip_mreq and ip_mreqn, IP_DROP_MEMBERSHIP,
 * IP_MULTICAST_IF with in_addr, ip_mreq and ip_mreqn, IP_MULTICAST_TTL,
 * _LOOP, _ALL; IPV6_JOIN_GROUP, IPV6_LEAVE_GROUP, IPV6_MULTICAST_IF,
 * _HOPS, _LOOP, _ALL) and their errors, and which sockets a datagram to a
 * group reaches: those bound to its port (the wildcard or the group) that
 * joined the group on the interface it came in on, or have
 * IP_MULTICAST_ALL on, one copy each, once the interface joined it. On
 * `lo` every datagram comes back, IP_MULTICAST_LOOP or not; on eth0 only
 * with it. There is no route for IPv6 multicast in either namespace.
 *
 * Every datagram here goes through lo or the namespace's eth0: run it in
 * a namespace of its own (the e2e test does). */
#include "check.h"
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define GROUP "239.1.2.3"
#define GROUP6 "ff15::1234"

static int eth0;
static int port;

static struct in_addr ip4(const char *s) {
    struct in_addr a;
    CHECK_EQ(inet_pton(AF_INET, s, &a), 1);
    return a;
}

static struct sockaddr_in v4(const char *ip, int p) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(p), .sin_addr = ip4(ip)};
    return a;
}

static struct sockaddr_in6 v6(const char *ip, int p) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(p)};
    CHECK_EQ(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
    return a;
}

static struct ip_mreq mreq(const char *group, const char *iface) {
    struct ip_mreq m = {.imr_multiaddr = ip4(group), .imr_interface = ip4(iface)};
    return m;
}

static struct ip_mreqn mreqn(const char *group, const char *addr, int index) {
    struct ip_mreqn m = {.imr_multiaddr = ip4(group), .imr_address = ip4(addr), .imr_ifindex = index};
    return m;
}

/* A struct group_req (MCAST_JOIN_GROUP) for `group` of `family`. */
static struct group_req group_req(int family, const char *group, int index) {
    struct group_req r = {.gr_interface = index};
    if (family == AF_INET)
        CHECK_EQ(inet_pton(AF_INET, group, &((struct sockaddr_in *)&r.gr_group)->sin_addr), 1);
    else
        CHECK_EQ(inet_pton(AF_INET6, group, &((struct sockaddr_in6 *)&r.gr_group)->sin6_addr), 1);
    r.gr_group.ss_family = family;
    return r;
}

static struct ipv6_mreq mreq6(const char *group, int index) {
    struct ipv6_mreq m = {.ipv6mr_interface = index};
    CHECK_EQ(inet_pton(AF_INET6, group, &m.ipv6mr_multiaddr), 1);
    return m;
}

#define SET(fd, level, name, v) setsockopt(fd, level, name, &(v), sizeof(v))
#define SET_INT(fd, level, name, i) ({ int v_ = (i); SET(fd, level, name, v_); })
#define JOIN(fd, m) SET(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, m)
#define DROP(fd, m) SET(fd, IPPROTO_IP, IP_DROP_MEMBERSHIP, m)

static int get_int(int fd, int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_OK(getsockopt(fd, level, name, &v, &len));
    CHECK_EQ(len, sizeof v);
    return v;
}

/* The address IP_MULTICAST_IF reads back. */
static const char *multicast_if(int fd) {
    static char buf[INET_ADDRSTRLEN];
    struct in_addr a;
    socklen_t len = sizeof a;
    CHECK_OK(getsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &a, &len));
    CHECK_EQ(len, sizeof a);
    return inet_ntop(AF_INET, &a, buf, sizeof buf);
}

static int udp(int family) {
    return CHECK_OK(socket(family, SOCK_DGRAM | SOCK_NONBLOCK, 0));
}

/* A UDP socket sharing the test's port, bound to `ip` there. */
static int receiver(const char *ip) {
    int fd = udp(AF_INET);
    CHECK_OK(SET_INT(fd, SOL_SOCKET, SO_REUSEADDR, 1));
    struct sockaddr_in a = v4(ip, port);
    CHECK_OK(bind(fd, (struct sockaddr *)&a, sizeof a));
    return fd;
}

/* How many datagrams wait on fd (all read); the sender of the last one
 * in `from` when given. */
static int drain(int fd, char *from) {
    int n = 0;
    for (;;) {
        char buf[64];
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&ss, &len);
        if (r < 0) {
            CHECK_EQ(errno, EAGAIN);
            return n;
        }
        n++;
        if (from && ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, from, INET6_ADDRSTRLEN);
        if (from && ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, from, INET6_ADDRSTRLEN);
    }
}

static void send_group(int fd) {
    struct sockaddr_in g = v4(GROUP, port);
    CHECK_EQ(sendto(fd, "m", 1, 0, (struct sockaddr *)&g, sizeof g), 1);
}

/* The options' defaults and what Linux refuses. */
static void options(void) {
    int u = udp(AF_INET), t = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_EQ(get_int(u, IPPROTO_IP, IP_MULTICAST_TTL), 1);
    CHECK_EQ(get_int(u, IPPROTO_IP, IP_MULTICAST_LOOP), 1);
    CHECK_EQ(get_int(u, IPPROTO_IP, IP_MULTICAST_ALL), 1);
    CHECK_STR(multicast_if(u), "0.0.0.0");
    CHECK_ERR(SET_INT(u, IPPROTO_IP, IP_MULTICAST_ALL, 5), EINVAL);
    CHECK_OK(SET_INT(u, IPPROTO_IP, IP_MULTICAST_ALL, 0));
    CHECK_EQ(get_int(u, IPPROTO_IP, IP_MULTICAST_ALL), 0);
    CHECK_ERR(SET_INT(t, IPPROTO_IP, IP_MULTICAST_TTL, 5), EINVAL);

    /* IP_MULTICAST_IF: an in_addr, an ip_mreq (its second field) or an
     * ip_mreqn; read back as the address. */
    struct in_addr lo = ip4("127.0.0.1");
    CHECK_ERR(setsockopt(u, IPPROTO_IP, IP_MULTICAST_IF, &lo, 3), EINVAL);
    CHECK_OK(SET(u, IPPROTO_IP, IP_MULTICAST_IF, lo));
    CHECK_STR(multicast_if(u), "127.0.0.1");
    char two[2];
    socklen_t len = sizeof two;
    CHECK_OK(getsockopt(u, IPPROTO_IP, IP_MULTICAST_IF, two, &len));
    CHECK_EQ(len, 2);
    CHECK_EQ(two[0], 127);
    struct in_addr bogus = ip4("10.9.9.9");
    CHECK_ERR(SET(u, IPPROTO_IP, IP_MULTICAST_IF, bogus), EADDRNOTAVAIL);
    struct ip_mreqn by_index = mreqn("0.0.0.0", "0.0.0.0", 1), no_such = mreqn("0.0.0.0", "0.0.0.0", 77);
    CHECK_ERR(SET(u, IPPROTO_IP, IP_MULTICAST_IF, no_such), EADDRNOTAVAIL);
    CHECK_OK(SET(u, IPPROTO_IP, IP_MULTICAST_IF, by_index));
    CHECK_STR(multicast_if(u), "0.0.0.0");
    struct ip_mreq second = mreq("10.0.0.1", "127.0.0.2");
    CHECK_OK(SET(u, IPPROTO_IP, IP_MULTICAST_IF, second));
    CHECK_STR(multicast_if(u), "127.0.0.2");
    struct in_addr any = ip4("0.0.0.0");
    CHECK_OK(SET(u, IPPROTO_IP, IP_MULTICAST_IF, any));
    CHECK_STR(multicast_if(u), "0.0.0.0");
    CHECK_ERR(SET(t, IPPROTO_IP, IP_MULTICAST_IF, lo), EINVAL);

    /* Memberships. */
    struct ip_mreq m = mreq(GROUP, "127.0.0.1");
    CHECK_ERR(setsockopt(u, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, 7), EINVAL);
    struct ip_mreq unicast = mreq("10.1.1.1", "127.0.0.1"), nowhere = mreq(GROUP, "10.9.9.9");
    CHECK_ERR(JOIN(u, unicast), EINVAL);
    CHECK_ERR(JOIN(u, nowhere), ENODEV);
    struct ip_mreqn no_device = mreqn(GROUP, "0.0.0.0", 77);
    CHECK_ERR(JOIN(u, no_device), ENODEV);
    CHECK_ERR(JOIN(t, m), EPROTO);
    CHECK_OK(JOIN(u, m));
    CHECK_ERR(JOIN(u, m), EADDRINUSE);
    struct ip_mreqn lo_by_index = mreqn(GROUP, "0.0.0.0", 1);
    CHECK_ERR(JOIN(u, lo_by_index), EADDRINUSE);
    /* An ip_mreqn's index wins over its address. */
    struct ip_mreqn odd = mreqn("239.1.2.4", "10.9.9.9", 1);
    CHECK_OK(JOIN(u, odd));
    struct ip_mreq other = mreq("239.9.9.9", "127.0.0.1");
    CHECK_ERR(DROP(u, other), EADDRNOTAVAIL);
    CHECK_ERR(DROP(u, unicast), EADDRNOTAVAIL);
    /* Any of lo's addresses names lo. */
    struct ip_mreq lo2 = mreq(GROUP, "127.0.0.2");
    CHECK_OK(DROP(u, lo2));
    CHECK_ERR(DROP(u, m), EADDRNOTAVAIL);
    char buf[64];
    len = sizeof buf;
    CHECK_ERR(getsockopt(u, IPPROTO_IP, IP_ADD_MEMBERSHIP, buf, &len), ENOPROTOOPT);
    /* MCAST_JOIN_GROUP names the interface by index; both kinds of
     * request name the same memberships. */
    struct group_req gr = group_req(AF_INET, "239.1.2.5", 1), gr_any = group_req(AF_INET, "239.1.2.5", 0);
    struct group_req gr_six = group_req(AF_INET6, "ff15::1", 1);
    CHECK_ERR(setsockopt(u, IPPROTO_IP, MCAST_JOIN_GROUP, &gr, sizeof gr - 1), EINVAL);
    CHECK_ERR(SET(u, IPPROTO_IP, MCAST_JOIN_GROUP, gr_six), EINVAL);
    CHECK_OK(SET(u, IPPROTO_IP, MCAST_JOIN_GROUP, gr));
    CHECK_ERR(SET(u, IPPROTO_IP, MCAST_JOIN_GROUP, gr), EADDRINUSE);
    struct ip_mreq m5 = mreq("239.1.2.5", "127.0.0.1");
    CHECK_ERR(JOIN(u, m5), EADDRINUSE);
    if (!eth0)
        CHECK_ERR(SET(u, IPPROTO_IP, MCAST_LEAVE_GROUP, gr_any), ENODEV);
    CHECK_OK(SET(u, IPPROTO_IP, MCAST_LEAVE_GROUP, gr));
    CHECK_ERR(SET(u, IPPROTO_IP, MCAST_LEAVE_GROUP, gr), EADDRNOTAVAIL);
    len = sizeof buf;
    CHECK_ERR(getsockopt(u, IPPROTO_IP, MCAST_JOIN_GROUP, buf, &len), ENOPROTOOPT);

    /* net.ipv4.igmp_max_memberships: 20 groups a socket. */
    int many = udp(AF_INET);
    for (int i = 1; i <= 20; i++) {
        char g[16];
        snprintf(g, sizeof g, "239.0.0.%d", i);
        struct ip_mreq mi = mreq(g, "127.0.0.1");
        CHECK_OK(JOIN(many, mi));
    }
    struct ip_mreq last = mreq("239.0.0.21", "127.0.0.1");
    CHECK_ERR(JOIN(many, last), ENOBUFS);
    close(many);
    close(u);
    close(t);
}

/* The receivers of delivery_on_lo, all on the test's port: bound to the
 * wildcard (one joins, one has IP_MULTICAST_ALL on, one off), to the
 * group, and to 127.0.0.1. */
enum { JOINED, ALL, NONE, GROUP_BOUND, LOCAL, RECEIVERS };
static int rx[RECEIVERS];

/* Each receiver got `want` datagrams (one copy, or none) since the last
 * look: a string of five 0/1; the sender of the last one to JOINED in
 * `from`. */
static void expect(const char *want, char *from) {
    for (int i = 0; i < RECEIVERS; i++) {
        int got = drain(rx[i], i == JOINED ? from : NULL);
        if (got != want[i] - '0')
            FAILF("receiver %d got %d datagrams, want %c (of %s)", i, got, want[i], want);
    }
}

/* Which sockets a datagram to the group sent through lo reaches. */
static void delivery_on_lo(void) {
    const char *addrs[RECEIVERS] = {"0.0.0.0", "0.0.0.0", "0.0.0.0", GROUP, "127.0.0.1"};
    for (int i = 0; i < RECEIVERS; i++)
        rx[i] = receiver(addrs[i]);
    CHECK_OK(SET_INT(rx[NONE], IPPROTO_IP, IP_MULTICAST_ALL, 0));
    int w = udp(AF_INET);
    struct in_addr lo = ip4("127.0.0.1");
    CHECK_OK(SET(w, IPPROTO_IP, IP_MULTICAST_IF, lo));

    /* Nobody joined: lo does not take the group. */
    send_group(w);
    expect("00000", NULL);

    struct ip_mreq m = mreq(GROUP, "127.0.0.1");
    CHECK_OK(JOIN(rx[JOINED], m));
    send_group(w);
    char from[INET6_ADDRSTRLEN] = "";
    expect("11010", from);
    CHECK_STR(from, "127.0.0.1");

    /* On lo, what is sent comes back, IP_MULTICAST_LOOP or not. */
    CHECK_OK(SET_INT(w, IPPROTO_IP, IP_MULTICAST_LOOP, 0));
    CHECK_EQ(get_int(w, IPPROTO_IP, IP_MULTICAST_LOOP), 0);
    send_group(w);
    expect("11010", NULL);
    CHECK_OK(SET_INT(w, IPPROTO_IP, IP_MULTICAST_LOOP, 1));

    /* A socket bound to one of lo's addresses sends through lo. */
    int bound = udp(AF_INET);
    struct sockaddr_in b = v4("127.0.0.1", 0);
    CHECK_OK(bind(bound, (struct sockaddr *)&b, sizeof b));
    send_group(bound);
    expect("11010", from);
    CHECK_STR(from, "127.0.0.1");

    /* Named by index alone, lo gives no source address of its own: eth0's
     * or none. */
    struct ip_mreqn by_index = mreqn("0.0.0.0", "0.0.0.0", 1);
    int w2 = udp(AF_INET);
    CHECK_OK(SET(w2, IPPROTO_IP, IP_MULTICAST_IF, by_index));
    send_group(w2);
    expect("11010", from);
    CHECK_STR(from, eth0 ? "10.0.2.15" : "0.0.0.0");

    /* Connected to the group, a socket sends there. */
    int c = udp(AF_INET);
    CHECK_OK(SET(c, IPPROTO_IP, IP_MULTICAST_IF, lo));
    struct sockaddr_in g = v4(GROUP, port);
    CHECK_OK(connect(c, (struct sockaddr *)&g, sizeof g));
    struct sockaddr_in name;
    socklen_t len = sizeof name;
    CHECK_OK(getsockname(c, (struct sockaddr *)&name, &len));
    CHECK_EQ(name.sin_addr.s_addr, lo.s_addr);
    CHECK_EQ(send(c, "c", 1, 0), 1);
    expect("11010", NULL);

    /* An IPv6 socket takes IPv4 groups too (IP_ADD_MEMBERSHIP on it). */
    int six = udp(AF_INET6);
    CHECK_OK(SET_INT(six, SOL_SOCKET, SO_REUSEADDR, 1));
    CHECK_OK(SET_INT(six, IPPROTO_IP, IP_MULTICAST_ALL, 0));
    struct sockaddr_in6 any6 = v6("::", port);
    CHECK_OK(bind(six, (struct sockaddr *)&any6, sizeof any6));
    send_group(w);
    CHECK_EQ(drain(six, NULL), 0);
    expect("11010", NULL);
    CHECK_OK(JOIN(six, m));
    send_group(w);
    CHECK_EQ(drain(six, from), 1);
    CHECK_STR(from, "::ffff:127.0.0.1");
    expect("11010", NULL);
    close(six);

    /* Once the last member leaves, lo no longer takes the group. */
    CHECK_OK(DROP(rx[JOINED], m));
    send_group(w);
    expect("00000", NULL);

    /* 224.0.0.1 every interface has joined. */
    struct sockaddr_in hosts = v4("224.0.0.1", port);
    CHECK_EQ(sendto(w, "h", 1, 0, (struct sockaddr *)&hosts, sizeof hosts), 1);
    expect("11000", NULL);
    for (int i = 0; i < RECEIVERS; i++)
        close(rx[i]);
    close(w);
    close(w2);
    close(bound);
    close(c);
}

/* A datagram to a group without an interface named takes the default
 * route: none on lo alone; eth0, where the sandbox's members get the
 * looped-back copy. */
static void default_route(void) {
    int r = receiver("0.0.0.0"), w = udp(AF_INET);
    struct ip_mreq any = mreq(GROUP, "0.0.0.0");
    struct sockaddr_in g = v4(GROUP, port);
    if (!eth0) {
        CHECK_ERR(JOIN(r, any), ENODEV);
        CHECK_ERR(DROP(r, any), ENODEV);
        CHECK_ERR(sendto(w, "x", 1, 0, (struct sockaddr *)&g, sizeof g), ENETUNREACH);
        CHECK_ERR(connect(w, (struct sockaddr *)&g, sizeof g), ENETUNREACH);
        close(r);
        close(w);
        return;
    }
    CHECK_OK(JOIN(r, any));
    struct ip_mreq by_addr = mreq(GROUP, "10.0.2.15");
    CHECK_ERR(JOIN(r, by_addr), EADDRINUSE);
    send_group(w);
    char from[INET6_ADDRSTRLEN] = "";
    CHECK_EQ(drain(r, from), 1);
    CHECK_STR(from, "10.0.2.15");
    /* On eth0 only IP_MULTICAST_LOOP brings a datagram back. */
    CHECK_OK(SET_INT(w, IPPROTO_IP, IP_MULTICAST_LOOP, 0));
    send_group(w);
    CHECK_EQ(drain(r, NULL), 0);
    CHECK_OK(SET_INT(w, IPPROTO_IP, IP_MULTICAST_LOOP, 1));
    /* lo's members do not take what comes in on eth0, unless
     * IP_MULTICAST_ALL lets them take whatever eth0 takes. */
    int on_lo = receiver("0.0.0.0");
    struct ip_mreq m = mreq(GROUP, "127.0.0.1");
    CHECK_OK(JOIN(on_lo, m));
    CHECK_OK(SET_INT(on_lo, IPPROTO_IP, IP_MULTICAST_ALL, 0));
    send_group(w);
    CHECK_EQ(drain(r, NULL), 1);
    CHECK_EQ(drain(on_lo, NULL), 0);
    CHECK_OK(DROP(r, any));
    CHECK_ERR(DROP(r, any), EADDRNOTAVAIL);
    close(on_lo);
    close(r);
    close(w);
}

/* The IPv6 twins. */
static void ipv6(void) {
    int s = udp(AF_INET6), t = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0)), four = udp(AF_INET);
    CHECK_EQ(get_int(s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS), 1);
    CHECK_EQ(get_int(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP), 1);
    CHECK_EQ(get_int(s, IPPROTO_IPV6, IPV6_MULTICAST_ALL), 1);
    CHECK_EQ(get_int(s, IPPROTO_IPV6, IPV6_MULTICAST_IF), 0);
    CHECK_ERR(SET_INT(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 2), EINVAL);
    CHECK_OK(SET_INT(s, IPPROTO_IPV6, IPV6_MULTICAST_ALL, 5));
    CHECK_EQ(get_int(s, IPPROTO_IPV6, IPV6_MULTICAST_ALL), 1);
    CHECK_ERR(SET_INT(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, 9), ENODEV);
    CHECK_ERR(SET_INT(t, IPPROTO_IPV6, IPV6_MULTICAST_IF, 1), ENOPROTOOPT);

    struct ipv6_mreq m = mreq6(GROUP6, 1), any = mreq6(GROUP6, 0), nowhere = mreq6(GROUP6, 9);
    struct ipv6_mreq unicast = mreq6("::1", 1);
    CHECK_ERR(setsockopt(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof m - 1), EINVAL);
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, unicast), EINVAL);
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, nowhere), ENODEV);
    CHECK_ERR(SET(t, IPPROTO_IPV6, IPV6_JOIN_GROUP, m), EPROTO);
    CHECK_ERR(SET(four, IPPROTO_IPV6, IPV6_JOIN_GROUP, m), ENOPROTOOPT);
    /* No interface has a route for IPv6 multicast (lo has none, eth0 no
     * IPv6), but either may join a group. */
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, any), ENODEV);
    if (eth0) {
        struct ipv6_mreq on_eth0 = mreq6(GROUP6, 2);
        CHECK_OK(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, on_eth0));
        CHECK_OK(SET(s, IPPROTO_IPV6, IPV6_LEAVE_GROUP, on_eth0));
    }
    CHECK_OK(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, m));
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, m), EADDRINUSE);
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, any), EADDRINUSE);
    struct ipv6_mreq other = mreq6(GROUP6, 2);
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_LEAVE_GROUP, other), EADDRNOTAVAIL);
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_LEAVE_GROUP, unicast), EINVAL);
    CHECK_OK(SET(s, IPPROTO_IPV6, IPV6_LEAVE_GROUP, any));
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_LEAVE_GROUP, any), EADDRNOTAVAIL);
    struct group_req gr = group_req(AF_INET6, GROUP6, 1), gr_four = group_req(AF_INET, GROUP, 1);
    CHECK_ERR(setsockopt(s, IPPROTO_IPV6, MCAST_JOIN_GROUP, &gr, sizeof gr - 1), EINVAL);
    CHECK_ERR(SET(s, IPPROTO_IPV6, MCAST_JOIN_GROUP, gr_four), EADDRNOTAVAIL);
    CHECK_OK(SET(s, IPPROTO_IPV6, MCAST_JOIN_GROUP, gr));
    CHECK_ERR(SET(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, m), EADDRINUSE);
    CHECK_OK(SET(s, IPPROTO_IPV6, MCAST_LEAVE_GROUP, gr));
    CHECK_ERR(SET(s, IPPROTO_IPV6, MCAST_LEAVE_GROUP, gr), EADDRNOTAVAIL);
    CHECK_ERR(SET(four, IPPROTO_IPV6, MCAST_JOIN_GROUP, gr), ENOPROTOOPT);
    /* An IPv6 socket joins IPv4 groups at the IPv4 level. */
    CHECK_OK(SET(s, IPPROTO_IP, MCAST_JOIN_GROUP, gr_four));

    /* A group of a scope that needs an interface needs a scope id to be
     * bound; another one may be. */
    struct sockaddr_in6 link = v6("ff02::1", 0), site = v6(GROUP6, 0);
    CHECK_ERR(bind(s, (struct sockaddr *)&link, sizeof link), EINVAL);
    CHECK_OK(bind(s, (struct sockaddr *)&site, sizeof site));

    int w = udp(AF_INET6);
    struct sockaddr_in6 g = v6(GROUP6, port);
    CHECK_ERR(sendto(w, "x", 1, 0, (struct sockaddr *)&g, sizeof g), ENETUNREACH);
    CHECK_ERR(connect(w, (struct sockaddr *)&g, sizeof g), ENETUNREACH);
    CHECK_OK(SET_INT(w, IPPROTO_IPV6, IPV6_MULTICAST_IF, 1));
    CHECK_EQ(get_int(w, IPPROTO_IPV6, IPV6_MULTICAST_IF), 1);
    CHECK_ERR(sendto(w, "x", 1, 0, (struct sockaddr *)&g, sizeof g), ENETUNREACH);
    close(w);
    close(s);
    close(t);
    close(four);
}

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "lo") != 0 && strcmp(argv[1], "eth0") != 0)) {
        fprintf(stderr, "usage: multicast lo|eth0\n");
        return 2;
    }
    eth0 = strcmp(argv[1], "eth0") == 0;
    CHECK_EQ(if_nametoindex("lo"), 1);
    if (eth0)
        CHECK_EQ(if_nametoindex("eth0"), 2);
    port = 40000 + getpid() % 20000;
    options();
    delivery_on_lo();
    default_route();
    ipv6();
    puts("ok");
    return 0;
}
