# host_unix_sockets.sh: unix sockets of the host (an abstract-namespace
# server and a path server, both started here, like a host's D-Bus or
# container runtime socket) are unreachable from the guest: its connects
# are refused and the servers never see a connection, even though the
# path is visible through the host's root under `husk do`.
set -u
fail() { echo "FAIL: $*"; cleanup; exit 1; }
cleanup() { [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; }
abstract="husk-attack-$RANDOM$RANDOM"
path="$ATTACK_TMP/host.sock"
log="$ATTACK_TMP/server.log"
python3 - "$abstract" "$path" "$log" <<'PY' &
import select, socket, sys
a = socket.socket(socket.AF_UNIX); a.bind("\0" + sys.argv[1]); a.listen(4)
p = socket.socket(socket.AF_UNIX); p.bind(sys.argv[2]); p.listen(4)
open(sys.argv[3] + ".ready", "w").write("ready")
r, _, _ = select.select([a, p], [], [], 30)
if r:
    open(sys.argv[3], "w").write("ACCEPTED\n")
PY
srv=$!
for _ in $(seq 100); do [ -e "$log.ready" ] && break; sleep 0.05; done
[ -e "$log.ready" ] || fail "the host servers did not start"
out=$(timeout -s KILL 20 "$HUSK" do -- python3 -c "
import socket
for name in ('\0$abstract', '$path'):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(name); print('CONNECTED', repr(name))
    except OSError as e:
        print('refused', e.errno)
" 2>&1); rc=$?
[ "$rc" = 0 ] || fail "guest rc $rc: $out"
echo "$out" | grep -q CONNECTED && fail "the guest reached a host unix socket: $out"
[ "$(echo "$out" | grep -c '^refused 111$')" = 2 ] || fail "want ECONNREFUSED twice: $out"
[ -e "$log" ] && fail "a host server accepted a connection"
cleanup
exit 0
