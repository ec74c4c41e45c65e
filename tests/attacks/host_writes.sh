# host_writes.sh: under `husk do` the guest sees the host's files through a
# read-only layer with an in-memory overlay. Creating, overwriting,
# truncating, deleting, renaming, chmod and symlinking host files all
# "work" inside the sandbox and none of it reaches the host.
set -u
fail() { echo "FAIL: $*"; exit 1; }
d="$ATTACK_TMP/host"
mkdir -p "$d/sub"
echo original >"$d/file"
echo keep >"$d/sub/keep"
before=$(cd "$d" && find . -printf '%p %m %s %y %l\n' | sort; cat file sub/keep)
out=$(timeout -s KILL 20 "$HUSK" do -- sh -c "
  echo PWNED > '$d/file' && echo PWNED > '$d/new' && rm '$d/sub/keep' && mv '$d/sub' '$d/moved' &&
  chmod 777 '$d/file' && ln -s / '$d/root' && truncate -s 0 '$d/file' && mkdir '$d/dir' &&
  cat '$d/new' && ls '$d'" 2>&1); rc=$?
[ "$rc" = 0 ] || fail "the writes failed inside the sandbox (rc $rc): $out"
echo "$out" | grep -q PWNED || fail "the guest did not see its own write: $out"
after=$(cd "$d" && find . -printf '%p %m %s %y %l\n' | sort; cat file sub/keep)
[ "$before" = "$after" ] || fail "guest writes reached the host: before '$before' after '$after'"
exit 0
