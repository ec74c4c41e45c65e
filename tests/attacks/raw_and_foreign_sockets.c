/* raw_and_foreign_sockets: sockets that would put the guest on the host's
 * network stack or kernel subsystems must not be had: packet and raw IP
 * sockets (sniffing and spoofing), netlink to the host's audit, uevent,
 * netfilter and generic families, vsock (the hypervisor), AF_ALG, XDP,
 * Bluetooth, CAN, TIPC. The routing netlink the sandbox serves shows only
 * the sandbox's own interfaces. Not run natively (root can open them).
 */
// native: skip
#include "check.h"
#include <linux/netlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <netinet/in.h>

static int failures;

static void must_fail(const char *what, int domain, int type, int proto) {
    int fd = socket(domain, type, proto);
    if (fd >= 0) {
        fprintf(stderr, "FAIL: socket(%s) succeeded\n", what);
        failures++;
        close(fd);
    }
}

int main(void) {
    must_fail("AF_PACKET raw", AF_PACKET, SOCK_RAW, htons(3));
    must_fail("AF_PACKET dgram", AF_PACKET, SOCK_DGRAM, htons(3));
    must_fail("AF_INET raw TCP", AF_INET, SOCK_RAW, IPPROTO_TCP);
    must_fail("AF_INET raw ICMP", AF_INET, SOCK_RAW, IPPROTO_ICMP);
    must_fail("AF_INET6 raw", AF_INET6, SOCK_RAW, IPPROTO_RAW);
    must_fail("netlink audit", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
    must_fail("netlink uevent", AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT);
    must_fail("netlink netfilter", AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
    must_fail("netlink generic", AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
    must_fail("netlink sock_diag", AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG);
    must_fail("netlink xfrm", AF_NETLINK, SOCK_RAW, NETLINK_XFRM);
    must_fail("AF_VSOCK", 40, SOCK_STREAM, 0);
    must_fail("AF_ALG", 38, SOCK_SEQPACKET, 0);
    must_fail("AF_XDP", 44, SOCK_RAW, 0);
    must_fail("AF_BLUETOOTH", 31, SOCK_RAW, 0);
    must_fail("AF_CAN", 29, SOCK_RAW, 1);
    must_fail("AF_TIPC", 30, SOCK_RDM, 0);
    must_fail("AF_KEY", 15, SOCK_RAW, 2);
    /* The sandbox's own interfaces only. */
    struct if_nameindex *ifs = if_nameindex();
    CHECK(ifs != NULL);
    for (struct if_nameindex *i = ifs; i->if_index; i++)
        if (strcmp(i->if_name, "lo") != 0 && strcmp(i->if_name, "eth0") != 0) {
            fprintf(stderr, "FAIL: a host interface is visible: %s\n", i->if_name);
            failures++;
        }
    if_freenameindex(ifs);
    return failures ? 1 : 0;
}
