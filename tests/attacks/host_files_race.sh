# host_files_race: the files beside a sandbox's root (--rootfs) must stay
# out of reach however a path is spelled and whatever races under it.
# While the guest reads through `..`, /proc/self/root, /proc/1/root,
# /proc/self/cwd and symlinks it keeps making and renaming, the host
# swaps a directory of the root for an absolute symlink to the secret's
# directory and a relative one up out of the root, thousands of times (a
# race against the gofer's path walk). No read may return the secret.
. "$ATTACK_SRC/lib.sh"
root="$ATTACK_TMP/rootfs"
mkdir -p "$root/tmp" "$root/proc" "$root/dev" "$root/d"
secret="husk-secret-$RANDOM$RANDOM"
name="secret-$RANDOM"
echo "$secret" > "$ATTACK_TMP/$name"
echo "benign" > "$root/d/$name"
ln -s / "$root/abs"
ln -s ../../../.. "$root/up"
cc -static -O1 -Wall -Werror -pthread -o "$root/probe" "$ATTACK_SRC/rootfs_probe_prog.c" || fail "compiling the probe"
# The host side of the race: d flips between a directory, an absolute
# symlink to the secret's directory and a relative one out of the root.
mkdir -p "$root/dreal"; echo benign > "$root/dreal/$name"
(
    end=$(( $(date +%s) + 25 ))
    while [ "$(date +%s)" -lt "$end" ]; do
        ln -sfn "$ATTACK_TMP" "$root/d.new" && mv -Tf "$root/d.new" "$root/d"
        ln -sfn ../.. "$root/d.new" && mv -Tf "$root/d.new" "$root/d"
        ln -sfn dreal "$root/d.new" && mv -Tf "$root/d.new" "$root/d"
    done
) 2>/dev/null &
racer=$!
trap 'kill $racer 2>/dev/null' EXIT
out=$(timeout -s KILL 40 "$HUSK" do --rootfs "$root" -- /probe "$secret" "$name" 2>&1 </dev/null) || fail "the probe failed: $out"
kill $racer 2>/dev/null
echo "$out" | grep -q "^done$" || fail "the probe did not finish: $out"
echo "$out" | grep -q "^leaks 0$" || fail "the secret was read: $out"
echo "$out" | grep -q "$secret" && fail "the secret appeared in the output: $out"
[ "$(cat "$ATTACK_TMP/$name")" = "$secret" ] || fail "the secret file changed"
exit 0
