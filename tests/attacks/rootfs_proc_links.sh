# rootfs_proc_links.sh: a guest in `husk do --rootfs DIR` reaches for the
# random secret beside DIR on the host through /proc's magic links
# (/proc/self/root, /proc/1/root, /proc/self/cwd, /proc/self/exe, fd
# links), `..` past the root, and absolute and relative symlinks; while
# another thread swaps a directory for a symlink to / in a tight loop and
# opens paths through it. Nothing it opens holds the secret, and the host
# tree around DIR is unchanged.
. "$ATTACK_SRC/lib.sh"
plant_secret
root="$ATTACK_TMP/rootfs"
mkdir -p "$root/bin" "$root/tmp" "$root/d"
chmod 1777 "$root/tmp"
ln -s / "$root/abs"
ln -s ../../../../../../.. "$root/up"
ln -s "$ATTACK_TMP/$name" "$root/hostlink"
cat >"$ATTACK_TMP/probe.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static const char *name;
static volatile int stop;
static void try(const char *p) {
    char b[256];
    int fd = open(p, O_RDONLY);
    if (fd < 0) return;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n > 0) { b[n] = 0; printf("READ %s: %s\n", p, b); }
}
static void *swapper(void *a) {
    (void)a;
    while (!stop) {
        rename("/d", "/d.old"); symlink("/", "/d"); unlink("/d"); rename("/d.old", "/d");
        symlink("..", "/tmp/l"); unlink("/tmp/l");
    }
    return 0;
}
int main(int argc, char **argv) {
    (void)argc;
    name = argv[1];
    const char *dirs[] = {"/proc/self/root/..", "/proc/1/root/../..", "/proc/self/cwd/..", "/..",
                          "/../..", "/abs/..", "/up", "/up/..", "/proc/self/fd/3/..", "/d/..", "/tmp/l/.."};
    char p[4096];
    int dfd = open("/", O_RDONLY | O_DIRECTORY); /* fd 3 */
    (void)dfd;
    try("/hostlink");
    readlink("/proc/self/exe", p, sizeof p);
    if (strstr(p, "rootfs")) printf("READ exe names the host path: %s\n", p);
    pthread_t t;
    pthread_create(&t, 0, swapper, 0);
    for (int round = 0; round < 300; round++)
        for (unsigned i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
            snprintf(p, sizeof p, "%s/%s", dirs[i], name);
            try(p);
            snprintf(p, sizeof p, "%s/../%s", dirs[i], name);
            try(p);
        }
    stop = 1;
    pthread_join(t, 0);
    puts("probe: done");
    return 0;
}
C
cc -static -O1 -Wall -pthread -o "$root/bin/probe" "$ATTACK_TMP/probe.c" || fail "cc"
before=$(cd "$ATTACK_TMP" && find . -path ./rootfs -prune -o -printf '%p %s %y\n' | sort; cat "$name")
out=$(cd / && timeout -s KILL 30 "$HUSK" do --rootfs "$root" -- /bin/probe "$name" 2>&1); rc=$?
echo "$out" | grep -q "$secret" && fail "SANDBOX ESCAPE: the guest read the host secret: $out"
echo "$out" | grep READ && fail "the guest opened a file outside its root: $out"
[ "$rc" = 0 ] && echo "$out" | grep -q 'probe: done' || fail "the probe did not finish (rc $rc): $out"
after=$(cd "$ATTACK_TMP" && find . -path ./rootfs -prune -o -printf '%p %s %y\n' | sort; cat "$name")
[ "$before" = "$after" ] || fail "the host around the rootfs changed"
exit 0
