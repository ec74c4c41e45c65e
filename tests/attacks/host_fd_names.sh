# host_fd_names: /proc/self/fd/1 showed the host path of the file husk's
# stdout was redirected to (a host directory layout leaking into the
# sandbox). Host descriptors must read as Linux shows anonymous objects
# (pipe:[N], socket:[N]) or gVisor's host:[N], never a host path.
. "$ATTACK_SRC/lib.sh"
secret_dir="$ATTACK_TMP/secret-project-$RANDOM"
mkdir -p "$secret_dir"
out="$secret_dir/out.log"
timeout -s KILL 20 "$HUSK" do -- /bin/sh -c 'readlink /proc/self/fd/1; readlink /proc/self/fd/2; ls -l /proc/self/fd/; cat /proc/self/fdinfo/1' >"$out" 2>"$secret_dir/err.log" </dev/null \
    || fail "husk do failed: $(cat "$secret_dir/err.log")"
grep -q "secret-project" "$out" && fail "a host path reached the guest: $(cat "$out")"
head -1 "$out" | grep -Eq '^host:\[[0-9]+\]$' || fail "stdout to a file should read host:[N]: $(head -1 "$out")"
# Through a pipe it reads as Linux's pipe:[N].
name=$(timeout -s KILL 20 "$HUSK" do -- /bin/readlink /proc/self/fd/1 </dev/null | cat)
echo "$name" | grep -Eq '^pipe:\[[0-9]+\]$' || fail "stdout to a pipe should read pipe:[N]: $name"
exit 0
