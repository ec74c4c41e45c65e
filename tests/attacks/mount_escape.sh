# mount_escape.sh: a root guest (CAP_SYS_ADMIN) in `husk do --rootfs DIR
# --secret` uses mount(2) to reach the random secret planted beside DIR
# on the host: host filesystem types (ext4 of a disk, overlay and 9p of
# host paths, fuse); binds (recursive too) of /proc/self/root/..,
# /proc/1/root, `..`-walks and symlinks out of the root, then reads
# through them; chroot and pivot_root (in a mount namespace of its own)
# followed by `..` and /proc links; and against /run/secrets: unmounting
# or moving it to see what lies beneath, remounting it writable, binding
# it elsewhere to write, a bind of its parent without it, in its own mount
# namespace too. Nothing it reads
# holds the host secret, /run/secrets stays as the runtime made it, and
# the host tree around DIR is unchanged.
. "$ATTACK_SRC/lib.sh"
plant_secret
root="$ATTACK_TMP/rootfs"
mkdir -p "$root/bin" "$root/tmp" "$root/mnt" "$root/jail/sub" "$root/newroot"
chmod 1777 "$root/tmp"
ln -s / "$root/abs"
ln -s ../../../../../../.. "$root/up"
cat >"$ATTACK_TMP/probe.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static const char *name;
static void try(const char *dir) {
    char p[512], b[256];
    const char *fmt[] = {"%s/%s", "%s/../%s", "%s/../../%s", "%s/../../../../../../%s"};
    for (unsigned i = 0; i < 4; i++) {
        snprintf(p, sizeof p, fmt[i], dir, name);
        int fd = open(p, O_RDONLY);
        if (fd < 0) continue;
        ssize_t n = read(fd, b, sizeof b - 1);
        close(fd);
        if (n > 0) { b[n] = 0; printf("READ %s: %s\n", p, b); }
    }
}
static void must_fail(int r, const char *what) {
    if (r == 0) printf("BROKE: %s succeeded\n", what);
}
static void binds(void) {
    const char *srcs[] = {"/proc/self/root/..", "/proc/1/root", "/proc/self/cwd/../..", "/..", "/abs/..", "/up",
                          "/up/.."};
    for (unsigned i = 0; i < sizeof srcs / sizeof *srcs; i++)
        for (int rec = 0; rec < 2; rec++) {
            if (mount(srcs[i], "/mnt", NULL, MS_BIND | (rec ? MS_REC : 0), NULL) != 0) continue;
            try("/mnt");
            try("/mnt/proc/self/root");
            umount2("/mnt", MNT_DETACH);
        }
    must_fail(mount("/proc/self/fd/1", "/mnt", NULL, MS_BIND, NULL), "bind of a host descriptor");
    /* A bind without MS_REC would show what the runtime's mounts cover. */
    must_fail(mount("/", "/mnt", NULL, MS_BIND, NULL), "a bind of / without the runtime's mounts");
    must_fail(mount("/run", "/mnt", NULL, MS_BIND, NULL), "a bind of /run without /run/secrets");
}
static void host_types(void) {
    const char *types[][3] = {{"/dev/sda", "ext4", NULL}, {"/dev/vda", "ext4", NULL},
                              {"overlay", "overlay", "lowerdir=/..,upperdir=/tmp/u,workdir=/tmp/w"},
                              {"host", "9p", "trans=fd"}, {"fuse", "fuse", "fd=0,rootmode=40000,user_id=0,group_id=0"},
                              {"none", "devtmpfs", NULL}, {"none", "cgroup", NULL}, {"none", "debugfs", NULL}};
    for (unsigned i = 0; i < sizeof types / sizeof *types; i++) {
        errno = 0;
        int r = mount(types[i][0], "/mnt", types[i][1], 0, types[i][2]);
        if (r == 0 || errno != EPERM) printf("BROKE: mount -t %s: %d errno %d\n", types[i][1], r, errno);
        if (r == 0) { try("/mnt"); umount2("/mnt", MNT_DETACH); }
    }
}
static void chroots(void) {
    pid_t p = fork();
    if (p == 0) {
        int outside = open("/", O_RDONLY | O_DIRECTORY);
        if (chroot("/jail") != 0) { printf("BROKE: chroot failed %d\n", errno); _exit(1); }
        try("/");
        try("/sub");
        chdir("/../../..");
        try(".");
        fchdir(outside);
        for (int i = 0; i < 40; i++) chdir("..");
        try(".");
        chroot(".");
        try("/");
        try("/proc/self/root");
        _exit(0);
    }
    waitpid(p, NULL, 0);
}
static void pivot(void) {
    pid_t p = fork();
    if (p == 0) {
        if (unshare(CLONE_NEWNS) != 0) { printf("BROKE: unshare %d\n", errno); _exit(1); }
        if (mount("none", "/newroot", "tmpfs", 0, NULL) != 0) { printf("BROKE: tmpfs %d\n", errno); _exit(1); }
        mkdir("/newroot/old", 0755);
        chdir("/newroot");
        if (syscall(SYS_pivot_root, ".", "old") != 0) { printf("BROKE: pivot_root %d\n", errno); _exit(1); }
        chdir("/");
        try("/");
        try("/old");
        try("/old/proc/self/root");
        try("/old/proc/1/root");
        umount2("/old", MNT_DETACH);
        try("/");
        try("/old");
        _exit(0);
    }
    waitpid(p, NULL, 0);
}
static void secrets(const char *stage) {
    char b[256];
    must_fail(umount2("/run/secrets", 0), "umount /run/secrets");
    must_fail(umount2("/run/secrets", MNT_DETACH), "umount -l /run/secrets");
    must_fail(mount("/run/secrets", "/mnt", NULL, MS_MOVE, NULL), "mount --move /run/secrets");
    mount(NULL, "/run/secrets", NULL, MS_REMOUNT | MS_BIND, NULL);
    int fd = open("/run/secrets/API", O_WRONLY | O_TRUNC);
    must_fail(fd < 0 ? -1 : 0, "writing /run/secrets/API after a rw remount");
    if (mount("/run/secrets", "/mnt", NULL, MS_BIND, NULL) == 0) {
        mount(NULL, "/mnt", NULL, MS_REMOUNT | MS_BIND, NULL);
        fd = open("/mnt/API", O_WRONLY | O_TRUNC);
        must_fail(fd < 0 ? -1 : 0, "writing a bind of /run/secrets");
        umount2("/mnt", MNT_DETACH);
    }
    /* A mount over it, then away again: the runtime's is back. */
    if (mount("none", "/run/secrets", "tmpfs", 0, NULL) == 0) umount2("/run/secrets", 0);
    fd = open("/run/secrets/API", O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, b, sizeof b - 1);
    if (n <= 0) printf("BROKE: /run/secrets/API unreadable after %s\n", stage);
    else { b[n] = 0; printf("secret %s %s\n", stage, b); }
}
int main(int argc, char **argv) {
    (void)argc;
    name = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    host_types();
    binds();
    chroots();
    pivot();
    secrets("in the first namespace");
    pid_t p = fork();
    if (p == 0) {
        unshare(CLONE_NEWNS);
        secrets("in a new namespace");
        _exit(0);
    }
    waitpid(p, NULL, 0);
    puts("probe: done");
    return 0;
}
C
cc -static -O1 -Wall -o "$root/bin/probe" "$ATTACK_TMP/probe.c" || fail "cc"
before=$(cd "$ATTACK_TMP" && find . -path ./rootfs -prune -o -printf '%p %s %y\n' | sort; cat "$name")
out=$(cd / && timeout -s KILL 60 "$HUSK" do --rootfs "$root" --secret API=inside-value -- /bin/probe "$name" 2>&1)
rc=$?
echo "$out" | grep -q "$secret" && fail "SANDBOX ESCAPE: the guest read the host secret: $out"
echo "$out" | grep -E 'READ|BROKE' && fail "the guest got past the sandbox's mounts: $out"
# (husk redacts the secret's value from the guest's output.)
[ "$(echo "$out" | grep -c '^secret .* \[REDACTED:API\]$')" = 2 ] || fail "/run/secrets changed: $out"
[ "$rc" = 0 ] && echo "$out" | grep -q 'probe: done' || fail "the probe did not finish (rc $rc): $out"
after=$(cd "$ATTACK_TMP" && find . -path ./rootfs -prune -o -printf '%p %s %y\n' | sort; cat "$name")
[ "$before" = "$after" ] || fail "the host around the rootfs changed"
exit 0
