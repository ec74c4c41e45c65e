# exe_write.sh: under `husk do` the guest's binaries are the host's, read
# only below the overlay. A guest that opens its own executable through
# /proc/self/exe, or the host's /bin/sh by name, and writes over it must
# not change the host's file.
set -u
fail() { echo "FAIL: $*"; exit 1; }
cp /bin/true "$ATTACK_TMP/victim"
sum=$(sha256sum "$ATTACK_TMP/victim" "$(readlink -f /bin/sh)" | cut -d' ' -f1)
cat >"$ATTACK_TMP/w.c" <<'C'
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open("/proc/self/exe", O_WRONLY);
    if (fd >= 0 && pwrite(fd, "PWNED", 5, 0) < 0) return 3;
    for (int i = 1; i < argc; i++) {
        int f = open(argv[i], O_WRONLY);
        if (f >= 0 && pwrite(f, "PWNED", 5, 0) < 0) return 4;
    }
    return 0;
}
C
cc -static -O1 -o "$ATTACK_TMP/w" "$ATTACK_TMP/w.c" || fail "cc"
cp "$ATTACK_TMP/w" "$ATTACK_TMP/w.orig"
timeout -s KILL 20 "$HUSK" do -- "$ATTACK_TMP/w" "$ATTACK_TMP/victim" "$(readlink -f /bin/sh)" >/dev/null 2>&1
now=$(sha256sum "$ATTACK_TMP/victim" "$(readlink -f /bin/sh)" | cut -d' ' -f1)
[ "$sum" = "$now" ] || fail "a host binary changed"
cmp -s "$ATTACK_TMP/w" "$ATTACK_TMP/w.orig" || fail "the guest's executable on the host changed"
exit 0
