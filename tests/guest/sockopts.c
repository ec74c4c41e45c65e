/* sockopts.c — the SOL_SOCKET options, as Linux's sk_setsockopt and
 * sk_getsockopt serve them, on every family husk has: Unix stream,
 * datagram and seqpacket, TCP and UDP over IPv4 and IPv6, and netlink.
 * Each case is one table row run against a fresh socket of each family:
 * the value read back after a set (doubling and clamping of the buffer
 * sizes, flags read back as 0/1, SO_LINGER keeping its time when turned
 * off), argument checks (short optlen, bad pointers, EDOM timeouts,
 * ENOPROTOOPT only where Linux has it), getsockopt's truncation to the
 * caller's length, and the privilege each option needs (CAP_NET_ADMIN for
 * SO_MARK, SO_*BUFFORCE, SO_PRIORITY above 6); then the IPPROTO_TCP options
 * (ranges, rounding, TCP_INFO's state, TCP_CONGESTION), SO_LINGER's
 * reset on close, and the control messages UDP's receive options ask for. */
#include "check.h"
#include <linux/capability.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>

#ifndef SO_RCVTIMEO_NEW
#define SO_RCVTIMEO_NEW 66
#endif
#ifndef SO_TIMESTAMPING
#define SO_TIMESTAMPING 37
#endif
#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif
#ifndef SO_INCOMING_CPU
#define SO_INCOMING_CPU 49
#endif
#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL 46
#endif
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* A pointer no mapping covers. */
#define BAD ((void *)8)

struct fam {
    const char *name;
    int domain, type, protocol;
    int stream;   /* connection-oriented: SO_ACCEPTCONN after listen */
    int inet;     /* AF_INET or AF_INET6 */
};

static const struct fam fams[] = {
    {"unix stream", AF_UNIX, SOCK_STREAM, 0, 1, 0},
    {"unix dgram", AF_UNIX, SOCK_DGRAM, 0, 0, 0},
    {"unix seqpacket", AF_UNIX, SOCK_SEQPACKET, 0, 1, 0},
    {"tcp4", AF_INET, SOCK_STREAM, IPPROTO_TCP, 1, 1},
    {"udp4", AF_INET, SOCK_DGRAM, IPPROTO_UDP, 0, 1},
    {"tcp6", AF_INET6, SOCK_STREAM, IPPROTO_TCP, 1, 1},
    {"udp6", AF_INET6, SOCK_DGRAM, IPPROTO_UDP, 0, 1},
    {"netlink", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, 0, 0},
};

static const struct fam *cur;

#define FAM_FAIL(...)                                                         \
    do {                                                                      \
        fprintf(stderr, "[%s] ", cur->name);                                  \
        FAILF(__VA_ARGS__);                                                   \
    } while (0)

static int new_socket(void) {
    int s = socket(cur->domain, cur->type, cur->protocol);
    if (s < 0)
        FAM_FAIL("socket: %s", strerror(errno));
    return s;
}

static int capable(int cap) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    CHECK_OK(syscall(SYS_capget, &h, d));
    return (d[cap / 32].effective >> (cap % 32)) & 1;
}

static long sysctl_long(const char *path) {
    char buf[64];
    if (read_file(path, buf, sizeof buf) <= 0)
        FAILF("cannot read %s", path);
    return atol(buf);
}

static int get_int(int s, int opt) {
    int v = -12345;
    socklen_t len = sizeof v;
    if (getsockopt(s, SOL_SOCKET, opt, &v, &len) != 0)
        FAM_FAIL("getsockopt(%d): %s", opt, strerror(errno));
    if (len != sizeof v)
        FAM_FAIL("getsockopt(%d) length %u", opt, len);
    return v;
}

static int set_int(int s, int opt, int v) {
    return setsockopt(s, SOL_SOCKET, opt, &v, sizeof v);
}

#define EXPECT_INT(s, opt, want)                                              \
    do {                                                                      \
        int g_ = get_int(s, opt), w_ = (want);                                \
        if (g_ != w_)                                                         \
            FAM_FAIL("%s reads %d, want %d", #opt, g_, w_);                   \
    } while (0)

#define EXPECT_ERR(expr, E)                                                   \
    do {                                                                      \
        errno = 0;                                                            \
        int r_ = (expr);                                                      \
        if (r_ != -1 || errno != (E))                                         \
            FAM_FAIL("%s: got %d errno %s, want %s", #expr, r_,               \
                     strerror(errno), strerror(E));                           \
    } while (0)

#define EXPECT_OK(expr)                                                       \
    do {                                                                      \
        if ((expr) != 0)                                                      \
            FAM_FAIL("%s: %s", #expr, strerror(errno));                       \
    } while (0)

/* SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ERROR, SO_ACCEPTCONN: read-only. */
static void identity(void) {
    int s = new_socket();
    EXPECT_INT(s, SO_TYPE, cur->type);
    EXPECT_INT(s, SO_DOMAIN, cur->domain);
    EXPECT_INT(s, SO_PROTOCOL, cur->protocol);
    EXPECT_INT(s, SO_ERROR, 0);
    EXPECT_INT(s, SO_ACCEPTCONN, 0);
    int ro[] = {SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ERROR, SO_ACCEPTCONN, SO_PEERCRED, SO_COOKIE, SO_SNDLOWAT};
    for (unsigned i = 0; i < sizeof ro / sizeof ro[0]; i++)
        EXPECT_ERR(set_int(s, ro[i], 1), ENOPROTOOPT);
    /* getsockopt: truncation to the caller's length, EINVAL for a
     * negative one, EFAULT for bad pointers. */
    unsigned char b[4] = {0xee, 0xee, 0xee, 0xee};
    socklen_t len = 2;
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_DOMAIN, b, &len));
    if (len != 2 || b[0] != (cur->domain & 0xff) || b[1] != 0 || b[2] != 0xee)
        FAM_FAIL("2-byte SO_DOMAIN: len %u bytes %x %x %x", len, b[0], b[1], b[2]);
    len = (socklen_t)-1;
    EXPECT_ERR(getsockopt(s, SOL_SOCKET, SO_TYPE, b, &len), EINVAL);
    len = 4;
    EXPECT_ERR(getsockopt(s, SOL_SOCKET, SO_TYPE, BAD, &len), EFAULT);
    EXPECT_ERR(getsockopt(s, SOL_SOCKET, SO_TYPE, b, BAD), EFAULT);
    /* setsockopt: a short value is EINVAL, a bad pointer EFAULT. */
    int one = 1;
    EXPECT_ERR(setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, 2), EINVAL);
    EXPECT_ERR(setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, BAD, 4), EFAULT);
    EXPECT_ERR(set_int(s, 9999, 1), ENOPROTOOPT);
    len = 4;
    EXPECT_ERR(getsockopt(s, SOL_SOCKET, 9999, b, &len), ENOPROTOOPT);
    EXPECT_INT(s, SO_SNDLOWAT, 1);
    close(s);
}

/* Boolean options read back as 0 or 1. */
static void flags(void) {
    int s = new_socket();
    int opts[] = {SO_KEEPALIVE, SO_OOBINLINE, SO_BROADCAST, SO_DONTROUTE, SO_REUSEADDR,
                  SO_TIMESTAMP, SO_TIMESTAMPNS};
    for (unsigned i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        EXPECT_INT(s, opts[i], 0);
        EXPECT_OK(set_int(s, opts[i], 7));
        EXPECT_INT(s, opts[i], 1);
        EXPECT_OK(set_int(s, opts[i], 0));
        EXPECT_INT(s, opts[i], 0);
    }
    /* SO_TIMESTAMP and SO_TIMESTAMPNS are one flag in two forms. */
    EXPECT_OK(set_int(s, SO_TIMESTAMPNS, 1));
    EXPECT_INT(s, SO_TIMESTAMP, 0);
    EXPECT_OK(set_int(s, SO_TIMESTAMP, 1));
    EXPECT_INT(s, SO_TIMESTAMPNS, 0);
    /* SO_PASSCRED is for Unix and netlink sockets only (Linux 6.16). */
    if (cur->inet) {
        EXPECT_ERR(set_int(s, SO_PASSCRED, 1), EOPNOTSUPP);
        int v;
        socklen_t len = sizeof v;
        EXPECT_ERR(getsockopt(s, SOL_SOCKET, SO_PASSCRED, &v, &len), EOPNOTSUPP);
    } else {
        EXPECT_OK(set_int(s, SO_PASSCRED, 5));
        EXPECT_INT(s, SO_PASSCRED, 1);
    }
    /* SO_REUSEPORT is for IP sockets only (Linux 6.9 and later). */
    if (cur->inet) {
        EXPECT_OK(set_int(s, SO_REUSEPORT, 3));
        EXPECT_INT(s, SO_REUSEPORT, 1);
    } else {
        EXPECT_ERR(set_int(s, SO_REUSEPORT, 1), EOPNOTSUPP);
        EXPECT_OK(set_int(s, SO_REUSEPORT, 0));
    }
    close(s);
}

static void linger(void) {
    int s = new_socket();
    struct linger l = {-1, -1};
    socklen_t len = sizeof l;
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_LINGER, &l, &len));
    if (len != sizeof l || l.l_onoff != 0 || l.l_linger != 0)
        FAM_FAIL("default linger %d %d len %u", l.l_onoff, l.l_linger, len);
    l.l_onoff = 1;
    l.l_linger = 5;
    EXPECT_ERR(setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(int)), EINVAL);
    EXPECT_ERR(setsockopt(s, SOL_SOCKET, SO_LINGER, BAD, sizeof l), EFAULT);
    EXPECT_OK(setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l));
    struct linger got;
    len = sizeof got;
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_LINGER, &got, &len));
    if (got.l_onoff != 1 || got.l_linger != 5)
        FAM_FAIL("linger %d %d", got.l_onoff, got.l_linger);
    /* Turning lingering off keeps the time. */
    l.l_onoff = 0;
    l.l_linger = 9;
    EXPECT_OK(setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l));
    len = sizeof got;
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_LINGER, &got, &len));
    if (got.l_onoff != 0 || got.l_linger != 5)
        FAM_FAIL("linger off %d %d", got.l_onoff, got.l_linger);
    /* Any nonzero l_onoff turns it on; truncated reads as the rest. */
    l.l_onoff = 42;
    l.l_linger = 0;
    EXPECT_OK(setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l));
    len = sizeof(int);
    got.l_onoff = got.l_linger = -1;
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_LINGER, &got, &len));
    if (len != sizeof(int) || got.l_onoff != 1 || got.l_linger != -1)
        FAM_FAIL("short linger read %d %d len %u", got.l_onoff, got.l_linger, len);
    close(s);
}

/* Linux stores twice the value asked for, at least SOCK_MIN_*BUF and at
 * most twice net.core.{w,r}mem_max unless forced. */
static void buffers(void) {
    long wmax = sysctl_long("/proc/sys/net/core/wmem_max");
    long rmax = sysctl_long("/proc/sys/net/core/rmem_max");
    int s = new_socket();
    CHECK(get_int(s, SO_SNDBUF) > 0);
    CHECK(get_int(s, SO_RCVBUF) > 0);
    EXPECT_OK(set_int(s, SO_SNDBUF, 10000));
    EXPECT_INT(s, SO_SNDBUF, 20000);
    EXPECT_OK(set_int(s, SO_RCVBUF, 12345));
    EXPECT_INT(s, SO_RCVBUF, 24690);
    EXPECT_OK(set_int(s, SO_SNDBUF, 1));
    EXPECT_INT(s, SO_SNDBUF, 4608);
    EXPECT_OK(set_int(s, SO_RCVBUF, 0));
    EXPECT_INT(s, SO_RCVBUF, 2304);
    EXPECT_OK(set_int(s, SO_SNDBUF, 0x7fffffff));
    EXPECT_INT(s, SO_SNDBUF, (int)(2 * wmax));
    /* A negative size is a huge unsigned one. */
    EXPECT_OK(set_int(s, SO_RCVBUF, -1));
    EXPECT_INT(s, SO_RCVBUF, (int)(2 * rmax));
    if (capable(CAP_NET_ADMIN)) {
        EXPECT_OK(set_int(s, SO_SNDBUFFORCE, (int)wmax + 4096));
        EXPECT_INT(s, SO_SNDBUF, (int)(2 * wmax + 8192));
        EXPECT_OK(set_int(s, SO_RCVBUFFORCE, -5));
        EXPECT_INT(s, SO_RCVBUF, 2304);
    } else {
        EXPECT_ERR(set_int(s, SO_SNDBUFFORCE, 4096), EPERM);
        EXPECT_ERR(set_int(s, SO_RCVBUFFORCE, 4096), EPERM);
    }
    close(s);
}

static void timeouts(void) {
    int s = new_socket();
    int opts[] = {SO_RCVTIMEO, SO_SNDTIMEO, SO_RCVTIMEO_NEW};
    for (unsigned i = 0; i < 3; i++) {
        struct timeval tv = {1, 1000000};
        EXPECT_ERR(setsockopt(s, SOL_SOCKET, opts[i], &tv, sizeof tv), EDOM);
        tv.tv_usec = -1;
        EXPECT_ERR(setsockopt(s, SOL_SOCKET, opts[i], &tv, sizeof tv), EDOM);
        tv.tv_usec = 500000;
        EXPECT_ERR(setsockopt(s, SOL_SOCKET, opts[i], &tv, sizeof tv - 1), EINVAL);
        EXPECT_ERR(setsockopt(s, SOL_SOCKET, opts[i], BAD, sizeof tv), EFAULT);
        EXPECT_OK(setsockopt(s, SOL_SOCKET, opts[i], &tv, sizeof tv));
        struct timeval got = {-1, -1};
        socklen_t len = sizeof got;
        EXPECT_OK(getsockopt(s, SOL_SOCKET, opts[i], &got, &len));
        if (len != sizeof got || got.tv_sec != 1 || got.tv_usec != 500000)
            FAM_FAIL("timeout %d reads %ld.%06ld", opts[i], (long)got.tv_sec, (long)got.tv_usec);
        /* A negative time is no timeout at all. */
        tv.tv_sec = -3;
        tv.tv_usec = 0;
        EXPECT_OK(setsockopt(s, SOL_SOCKET, opts[i], &tv, sizeof tv));
        len = sizeof got;
        EXPECT_OK(getsockopt(s, SOL_SOCKET, opts[i], &got, &len));
        if (got.tv_sec != 0 || got.tv_usec != 0)
            FAM_FAIL("negative timeout reads %ld.%06ld", (long)got.tv_sec, (long)got.tv_usec);
    }
    close(s);
}

static void numbers(void) {
    int admin = capable(CAP_NET_ADMIN);
    int s = new_socket();
    /* SO_PRIORITY: 0..6 for anyone, the rest with CAP_NET_ADMIN. */
    EXPECT_INT(s, SO_PRIORITY, 0);
    EXPECT_OK(set_int(s, SO_PRIORITY, 6));
    EXPECT_INT(s, SO_PRIORITY, 6);
    if (admin) {
        EXPECT_OK(set_int(s, SO_PRIORITY, 7));
        EXPECT_INT(s, SO_PRIORITY, 7);
        EXPECT_OK(set_int(s, SO_MARK, 0x1234));
        EXPECT_INT(s, SO_MARK, 0x1234);
    } else {
        EXPECT_ERR(set_int(s, SO_PRIORITY, 7), EPERM);
        EXPECT_ERR(set_int(s, SO_MARK, 1), EPERM);
    }
    /* SO_RCVLOWAT: 0 means 1. */
    EXPECT_INT(s, SO_RCVLOWAT, 1);
    EXPECT_OK(set_int(s, SO_RCVLOWAT, 10));
    EXPECT_INT(s, SO_RCVLOWAT, 10);
    EXPECT_OK(set_int(s, SO_RCVLOWAT, 0));
    EXPECT_INT(s, SO_RCVLOWAT, 1);
    if (!cur->inet || cur->type != SOCK_STREAM) {
        EXPECT_OK(set_int(s, SO_RCVLOWAT, -1));
        EXPECT_INT(s, SO_RCVLOWAT, 0x7fffffff);
    }
    /* SO_BUSY_POLL: never negative. */
    EXPECT_INT(s, SO_BUSY_POLL, 0);
    EXPECT_ERR(set_int(s, SO_BUSY_POLL, -1), EINVAL);
    if (admin) {
        EXPECT_OK(set_int(s, SO_BUSY_POLL, 50));
        EXPECT_INT(s, SO_BUSY_POLL, 50);
    }
    /* SO_INCOMING_CPU: -1 until set or traffic arrives. */
    EXPECT_INT(s, SO_INCOMING_CPU, -1);
    EXPECT_OK(set_int(s, SO_INCOMING_CPU, 0));
    EXPECT_INT(s, SO_INCOMING_CPU, 0);
    /* SO_ZEROCOPY: TCP and UDP only; 0 or 1. */
    EXPECT_INT(s, SO_ZEROCOPY, 0);
    if (cur->inet) {
        EXPECT_ERR(set_int(s, SO_ZEROCOPY, 2), EINVAL);
        EXPECT_OK(set_int(s, SO_ZEROCOPY, 1));
        EXPECT_INT(s, SO_ZEROCOPY, 1);
    } else {
        EXPECT_ERR(set_int(s, SO_ZEROCOPY, 1), EOPNOTSUPP);
    }
    /* SO_TIMESTAMPING: known flags only, read back as set. */
    int ts = 0x18; /* SOF_TIMESTAMPING_RX_SOFTWARE | SOFTWARE */
    EXPECT_OK(set_int(s, SO_TIMESTAMPING, ts));
    EXPECT_INT(s, SO_TIMESTAMPING, ts);
    EXPECT_ERR(set_int(s, SO_TIMESTAMPING, (int)0x80000000u), EINVAL);
    close(s);
}

static void cookie(void) {
    int a = new_socket(), b = new_socket();
    uint64_t ca = 0, ca2 = 0, cb = 0;
    socklen_t len = sizeof ca;
    EXPECT_OK(getsockopt(a, SOL_SOCKET, SO_COOKIE, &ca, &len));
    CHECK_EQ(len, 8);
    len = sizeof ca2;
    EXPECT_OK(getsockopt(a, SOL_SOCKET, SO_COOKIE, &ca2, &len));
    len = sizeof cb;
    EXPECT_OK(getsockopt(b, SOL_SOCKET, SO_COOKIE, &cb, &len));
    if (ca == 0 || ca != ca2 || ca == cb)
        FAM_FAIL("cookies %llu %llu %llu", (unsigned long long)ca, (unsigned long long)ca2,
                 (unsigned long long)cb);
    len = 4;
    EXPECT_ERR(getsockopt(a, SOL_SOCKET, SO_COOKIE, &ca, &len), EINVAL);
    close(a);
    close(b);
}

/* SO_BINDTODEVICE: a known interface name, "" to unbind, else ENODEV. */
static void bindtodevice(void) {
    int s = new_socket();
    char name[IFNAMSIZ] = "x";
    socklen_t len = sizeof name;
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, name, &len));
    CHECK_EQ(len, 0);
    EXPECT_ERR(setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, "nosuchdev0", 11), ENODEV);
    EXPECT_OK(setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3));
    len = sizeof name;
    memset(name, 'x', sizeof name);
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, name, &len));
    CHECK_EQ(len, 3);
    CHECK_STR(name, "lo");
    len = 3;
    EXPECT_ERR(getsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, name, &len), EINVAL);
    /* The name need not be terminated: the length bounds it. */
    EXPECT_OK(setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, "loXX", 2));
    EXPECT_OK(setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, "", 1));
    len = sizeof name;
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, name, &len));
    CHECK_EQ(len, 0);
    EXPECT_ERR(setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, BAD, 3), EFAULT);
    close(s);
}

/* Peer credentials: a Unix pair reports the peer, others nobody. */
static void peer(void) {
    int s = new_socket();
    struct ucred c = {1, 2, 3};
    socklen_t len = sizeof c;
    if (cur->domain == AF_UNIX) {
        close(s);
        return;
    }
    EXPECT_OK(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &c, &len));
    if (len != sizeof c || c.pid != 0 || c.uid != (uid_t)-1 || c.gid != (gid_t)-1)
        FAM_FAIL("peercred %d %d %d", c.pid, c.uid, c.gid);
    gid_t g[4];
    len = sizeof g;
    EXPECT_ERR(getsockopt(s, SOL_SOCKET, SO_PEERGROUPS, g, &len), ENODATA);
    char sec[64];
    len = sizeof sec;
    EXPECT_ERR(getsockopt(s, SOL_SOCKET, SO_PEERSEC, sec, &len), ENOPROTOOPT);
    close(s);
}

static void unix_peer(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    struct ucred c;
    socklen_t len = sizeof c;
    CHECK_OK(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &c, &len));
    CHECK_EQ(c.pid, getpid());
    CHECK_EQ(c.uid, geteuid());
    CHECK_EQ(c.gid, getegid());
    char sec[64];
    len = sizeof sec;
    CHECK_ERR(getsockopt(sv[0], SOL_SOCKET, SO_PEERSEC, sec, &len), ENOPROTOOPT);
    close(sv[0]);
    close(sv[1]);
}

static void acceptconn(void) {
    if (!cur->stream)
        return;
    int s = new_socket();
    if (cur->domain == AF_UNIX) {
        struct sockaddr_un a = {AF_UNIX, ""};
        CHECK_OK(bind(s, (struct sockaddr *)&a, sizeof(sa_family_t)));
    }
    CHECK_OK(listen(s, 4));
    EXPECT_INT(s, SO_ACCEPTCONN, 1);
    close(s);
}

/* A connected TCP pair over loopback of the current family. */
static void tcp_pair(int *c, int *srv) {
    int l = new_socket();
    struct sockaddr_storage a = {0};
    socklen_t alen;
    if (cur->domain == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&a;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        alen = sizeof *in;
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a;
        in6->sin6_family = AF_INET6;
        in6->sin6_addr = in6addr_loopback;
        alen = sizeof *in6;
    }
    CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &alen));
    CHECK_OK(listen(l, 4));
    *c = new_socket();
    CHECK_OK(connect(*c, (struct sockaddr *)&a, alen));
    *srv = CHECK_OK(accept(l, NULL, NULL));
    close(l);
}

static int tcp_get(int s, int opt) {
    int v = -12345;
    socklen_t len = sizeof v;
    if (getsockopt(s, IPPROTO_TCP, opt, &v, &len) != 0)
        FAM_FAIL("getsockopt(TCP %d): %s", opt, strerror(errno));
    return v;
}

static int tcp_set(int s, int opt, int v) {
    return setsockopt(s, IPPROTO_TCP, opt, &v, sizeof v);
}

#define EXPECT_TCP(s, opt, want)                                              \
    do {                                                                      \
        int g_ = tcp_get(s, opt), w_ = (want);                                \
        if (g_ != w_)                                                         \
            FAM_FAIL("%s reads %d, want %d", #opt, g_, w_);                   \
    } while (0)

/* IPPROTO_TCP options: ranges, rounding and defaults as Linux. */
static void tcp_options(void) {
    if (!cur->inet || cur->type != SOCK_STREAM) {
        if (cur->inet) {
            int s = new_socket();
            EXPECT_ERR(tcp_set(s, TCP_NODELAY, 1), ENOPROTOOPT);
            close(s);
        }
        return;
    }
    int s = new_socket();
    int bools[] = {TCP_NODELAY, TCP_CORK};
    for (unsigned i = 0; i < 2; i++) {
        EXPECT_TCP(s, bools[i], 0);
        EXPECT_OK(tcp_set(s, bools[i], 5));
        EXPECT_TCP(s, bools[i], 1);
        EXPECT_OK(tcp_set(s, bools[i], 0));
    }
    int one = 1;
    EXPECT_ERR(setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, 2), EINVAL);
    EXPECT_TCP(s, TCP_KEEPIDLE, 7200);
    EXPECT_TCP(s, TCP_KEEPINTVL, 75);
    EXPECT_TCP(s, TCP_KEEPCNT, 9);
    EXPECT_ERR(tcp_set(s, TCP_KEEPIDLE, 0), EINVAL);
    EXPECT_ERR(tcp_set(s, TCP_KEEPIDLE, 32768), EINVAL);
    EXPECT_ERR(tcp_set(s, TCP_KEEPINTVL, 0), EINVAL);
    EXPECT_ERR(tcp_set(s, TCP_KEEPCNT, 128), EINVAL);
    EXPECT_OK(tcp_set(s, TCP_KEEPIDLE, 30));
    EXPECT_TCP(s, TCP_KEEPIDLE, 30);
    EXPECT_ERR(tcp_set(s, TCP_USER_TIMEOUT, -1), EINVAL);
    EXPECT_OK(tcp_set(s, TCP_USER_TIMEOUT, 1500));
    EXPECT_TCP(s, TCP_USER_TIMEOUT, 1500);
    /* TCP_MAXSEG: 0 or 88..32767; an unconnected socket reports it. */
    EXPECT_TCP(s, TCP_MAXSEG, 536);
    EXPECT_ERR(tcp_set(s, TCP_MAXSEG, 87), EINVAL);
    EXPECT_ERR(tcp_set(s, TCP_MAXSEG, 32768), EINVAL);
    EXPECT_OK(tcp_set(s, TCP_MAXSEG, 1000));
    EXPECT_TCP(s, TCP_MAXSEG, 1000);
    /* TCP_DEFER_ACCEPT: seconds rounded up to a retransmission count. */
    EXPECT_TCP(s, TCP_DEFER_ACCEPT, 0);
    EXPECT_OK(tcp_set(s, TCP_DEFER_ACCEPT, 5));
    EXPECT_TCP(s, TCP_DEFER_ACCEPT, 7);
    EXPECT_OK(tcp_set(s, TCP_DEFER_ACCEPT, -4));
    EXPECT_TCP(s, TCP_DEFER_ACCEPT, 0);
    /* TCP_LINGER2: the FIN timeout, 60 s by default, at most 120. */
    EXPECT_TCP(s, TCP_LINGER2, 60);
    EXPECT_OK(tcp_set(s, TCP_LINGER2, 200));
    EXPECT_TCP(s, TCP_LINGER2, 120);
    EXPECT_OK(tcp_set(s, TCP_LINGER2, -5));
    EXPECT_TCP(s, TCP_LINGER2, -1);
    EXPECT_OK(tcp_set(s, TCP_LINGER2, 0));
    EXPECT_TCP(s, TCP_LINGER2, 60);
    /* TCP_WINDOW_CLAMP: at least half SOCK_MIN_RCVBUF. */
    EXPECT_TCP(s, TCP_WINDOW_CLAMP, 0);
    EXPECT_OK(tcp_set(s, TCP_WINDOW_CLAMP, 100));
    EXPECT_TCP(s, TCP_WINDOW_CLAMP, 1152);
    EXPECT_OK(tcp_set(s, TCP_WINDOW_CLAMP, 0));
    EXPECT_TCP(s, TCP_NOTSENT_LOWAT, 0);
    EXPECT_OK(tcp_set(s, TCP_NOTSENT_LOWAT, 4096));
    EXPECT_TCP(s, TCP_NOTSENT_LOWAT, 4096);
    EXPECT_ERR(tcp_set(s, TCP_INQ, 2), EINVAL);
    EXPECT_OK(tcp_set(s, TCP_INQ, 1));
    EXPECT_TCP(s, TCP_INQ, 1);
    EXPECT_TCP(s, TCP_SYNCNT, 6);
    EXPECT_ERR(tcp_set(s, TCP_SYNCNT, 0), EINVAL);
    EXPECT_ERR(tcp_set(s, TCP_SYNCNT, 128), EINVAL);
    EXPECT_OK(tcp_set(s, TCP_SYNCNT, 3));
    EXPECT_TCP(s, TCP_SYNCNT, 3);
    EXPECT_ERR(tcp_set(s, 9999, 1), ENOPROTOOPT);
    /* TCP_CONGESTION: a known algorithm by name, else ENOENT. */
    char ca[16];
    socklen_t len = sizeof ca;
    memset(ca, 'x', sizeof ca);
    EXPECT_OK(getsockopt(s, IPPROTO_TCP, TCP_CONGESTION, ca, &len));
    CHECK_EQ(len, 16);
    CHECK(strcmp(ca, "cubic") == 0 || strcmp(ca, "reno") == 0 || strcmp(ca, "bbr") == 0);
    EXPECT_OK(setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "reno", 4));
    len = sizeof ca;
    EXPECT_OK(getsockopt(s, IPPROTO_TCP, TCP_CONGESTION, ca, &len));
    CHECK_STR(ca, "reno");
    EXPECT_ERR(setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "nosuchalgo", 10), ENOENT);
    EXPECT_ERR(setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "reno", 0), EINVAL);
    /* TCP_INFO: the state, cut to the caller's length. */
    struct tcp_info ti;
    len = sizeof ti;
    EXPECT_OK(getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &len));
    CHECK_EQ(len, sizeof ti);
    CHECK_EQ(ti.tcpi_state, TCP_CLOSE);
    unsigned char st = 0xee;
    len = 1;
    EXPECT_OK(getsockopt(s, IPPROTO_TCP, TCP_INFO, &st, &len));
    CHECK_EQ(len, 1);
    CHECK_EQ(st, TCP_CLOSE);
    CHECK_OK(listen(s, 1));
    len = sizeof ti;
    EXPECT_OK(getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &len));
    CHECK_EQ(ti.tcpi_state, TCP_LISTEN);
    close(s);

    int c, srv;
    tcp_pair(&c, &srv);
    len = sizeof ti;
    EXPECT_OK(getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &len));
    CHECK_EQ(ti.tcpi_state, TCP_ESTABLISHED);
    CHECK(ti.tcpi_snd_mss > 0);
    /* SO_LINGER with a zero time: close resets the connection. */
    struct linger l = {1, 0};
    CHECK_OK(setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l));
    CHECK_OK(close(c));
    char b;
    CHECK_ERR(recv(srv, &b, 1, 0), ECONNRESET);
    close(srv);

    /* SO_RCVLOWAT: readable once that many bytes wait; a blocking
     * receive takes them all. The error queue is empty: EAGAIN. */
    tcp_pair(&c, &srv);
    int lowat = 10;
    CHECK_OK(setsockopt(srv, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat));
    CHECK_EQ(send(c, "12345", 5, 0), 5);
    struct pollfd p = {srv, POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 100), 0);
    CHECK_EQ(send(c, "67890", 5, 0), 5);
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK_EQ(p.revents, POLLIN);
    char got[32];
    CHECK_EQ(recv(srv, got, sizeof got, 0), 10);
    CHECK_ERR(recv(srv, got, sizeof got, MSG_ERRQUEUE), EAGAIN);
    close(c);
    close(srv);
}

/* A UDP socket bound to loopback of the current family; its address. */
static int udp_bound(struct sockaddr_storage *a, socklen_t *alen) {
    int s = new_socket();
    memset(a, 0, sizeof *a);
    if (cur->domain == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)a;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *alen = sizeof *in;
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)a;
        in6->sin6_family = AF_INET6;
        in6->sin6_addr = in6addr_loopback;
        *alen = sizeof *in6;
    }
    CHECK_OK(bind(s, (struct sockaddr *)a, *alen));
    CHECK_OK(getsockname(s, (struct sockaddr *)a, alen));
    return s;
}

/* The ancillary data IP options ask for, in Linux's order and alignment:
 * the timestamp, then IP_PKTINFO, IP_TTL, IP_TOS (IPV6_PKTINFO,
 * IPV6_HOPLIMIT, IPV6_TCLASS); MSG_CTRUNC when the buffer is short. */
static void udp_cmsgs(void) {
    if (!cur->inet || cur->type != SOCK_DGRAM)
        return;
    int v6 = cur->domain == AF_INET6;
    struct sockaddr_storage a;
    socklen_t alen;
    int r = udp_bound(&a, &alen);
    int s = new_socket();
    int one = 1;
    CHECK_OK(setsockopt(r, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof one));
    if (v6) {
        int tc = 0x20, hops = 7;
        CHECK_OK(setsockopt(s, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof tc));
        CHECK_OK(setsockopt(s, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops));
        int bad = 256;
        CHECK_ERR(setsockopt(s, IPPROTO_IPV6, IPV6_TCLASS, &bad, sizeof bad), EINVAL);
        CHECK_OK(setsockopt(r, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one));
        CHECK_OK(setsockopt(r, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof one));
        CHECK_OK(setsockopt(r, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one));
    } else {
        int tos = 0x10, ttl = 9;
        CHECK_OK(setsockopt(s, IPPROTO_IP, IP_TOS, &tos, sizeof tos));
        CHECK_OK(setsockopt(s, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl));
        int bad = 256;
        CHECK_ERR(setsockopt(s, IPPROTO_IP, IP_TTL, &bad, sizeof bad), EINVAL);
        int five = 5;
        CHECK_OK(setsockopt(r, IPPROTO_IP, IP_PKTINFO, &five, sizeof five));
        CHECK_OK(setsockopt(r, IPPROTO_IP, IP_RECVTTL, &one, sizeof one));
        CHECK_OK(setsockopt(r, IPPROTO_IP, IP_RECVTOS, &one, sizeof one));
        int v = -1;
        socklen_t vl = sizeof v;
        CHECK_OK(getsockopt(r, IPPROTO_IP, IP_PKTINFO, &v, &vl));
        CHECK_EQ(v, 1);
    }
    struct timeval before, after;
    gettimeofday(&before, NULL);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(sendto(s, "hi", 2, 0, (struct sockaddr *)&a, alen), 2);
    char data[8];
    union {
        char buf[512];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof ctl.buf;
    CHECK_EQ(recvmsg(r, &m, 0), 2);
    gettimeofday(&after, NULL);
    CHECK_EQ(m.msg_flags, 0);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL);
    CHECK_EQ(c->cmsg_level, SOL_SOCKET);
    CHECK_EQ(c->cmsg_type, SCM_TIMESTAMP);
    CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(struct timeval)));
    struct timeval tv;
    memcpy(&tv, CMSG_DATA(c), sizeof tv);
    CHECK(timercmp(&tv, &before, >=) || tv.tv_sec == before.tv_sec);
    CHECK(!timercmp(&tv, &after, >));
    int want[3][3];
    size_t sizes[3];
    if (v6) {
        int w[3][3] = {{IPPROTO_IPV6, IPV6_PKTINFO, 0}, {IPPROTO_IPV6, IPV6_HOPLIMIT, 7}, {IPPROTO_IPV6, IPV6_TCLASS, 0x20}};
        memcpy(want, w, sizeof w);
        sizes[0] = sizeof(struct in6_pktinfo);
        sizes[1] = sizes[2] = sizeof(int);
    } else {
        int w[3][3] = {{IPPROTO_IP, IP_PKTINFO, 0}, {IPPROTO_IP, IP_TTL, 9}, {IPPROTO_IP, IP_TOS, 0x10}};
        memcpy(want, w, sizeof w);
        sizes[0] = sizeof(struct in_pktinfo);
        sizes[1] = sizeof(int);
        sizes[2] = 1;
    }
    for (int i = 0; i < 3; i++) {
        c = CMSG_NXTHDR(&m, c);
        CHECK(c != NULL);
        CHECK_EQ(c->cmsg_level, want[i][0]);
        CHECK_EQ(c->cmsg_type, want[i][1]);
        CHECK_EQ(c->cmsg_len, CMSG_LEN(sizes[i]));
        if (i == 0 && v6) {
            struct in6_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            CHECK(IN6_IS_ADDR_LOOPBACK(&pi.ipi6_addr));
            CHECK_EQ(pi.ipi6_ifindex, 1);
        } else if (i == 0) {
            struct in_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            CHECK_EQ(pi.ipi_ifindex, 1);
            CHECK_EQ(ntohl(pi.ipi_addr.s_addr), INADDR_LOOPBACK);
            CHECK_EQ(ntohl(pi.ipi_spec_dst.s_addr), INADDR_LOOPBACK);
        } else if (sizes[i] == 1) {
            CHECK_EQ(*(unsigned char *)CMSG_DATA(c), want[i][2]);
        } else {
            int v;
            memcpy(&v, CMSG_DATA(c), sizeof v);
            CHECK_EQ(v, want[i][2]);
        }
    }
    CHECK(CMSG_NXTHDR(&m, c) == NULL);
    CHECK_EQ(m.msg_controllen, (char *)c - ctl.buf + CMSG_SPACE(sizes[2]));
    /* Room for the timestamp's header and part of its data only. */
    m.msg_controllen = sizeof(struct cmsghdr) + 4;
    CHECK_EQ(recvmsg(r, &m, 0), 2);
    CHECK_EQ(m.msg_flags, MSG_CTRUNC);
    CHECK_EQ(m.msg_controllen, sizeof(struct cmsghdr) + 4);
    c = CMSG_FIRSTHDR(&m);
    CHECK_EQ(c->cmsg_len, sizeof(struct cmsghdr) + 4);
    close(r);
    close(s);
}

int main(void) {
    for (unsigned i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        cur = &fams[i];
        identity();
        flags();
        linger();
        buffers();
        timeouts();
        numbers();
        cookie();
        bindtodevice();
        peer();
        acceptconn();
        tcp_options();
        udp_cmsgs();
    }
    unix_peer();
    return 0;
}
