/* proc_net.c — /proc/net: a link to self/net, and its socket tables (tcp,
 * tcp6, udp, unix) listing the caller's sockets by inode with Linux's
 * layout, states and addresses; /proc/sys/net's files.
 *
 * Natively the tables also hold the host namespace's other sockets: the
 * checks only look for this program's own, by inode.
 */
#include "check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

static char text[1 << 20];

static ino_t ino_of(int fd) {
    struct stat st;
    CHECK_OK(fstat(fd, &st));
    return st.st_ino;
}

/* The line of /proc/net/`table` whose inode field (after `skip`
 * whitespace-separated fields) is `ino`, or NULL. */
static const char *row_of(const char *table, ino_t ino, int skip) {
    static char line[512];
    char path[64];
    snprintf(path, sizeof path, "/proc/net/%s", table);
    CHECK(read_file(path, text, sizeof text) > 0);
    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
        char copy[512];
        snprintf(copy, sizeof copy, "%s", l);
        char *save = NULL, *f = strtok_r(copy, " ", &save);
        for (int i = 0; f && i < skip; i++)
            f = strtok_r(NULL, " ", &save);
        if (f && strtoull(f, NULL, 10) == (unsigned long long)ino) {
            snprintf(line, sizeof line, "%s", l);
            return line;
        }
    }
    return NULL;
}

/* "%08X:%04X" of an IPv4 socket address, as /proc/net/tcp shows it. */
static void hex_addr(const struct sockaddr_in *a, char *out) {
    sprintf(out, "%08X:%04X", a->sin_addr.s_addr, ntohs(a->sin_port));
}

static void check_tcp(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_OK(l);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
    CHECK_OK(listen(l, 4));
    int c = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_OK(c);
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
    int s = accept(l, NULL, NULL);
    CHECK_OK(s);
    struct sockaddr_in ca;
    len = sizeof ca;
    CHECK_OK(getsockname(c, (struct sockaddr *)&ca, &len));

    char want_l[32], want_c[32], want[256];
    hex_addr(&a, want_l);
    hex_addr(&ca, want_c);

    CHECK(read_file("/proc/net/tcp", text, sizeof text) > 0);
    char *nl = strchr(text, '\n');
    CHECK(nl != NULL);
    CHECK_EQ(nl - text, 149);
    CHECK(strncmp(text, "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode     ", 101) == 0);

    const char *r = row_of("tcp", ino_of(l), 9);
    CHECK(r != NULL);
    CHECK_EQ(strlen(r), 149);
    snprintf(want, sizeof want, "%s 00000000:0000 0A ", want_l);
    CHECK(strstr(r, want) != NULL);
    char uid[32];
    snprintf(uid, sizeof uid, " %5u ", geteuid());
    CHECK(strstr(r, uid) != NULL);

    r = row_of("tcp", ino_of(c), 9);
    CHECK(r != NULL);
    snprintf(want, sizeof want, "%s %s 01 ", want_c, want_l);
    CHECK(strstr(r, want) != NULL);

    r = row_of("tcp", ino_of(s), 9);
    CHECK(r != NULL);
    snprintf(want, sizeof want, "%s %s 01 ", want_l, want_c);
    CHECK(strstr(r, want) != NULL);

    /* IPv4 sockets are not in tcp6, and closed ones leave the table. */
    CHECK(row_of("tcp6", ino_of(l), 9) == NULL);
    ino_t gone = ino_of(s);
    CHECK_OK(close(s));
    CHECK_OK(close(c));
    CHECK_OK(close(l));
    CHECK(row_of("tcp", gone, 9) == NULL);
}

static void check_tcp6(void) {
    int l = socket(AF_INET6, SOCK_STREAM, 0);
    CHECK_OK(l);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    socklen_t len = sizeof a;
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
    CHECK_OK(listen(l, 1));
    CHECK(read_file("/proc/net/tcp6", text, sizeof text) > 0);
    CHECK(strncmp(text, "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n", 145) == 0);
    const char *r = row_of("tcp6", ino_of(l), 9);
    CHECK(r != NULL);
    char want[128];
    /* ::1 as four host-order words. */
    snprintf(want, sizeof want, "00000000000000000000000001000000:%04X 00000000000000000000000000000000:0000 0A ",
             ntohs(a.sin6_port));
    CHECK(strstr(r, want) != NULL);
    CHECK_OK(close(l));
}

static void check_udp(void) {
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK_OK(u);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK_OK(bind(u, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(u, (struct sockaddr *)&a, &len));
    char want_a[32], want[128];
    hex_addr(&a, want_a);

    CHECK(read_file("/proc/net/udp", text, sizeof text) > 0);
    CHECK_EQ(strchr(text, '\n') - text, 127);
    CHECK(strncmp(text, "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops", 115) == 0);
    const char *r = row_of("udp", ino_of(u), 9);
    CHECK(r != NULL);
    snprintf(want, sizeof want, "%s 00000000:0000 07 ", want_a);
    CHECK(strstr(r, want) != NULL);

    CHECK_OK(connect(u, (struct sockaddr *)&a, sizeof a));
    r = row_of("udp", ino_of(u), 9);
    CHECK(r != NULL);
    snprintf(want, sizeof want, "%s %s 01 ", want_a, want_a);
    CHECK(strstr(r, want) != NULL);
    CHECK_OK(close(u));
}

static void check_unix(void) {
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK_OK(l);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "husk-proc-net-%d", getpid());
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 1 + n;
    CHECK_OK(bind(l, (struct sockaddr *)&a, alen));

    CHECK(read_file("/proc/net/unix", text, sizeof text) > 0);
    CHECK(strncmp(text, "Num       RefCount Protocol Flags    Type St Inode Path\n", 56) == 0);
    char want[128];
    snprintf(want, sizeof want, " 00000000 0001 01 %5lu @husk-proc-net-%d", (unsigned long)ino_of(l), getpid());
    const char *r = row_of("unix", ino_of(l), 6);
    CHECK(r != NULL);
    CHECK(strstr(r, want) != NULL);

    CHECK_OK(listen(l, 1));
    snprintf(want, sizeof want, " 00010000 0001 01 %5lu @husk-proc-net-%d", (unsigned long)ino_of(l), getpid());
    r = row_of("unix", ino_of(l), 6);
    CHECK(r != NULL);
    CHECK(strstr(r, want) != NULL);

    /* The client is unnamed; the accepted end shows the listener's name. */
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK_OK(c);
    CHECK_OK(connect(c, (struct sockaddr *)&a, alen));
    int s = accept(l, NULL, NULL);
    CHECK_OK(s);
    r = row_of("unix", ino_of(s), 6);
    CHECK(r != NULL);
    snprintf(want, sizeof want, " 00000000 0001 03 %5lu @husk-proc-net-%d", (unsigned long)ino_of(s), getpid());
    CHECK(strstr(r, want) != NULL);
    r = row_of("unix", ino_of(c), 6);
    CHECK(r != NULL);
    snprintf(want, sizeof want, " 00000000 0001 03 %5lu", (unsigned long)ino_of(c));
    CHECK(strstr(r, want) != NULL);
    CHECK(strchr(r, '@') == NULL);

    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    r = row_of("unix", ino_of(sv[0]), 6);
    CHECK(r != NULL);
    snprintf(want, sizeof want, " 00000000 0002 03 %5lu", (unsigned long)ino_of(sv[0]));
    CHECK(strstr(r, want) != NULL);
}

static void check_sysctls(void) {
    char buf[256];
    /* ip_local_port_range: two ports; the same range written back is
     * taken, an inverted one is EINVAL (nothing changes either way). */
    CHECK(read_file("/proc/sys/net/ipv4/ip_local_port_range", buf, sizeof buf) > 0);
    unsigned lo = 0, hi = 0;
    CHECK_EQ(sscanf(buf, "%u\t%u\n", &lo, &hi), 2);
    CHECK(lo > 0 && lo <= hi);
    int fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY);
    CHECK_OK(fd);
    char range[64];
    int n = snprintf(range, sizeof range, "%u %u", hi, lo > 1 ? lo - 1 : lo);
    if (hi != lo)
        CHECK_ERR(write(fd, range, n), EINVAL);
    n = snprintf(range, sizeof range, "%u %u\n", lo, hi);
    CHECK_EQ(write(fd, range, n), n);
    CHECK_OK(close(fd));
    char again[256];
    CHECK(read_file("/proc/sys/net/ipv4/ip_local_port_range", again, sizeof again) > 0);
    CHECK_STR(again, buf);

    /* An ephemeral port is in the range. */
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK_OK(bind(u, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(getsockname(u, (struct sockaddr *)&a, &len));
    CHECK(ntohs(a.sin_port) >= lo && ntohs(a.sin_port) <= hi);
    CHECK_OK(close(u));

    struct stat st;
    CHECK_OK(stat("/proc/sys/net/ipv4/ip_local_port_range", &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0644);
    CHECK_OK(stat("/proc/sys/net/ipv6", &st));
    CHECK_EQ(st.st_mode, S_IFDIR | 0555);
    const char *ipv6[] = {"auto_flowlabels", "bindv6only", "ip6frag_time", "ip_nonlocal_bind"};
    for (size_t i = 0; i < sizeof ipv6 / sizeof *ipv6; i++) {
        char p[96];
        snprintf(p, sizeof p, "/proc/sys/net/ipv6/%s", ipv6[i]);
        CHECK(read_file(p, buf, sizeof buf) > 0);
        CHECK(buf[0] >= '0' && buf[0] <= '9');
    }
    const char *bools[] = {"tcp_sack", "ip_forward"};
    for (size_t i = 0; i < 2; i++) {
        char p[96];
        snprintf(p, sizeof p, "/proc/sys/net/ipv4/%s", bools[i]);
        CHECK(read_file(p, buf, sizeof buf) == 2);
        CHECK((buf[0] == '0' || buf[0] == '1') && buf[1] == '\n');
    }
    CHECK(read_file("/proc/sys/net/ipv4/tcp_recovery", buf, sizeof buf) > 0);
}

int main(void) {
    struct stat st;
    CHECK_OK(lstat("/proc/net", &st));
    CHECK_EQ(st.st_mode, S_IFLNK | 0777);
    char link[64] = {0};
    CHECK_EQ(readlink("/proc/net", link, sizeof link), 8);
    CHECK_STR(link, "self/net");
    CHECK_OK(stat("/proc/net", &st));
    CHECK_EQ(st.st_mode, S_IFDIR | 0555);
    CHECK_OK(stat("/proc/self/net/unix", &st));
    CHECK_EQ(st.st_mode, S_IFREG | 0444);

    check_tcp();
    check_tcp6();
    check_udp();
    check_unix();
    check_sysctls();
    return 0;
}
