/* udp_lite_header.c — UDP-Lite sockets (IPPROTO_UDPLITE) and the IP
 * header fields a UDP sender sets, per socket or per datagram (sendmsg
 * control messages), as the receiver's IP_RECVTTL / IP_RECVTOS /
 * IPV6_RECVHOPLIMIT / IPV6_RECVTCLASS messages show them on loopback. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif
#define SOL_UDPLITE 136
#define UDPLITE_SEND_CSCOV 10
#define UDPLITE_RECV_CSCOV 11

static int bound(int family, int proto, struct sockaddr_storage *ss, socklen_t *len) {
    int s = CHECK_OK(socket(family, SOCK_DGRAM, proto));
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        *len = sizeof *a;
    }
    CHECK_OK(bind(s, (struct sockaddr *)ss, *len));
    CHECK_OK(getsockname(s, (struct sockaddr *)ss, len));
    return s;
}

static int getint(int s, int level, int name) {
    int v = -12345;
    socklen_t l = sizeof v;
    CHECK_OK(getsockopt(s, level, name, &v, &l));
    CHECK_EQ(l, sizeof v);
    return v;
}

static void setint(int s, int level, int name, int v) {
    CHECK_OK(setsockopt(s, level, name, &v, sizeof v));
}

/* Sends "hi" from `tx` to `to` with up to two int control messages
 * of `level` (type 0: none); returns sendmsg's result. */
static ssize_t send_with(int tx, struct sockaddr_storage *to, socklen_t tolen, int level, int t1, int v1, int t2,
                         int v2) {
    union {
        char buf[2 * CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {.iov_base = "hi", .iov_len = 2};
    struct msghdr m = {.msg_name = to, .msg_namelen = tolen, .msg_iov = &iov, .msg_iovlen = 1};
    if (t1) {
        m.msg_control = u.buf;
        m.msg_controllen = t2 ? sizeof u.buf : CMSG_SPACE(sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = level;
        c->cmsg_type = t1;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &v1, sizeof v1);
        if (t2) {
            c = CMSG_NXTHDR(&m, c);
            c->cmsg_level = level;
            c->cmsg_type = t2;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &v2, sizeof v2);
        }
    }
    return sendmsg(tx, &m, 0);
}

/* Receives one datagram on `rx` and finds the int (or, for IP_TOS, byte)
 * messages of `level`: *a of type `ta`, *b of type `tb` (-1 when absent). */
static void recv_header(int rx, int level, int ta, int *a, int tb, int *b) {
    char data[16], ctl[256];
    struct iovec iov = {.iov_base = data, .iov_len = sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    CHECK_EQ(recvmsg(rx, &m, 0), 2);
    *a = *b = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != level)
            continue;
        int v;
        if (c->cmsg_len == CMSG_LEN(1))
            v = *(unsigned char *)CMSG_DATA(c);
        else
            memcpy(&v, CMSG_DATA(c), sizeof v);
        if (c->cmsg_type == ta)
            *a = v;
        else if (c->cmsg_type == tb)
            *b = v;
    }
}

static void header_fields(int family, int proto) {
    struct sockaddr_storage ra, ta;
    socklen_t rl, tl;
    int rx = bound(family, proto, &ra, &rl);
    int tx = bound(family, proto, &ta, &tl);
    int v6 = family == AF_INET6;
    int level = v6 ? IPPROTO_IPV6 : IPPROTO_IP;
    int ttl = v6 ? IPV6_HOPLIMIT : IP_TTL, tos = v6 ? IPV6_TCLASS : IP_TOS;
    setint(rx, level, v6 ? IPV6_RECVHOPLIMIT : IP_RECVTTL, 1);
    setint(rx, level, v6 ? IPV6_RECVTCLASS : IP_RECVTOS, 1);
    int a, b;
    /* Defaults. */
    CHECK_EQ(send_with(tx, &ra, rl, 0, 0, 0, 0, 0), 2);
    recv_header(rx, level, ttl, &a, tos, &b);
    CHECK_EQ(a, 64);
    CHECK_EQ(b, 0);
    /* Per datagram. */
    CHECK_EQ(send_with(tx, &ra, rl, level, ttl, 2, tos, 0x20), 2);
    recv_header(rx, level, ttl, &a, tos, &b);
    CHECK_EQ(a, 2);
    CHECK_EQ(b, 0x20);
    /* Per socket, and a datagram's message overrides it. */
    setint(tx, level, v6 ? IPV6_UNICAST_HOPS : IP_TTL, 7);
    setint(tx, level, v6 ? IPV6_TCLASS : IP_TOS, 0x10);
    CHECK_EQ(send_with(tx, &ra, rl, 0, 0, 0, 0, 0), 2);
    recv_header(rx, level, ttl, &a, tos, &b);
    CHECK_EQ(a, 7);
    CHECK_EQ(b, 0x10);
    CHECK_EQ(send_with(tx, &ra, rl, level, ttl, 3, 0, 0), 2);
    recv_header(rx, level, ttl, &a, tos, &b);
    CHECK_EQ(a, 3);
    CHECK_EQ(b, 0x10);
    if (v6) {
        /* A hop limit of -1 is the socket's; a traffic class of -1 is
         * taken as it is (its low byte), as Linux's ipcm6 keeps it. */
        CHECK_EQ(send_with(tx, &ra, rl, level, IPV6_HOPLIMIT, -1, IPV6_TCLASS, -1), 2);
        recv_header(rx, level, ttl, &a, tos, &b);
        CHECK_EQ(a, 7);
        CHECK_EQ(b, 0xff);
        CHECK_ERR(send_with(tx, &ra, rl, level, IPV6_HOPLIMIT, 256, 0, 0), EINVAL);
        CHECK_ERR(send_with(tx, &ra, rl, level, IPV6_TCLASS, -2, 0, 0), EINVAL);
    } else {
        CHECK_ERR(send_with(tx, &ra, rl, level, IP_TTL, 0, 0, 0), EINVAL);
        CHECK_ERR(send_with(tx, &ra, rl, level, IP_TTL, 256, 0, 0), EINVAL);
        CHECK_ERR(send_with(tx, &ra, rl, level, IP_TOS, 256, 0, 0), EINVAL);
    }
    /* A message of the wrong size (an int and a byte) is refused. */
    {
        union {
            char buf[CMSG_SPACE(sizeof(int) + 1)];
            struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof u);
        struct iovec iov = {.iov_base = "hi", .iov_len = 2};
        struct msghdr m = {.msg_name = &ra, .msg_namelen = rl, .msg_iov = &iov, .msg_iovlen = 1,
                           .msg_control = u.buf, .msg_controllen = sizeof u.buf};
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = level;
        c->cmsg_type = ttl;
        c->cmsg_len = CMSG_LEN(sizeof(int) + 1);
        CHECK_ERR(sendmsg(tx, &m, 0), EINVAL);
    }
    close(rx);
    close(tx);
}

static void udplite(int family) {
    int s = CHECK_OK(socket(family, SOCK_DGRAM, IPPROTO_UDPLITE));
    CHECK_EQ(getint(s, SOL_SOCKET, SO_PROTOCOL), IPPROTO_UDPLITE);
    CHECK_EQ(getint(s, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
    CHECK_EQ(getint(s, SOL_UDPLITE, UDPLITE_SEND_CSCOV), 0);
    CHECK_EQ(getint(s, SOL_UDPLITE, UDPLITE_RECV_CSCOV), 0);
    int cases[][2] = {{0, 0}, {1, 8}, {7, 8}, {8, 8}, {20, 20}, {-1, 8}, {65535, 65535}, {65536, 65535}};
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setint(s, SOL_UDPLITE, UDPLITE_SEND_CSCOV, cases[i][0]);
        CHECK_EQ(getint(s, SOL_UDPLITE, UDPLITE_SEND_CSCOV), cases[i][1]);
        setint(s, SOL_UDPLITE, UDPLITE_RECV_CSCOV, cases[i][0]);
        CHECK_EQ(getint(s, SOL_UDPLITE, UDPLITE_RECV_CSCOV), cases[i][1]);
    }
    /* SOL_UDP reaches the same options on a UDP-Lite socket. */
    setint(s, IPPROTO_UDP, UDPLITE_SEND_CSCOV, 12);
    CHECK_EQ(getint(s, SOL_UDPLITE, UDPLITE_SEND_CSCOV), 12);
    short small = 9;
    CHECK_ERR(setsockopt(s, SOL_UDPLITE, UDPLITE_SEND_CSCOV, &small, sizeof small), EINVAL);
    char one;
    socklen_t l = 1;
    CHECK_OK(getsockopt(s, SOL_UDPLITE, UDPLITE_SEND_CSCOV, &one, &l));
    CHECK_EQ(l, 1);
    CHECK_EQ(one, 12);
    /* Not on a UDP socket. */
    int u = CHECK_OK(socket(family, SOCK_DGRAM, IPPROTO_UDP));
    int v = 8;
    CHECK_ERR(setsockopt(u, SOL_UDPLITE, UDPLITE_SEND_CSCOV, &v, sizeof v), ENOPROTOOPT);
    CHECK_ERR(setsockopt(u, IPPROTO_UDP, UDPLITE_SEND_CSCOV, &v, sizeof v), ENOPROTOOPT);
    l = sizeof v;
    /* Read back (0) on a UDP socket at either level, as Linux's
     * udp_lib_getsockopt does. */
    CHECK_EQ(getint(u, SOL_UDPLITE, UDPLITE_RECV_CSCOV), 0);
    CHECK_EQ(getint(u, IPPROTO_UDP, UDPLITE_SEND_CSCOV), 0);
    close(u);
    close(s);
    /* No UDP-Lite stream socket. */
    CHECK_ERR(socket(family, SOCK_STREAM, IPPROTO_UDPLITE), EPROTONOSUPPORT);

    /* A loopback exchange. */
    struct sockaddr_storage ra, ta, from;
    socklen_t rl, tl, fl = sizeof from;
    int rx = bound(family, IPPROTO_UDPLITE, &ra, &rl);
    int tx = bound(family, IPPROTO_UDPLITE, &ta, &tl);
    CHECK_EQ(sendto(tx, "lite", 4, 0, (struct sockaddr *)&ra, rl), 4);
    char buf[8];
    CHECK_EQ(recvfrom(rx, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 4);
    CHECK_MEM(buf, "lite", 4);
    CHECK_EQ(fl, tl);
    CHECK_MEM(&from, &ta, tl);
    CHECK_OK(connect(rx, (struct sockaddr *)&ta, tl));
    CHECK_EQ(send(rx, "back", 4, 0), 4);
    CHECK_EQ(recv(tx, buf, sizeof buf, 0), 4);
    CHECK_MEM(buf, "back", 4);

    /* Its own port space: a UDP socket binds the same port, and neither
     * hears the other's datagrams. */
    struct sockaddr_storage ua;
    socklen_t ul = rl;
    memcpy(&ua, &ra, rl);
    int us = CHECK_OK(socket(family, SOCK_DGRAM, 0));
    CHECK_OK(bind(us, (struct sockaddr *)&ua, ul));
    int other = CHECK_OK(socket(family, SOCK_DGRAM, IPPROTO_UDPLITE));
    CHECK_ERR(bind(other, (struct sockaddr *)&ua, ul), EADDRINUSE);
    close(other);
    int utx = CHECK_OK(socket(family, SOCK_DGRAM, 0));
    CHECK_EQ(sendto(utx, "udp", 3, 0, (struct sockaddr *)&ua, ul), 3);
    CHECK_EQ(recv(us, buf, sizeof buf, 0), 3);
    CHECK_ERR(recv(rx, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    CHECK_EQ(sendto(tx, "x", 1, 0, (struct sockaddr *)&ra, rl), 1);
    CHECK_EQ(recv(rx, buf, sizeof buf, 0), 1);
    CHECK_ERR(recv(us, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
    close(utx);
    close(us);
    close(rx);
    close(tx);
}

int main(void) {
    udplite(AF_INET);
    udplite(AF_INET6);
    header_fields(AF_INET, 0);
    header_fields(AF_INET6, 0);
    header_fields(AF_INET, IPPROTO_UDPLITE);
    header_fields(AF_INET6, IPPROTO_UDPLITE);
    puts("udp_lite_header: ok");
    return 0;
}
