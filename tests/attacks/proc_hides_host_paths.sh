# proc_hides_host_paths: where on the host a sandbox's root lives is not
# the guest's business (it names users, projects, other tenants): no
# file of the sandbox's /proc — mountinfo, mounts, maps, exe, cwd, root,
# cmdline, environ, fd links, cgroup, the status files — may show the
# host path of --rootfs.
. "$ATTACK_SRC/lib.sh"
root="$ATTACK_TMP/tenant-alice-$RANDOM/rootfs"
mkdir -p "$root/tmp" "$root/proc" "$root/dev" "$root/bin"
cp /bin/busybox "$root/bin/" 2>/dev/null || cc -static -O1 -o "$root/bin/busybox" -x c - <<'C' || fail "no busybox and no compiler"
int main(void) { return 0; }
C
cat > "$ATTACK_TMP/dump.c" <<'C'
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void cat(const char *p) {
    char b[65536];
    FILE *f = fopen(p, "r");
    if (!f) return;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    for (size_t i = 0; i < n; i++) if (!b[i]) b[i] = '\n';
    fwrite(b, 1, n, stdout);
}
static void link_of(const char *p) {
    char b[4096];
    ssize_t n = readlink(p, b, sizeof b - 1);
    if (n > 0) { b[n] = 0; puts(b); }
}
int main(void) {
    const char *files[] = {"/proc/self/mountinfo", "/proc/self/mounts", "/proc/self/maps", "/proc/self/cmdline",
                           "/proc/self/environ", "/proc/self/cgroup", "/proc/self/status", "/proc/self/stat",
                           "/proc/1/mountinfo", "/proc/1/maps", "/proc/mounts", "/proc/self/mountstats"};
    for (unsigned i = 0; i < sizeof files / sizeof *files; i++) cat(files[i]);
    const char *links[] = {"/proc/self/exe", "/proc/self/cwd", "/proc/self/root", "/proc/1/exe", "/proc/1/cwd"};
    for (unsigned i = 0; i < sizeof links / sizeof *links; i++) link_of(links[i]);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char p[64];
    while (d && (e = readdir(d))) { snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name); link_of(p); }
    puts("dumped");
    return 0;
}
C
cc -static -O1 -o "$root/dump" "$ATTACK_TMP/dump.c" || fail "compiling the dumper"
out=$(cd "$root" && timeout -s KILL 30 env -i PATH=/bin "$HUSK" do --rootfs "$root" -- /dump 2>&1 </dev/null) || fail "the guest failed: $out"
echo "$out" | grep -q '^dumped$' || fail "the dumper did not finish: $out"
if echo "$out" | grep -F -e "tenant-alice" -e "$ATTACK_TMP"; then
    fail "the host path of the root reached the guest (lines above)"
fi
exit 0
