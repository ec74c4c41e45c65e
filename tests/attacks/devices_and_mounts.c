/* devices_and_mounts: a root guest reaching for host devices and mount
 * tricks: /dev/mem, /dev/kmem, /dev/port, the host's disks, /dev/kvm,
 * /dev/fuse, /dev/net/tun; device nodes it makes itself for the host's
 * disk and memory; namespaces of its own (user, net, pid, mount, cgroup,
 * time) and setns into /proc/1/ns; mounting the host's disk, pivot_root
 * and chroot breakouts (chroot, then chdir("..") past the root). None
 * opens a host device or leaves the sandbox's root. Not run
 * natively (root on a host has them all).
 */
// native: skip
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

static int failures;

static void no_open(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0)
        fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fprintf(stderr, "FAIL: opened %s\n", path);
        failures++;
        close(fd);
    }
}

int main(void) {
    const char *devs[] = {"/dev/mem", "/dev/kmem", "/dev/port", "/dev/vda", "/dev/sda", "/dev/nvme0n1",
                          "/dev/kvm", "/dev/fuse", "/dev/net/tun", "/dev/kmsg", "/dev/vhost-net", "/dev/loop0"};
    for (unsigned i = 0; i < sizeof devs / sizeof *devs; i++)
        no_open(devs[i]);
    /* Device nodes of our own for the host's disk (8:0, 253:0) and memory (1:1). */
    const unsigned devnums[][2] = {{8, 0}, {253, 0}, {1, 1}, {10, 232}};
    for (unsigned i = 0; i < 4; i++) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/dev-%u-%u", devnums[i][0], devnums[i][1]);
        if (mknod(path, S_IFBLK | 0600, makedev(devnums[i][0], devnums[i][1])) == 0 ||
            mknod(path, S_IFCHR | 0600, makedev(devnums[i][0], devnums[i][1])) == 0)
            no_open(path);
        unlink(path);
    }
    /* Mounting the host's things. */
    mkdir("/tmp/m", 0700);
    if (mount("/dev/vda", "/tmp/m", "ext4", 0, NULL) == 0 || mount("/dev/sda", "/tmp/m", "ext4", 0, NULL) == 0) {
        fprintf(stderr, "FAIL: mounted a host disk\n");
        failures++;
    }
    /* chroot breakout: chroot into a subdirectory, then climb out. */
    mkdir("/tmp/jail", 0700);
    int outside = open("/", O_RDONLY | O_DIRECTORY);
    if (chroot("/tmp/jail") == 0) {
        for (int i = 0; i < 64; i++)
            if (chdir("..") != 0)
                break;
        if (fchdir(outside) == 0)
            for (int i = 0; i < 64; i++)
                if (chdir("..") != 0)
                    break;
        chroot(".");
    }
    /* Wherever we are now, it is the sandbox's root, not the host's:
     * the marker the harness's host environment never has. */
    struct stat st;
    if (stat("/proc/self/status", &st) != 0 && stat("/etc/passwd", &st) != 0) {
        fprintf(stderr, "FAIL: lost the root entirely\n");
        failures++;
    }
    /* Namespaces: none may reach the host; whatever unshare allows stays
     * inside the sandbox (setns into another sandbox's namespaces is not
     * possible: there is none to name). */
    int flags[] = {CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWCGROUP, 0x80 /* CLONE_NEWTIME */};
    for (unsigned i = 0; i < 4; i++)
        unshare(flags[i]);
    int ns = open("/proc/1/ns/mnt", O_RDONLY);
    if (ns >= 0) {
        setns(ns, 0);
        close(ns);
    }
    /* pivot_root only rearranges the sandbox's own mounts: what appears
     * at put_old is the sandbox's old root, with its /proc. */
    if (syscall(SYS_pivot_root, "/tmp", "/tmp/jail") == 0 && stat("/jail/proc/self/status", &st) != 0) {
        fprintf(stderr, "FAIL: pivot_root lost the sandbox's root\n");
        failures++;
    }
    return failures ? 1 : 0;
}
