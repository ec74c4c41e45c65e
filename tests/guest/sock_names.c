/* sock_names.c — getsockname after connect, as Linux answers it: a UDP
 * socket is bound to the source address toward its peer (127.0.0.1, ::1,
 * ::ffff:127.0.0.1; 0.0.0.0 as a destination is this host, reached from
 * loopback) and to a port; connect(AF_UNSPEC) gives back what connect
 * chose and a port not bound explicitly, while a bound address or port
 * stays. A TCP connection shows its source address likewise. An IPv6
 * datagram socket takes AF_INET peers; a peer of the other IP version than
 * the bound address has no route. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static struct sockaddr_in v4(const char *ip, int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    CHECK_EQ(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    return a;
}

static struct sockaddr_in6 v6(const char *ip, int port) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    CHECK_EQ(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
    return a;
}

/* fd's local address as "ip port" (port 0 or "any" for a nonzero one). */
static const char *name_of(int fd, int *port) {
    static char buf[INET6_ADDRSTRLEN + 16];
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    CHECK_OK(getsockname(fd, (struct sockaddr *)&ss, &len));
    char ip[INET6_ADDRSTRLEN];
    int p;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        p = ntohs(a->sin_port);
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        p = ntohs(a->sin6_port);
    }
    if (port)
        *port = p;
    snprintf(buf, sizeof buf, "%s %s", ip, p ? "any" : "0");
    return buf;
}

#define CHECK_NAME(fd, want)                                                  \
    do {                                                                      \
        const char *got_ = name_of(fd, NULL);                                 \
        if (strcmp(got_, want) != 0)                                          \
            FAILF("getsockname(%s) is \"%s\", want \"%s\"", #fd, got_, want); \
    } while (0)

static void unconnect(int fd) {
    struct sockaddr sa = {.sa_family = AF_UNSPEC};
    CHECK_OK(connect(fd, &sa, sizeof sa));
}

#define CONNECT(fd, a) CHECK_OK(connect(fd, (struct sockaddr *)&(a), sizeof(a)))
#define BIND(fd, a) CHECK_OK(bind(fd, (struct sockaddr *)&(a), sizeof(a)))

static void udp_v4(void) {
    struct sockaddr_in lo9 = v4("127.0.0.1", 9);
    int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CHECK_NAME(u, "0.0.0.0 0");
    CONNECT(u, lo9);
    CHECK_NAME(u, "127.0.0.1 any");
    unconnect(u);
    CHECK_NAME(u, "0.0.0.0 0");
    CONNECT(u, lo9);
    CHECK_NAME(u, "127.0.0.1 any");
    close(u);

    /* Bound to the wildcard and port 0: the same. */
    int w = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in any0 = v4("0.0.0.0", 0);
    BIND(w, any0);
    CHECK_NAME(w, "0.0.0.0 any");
    CONNECT(w, lo9);
    CHECK_NAME(w, "127.0.0.1 any");
    unconnect(w);
    CHECK_NAME(w, "0.0.0.0 0");
    close(w);

    /* A bound address stays, its port 0 goes back all the same. */
    int b = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in lo0 = v4("127.0.0.1", 0);
    BIND(b, lo0);
    CONNECT(b, lo9);
    CHECK_NAME(b, "127.0.0.1 any");
    unconnect(b);
    CHECK_NAME(b, "127.0.0.1 0");
    close(b);

    /* A bound port stays. */
    int probe = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    BIND(probe, any0);
    int port;
    name_of(probe, &port);
    close(probe);
    int p = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in anyp = v4("0.0.0.0", port);
    BIND(p, anyp);
    CONNECT(p, lo9);
    int got;
    CHECK_NAME(p, "127.0.0.1 any");
    name_of(p, &got);
    CHECK_EQ(got, port);
    unconnect(p);
    CHECK_NAME(p, "0.0.0.0 any");
    name_of(p, &got);
    CHECK_EQ(got, port);
    close(p);

    /* 0.0.0.0 as a destination is this host, reached from loopback. */
    int z = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in zero9 = v4("0.0.0.0", 9);
    CONNECT(z, zero9);
    CHECK_NAME(z, "127.0.0.1 any");
    close(z);

    /* A connected pair talks from the addresses getsockname shows. */
    int r = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    BIND(r, lo0);
    struct sockaddr_in ra;
    socklen_t rl = sizeof ra;
    CHECK_OK(getsockname(r, (struct sockaddr *)&ra, &rl));
    int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    CONNECT(s, ra);
    struct sockaddr_in sa, from;
    socklen_t sl = sizeof sa, fl = sizeof from;
    CHECK_OK(getsockname(s, (struct sockaddr *)&sa, &sl));
    CHECK_EQ(send(s, "x", 1, 0), 1);
    char c;
    CHECK_EQ(recvfrom(r, &c, 1, 0, (struct sockaddr *)&from, &fl), 1);
    CHECK_EQ(from.sin_addr.s_addr, sa.sin_addr.s_addr);
    CHECK_EQ(from.sin_port, sa.sin_port);
    close(r);
    close(s);
}

static void udp_v6(void) {
    int u = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 lo9 = v6("::1", 9);
    CONNECT(u, lo9);
    CHECK_NAME(u, "::1 any");
    unconnect(u);
    CHECK_NAME(u, ":: 0");
    close(u);

    /* A dual-stack socket connected to an IPv4 peer. */
    int d = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in6 mapped9 = v6("::ffff:127.0.0.1", 9);
    CONNECT(d, mapped9);
    CHECK_NAME(d, "::ffff:127.0.0.1 any");
    unconnect(d);
    CHECK_NAME(d, ":: 0");
    close(d);

    /* An IPv6 datagram socket takes an AF_INET peer too (as the v4-mapped
     * one), but not an AF_INET bind address; with IPV6_V6ONLY connect
     * says EAFNOSUPPORT and sendto ENETUNREACH. */
    int f = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    struct sockaddr_in plain9 = v4("127.0.0.1", 9);
    CHECK_ERR(bind(f, (struct sockaddr *)&plain9, sizeof plain9), EINVAL);
    CHECK_EQ(sendto(f, "x", 1, 0, (struct sockaddr *)&plain9, sizeof plain9), 1);
    CHECK_NAME(f, ":: any");
    CONNECT(f, plain9);
    CHECK_NAME(f, "::ffff:127.0.0.1 any");
    struct sockaddr_in6 peer;
    socklen_t plen = sizeof peer;
    CHECK_OK(getpeername(f, (struct sockaddr *)&peer, &plen));
    CHECK_EQ(plen, sizeof peer);
    CHECK_EQ(peer.sin6_family, AF_INET6);
    CHECK(IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr));
    CHECK_EQ(ntohs(peer.sin6_port), 9);
    CHECK_ERR(connect(f, (struct sockaddr *)&plain9, sizeof plain9 - 1), EINVAL);
    close(f);
    int o = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
    int on = 1;
    CHECK_OK(setsockopt(o, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
    CHECK_ERR(connect(o, (struct sockaddr *)&plain9, sizeof plain9), EAFNOSUPPORT);
    CHECK_ERR(sendto(o, "x", 1, 0, (struct sockaddr *)&plain9, sizeof plain9), ENETUNREACH);
    close(o);
}

/* A socket bound to an IPv6 address has no route to an IPv4 peer
 * (ENETUNREACH); one bound to a v4-mapped address none to an IPv6 peer
 * (EAFNOSUPPORT): connect (TCP and UDP) and sendto say so. */
static void family_mismatch(void) {
    struct sockaddr_in6 lo6 = v6("::1", 0), mapped = v6("::ffff:127.0.0.1", 0);
    struct sockaddr_in6 to_mapped = v6("::ffff:127.0.0.1", 9), to_lo6 = v6("::1", 9);
    for (int ty = 0; ty < 2; ty++) {
        int type = ty ? SOCK_DGRAM : SOCK_STREAM;
        int a = CHECK_OK(socket(AF_INET6, type, 0));
        BIND(a, lo6);
        CHECK_ERR(connect(a, (struct sockaddr *)&to_mapped, sizeof to_mapped), ENETUNREACH);
        if (ty)
            CHECK_ERR(sendto(a, "x", 1, 0, (struct sockaddr *)&to_mapped, sizeof to_mapped), ENETUNREACH);
        close(a);
        int b = CHECK_OK(socket(AF_INET6, type, 0));
        BIND(b, mapped);
        CHECK_ERR(connect(b, (struct sockaddr *)&to_lo6, sizeof to_lo6), EAFNOSUPPORT);
        if (ty)
            CHECK_ERR(sendto(b, "x", 1, 0, (struct sockaddr *)&to_lo6, sizeof to_lo6), EAFNOSUPPORT);
        close(b);
    }
}

static void tcp(void) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in lo0 = v4("127.0.0.1", 0);
    BIND(l, lo0);
    CHECK_OK(listen(l, 4));
    int port;
    name_of(l, &port);
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in to = v4("0.0.0.0", port);
    CONNECT(c, to);
    CHECK_NAME(c, "127.0.0.1 any");
    close(c);
    close(l);

    int l6 = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
    struct sockaddr_in6 lo6 = v6("::1", 0);
    BIND(l6, lo6);
    CHECK_OK(listen(l6, 4));
    name_of(l6, &port);
    int c6 = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
    struct sockaddr_in6 to6 = v6("::1", port);
    CONNECT(c6, to6);
    CHECK_NAME(c6, "::1 any");
    close(c6);
    close(l6);
}

int main(void) {
    udp_v4();
    udp_v6();
    family_mismatch();
    tcp();
    return 0;
}
