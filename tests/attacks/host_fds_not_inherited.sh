# host_fds_not_inherited: descriptors husk's caller holds open (a secret
# file, a writable log, a socket) must not reach the guest: only the
# standard streams do. The guest lists /proc/self/fd and tries to read
# and write the numbers the host used.
. "$ATTACK_SRC/lib.sh"
secret="$ATTACK_TMP/secret"
echo "host-secret-$RANDOM" > "$secret"
exec 7<"$secret" 8>>"$ATTACK_TMP/log" 9<>/dev/null
out=$(timeout -s KILL 20 "$HUSK" do -- /bin/sh -c '
    ls /proc/self/fd
    cat <&7 2>/dev/null && echo READ7
    echo x >&8 2>/dev/null && echo WROTE8
    : <&9 2>/dev/null && echo HAVE9
' 2>&1 </dev/null)
exec 7<&- 8>&- 9<&-
echo "$out" | grep -q -e READ7 -e WROTE8 -e HAVE9 -e host-secret && fail "a host descriptor reached the guest: $out"
fds=$(echo "$out" | grep -E '^[0-9]+$' | sort -n | tr '\n' ' ')
[ "$fds" = "0 1 2 3 " ] || fail "the guest sees descriptors '$fds' (want 0 1 2 and ls's own 3)"
[ -s "$ATTACK_TMP/log" ] && fail "the guest wrote to the host's log descriptor"
exit 0
