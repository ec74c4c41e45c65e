# host_loopback: a server the host runs on 127.0.0.1 must be out of the
# sandbox's reach: the sandbox's loopback is its own (the host's services,
# a metadata proxy, a database on localhost stay unreachable). The guest
# tries TCP and UDP to the host server's port on 127.0.0.1, ::1 and
# 0.0.0.0; every attempt fails and the server's log shows nothing arrived.
. "$ATTACK_SRC/lib.sh"
log="$ATTACK_TMP/server.log"
port_file="$ATTACK_TMP/port"
timeout -s KILL 40 python3 -c '
import socket, sys, select
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(("127.0.0.1", 0)); t.listen(8)
port = t.getsockname()[1]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", port))
open(sys.argv[1], "w").write(str(port))
log = open(sys.argv[2], "a")
while True:
    r, _, _ = select.select([t, u], [], [], 30)
    if not r: break
    for s in r:
        if s is t: c, a = t.accept(); log.write("tcp %s\n" % (a,)); log.flush(); c.close()
        else: d, a = u.recvfrom(100); log.write("udp %s\n" % (a,)); log.flush()
' "$port_file" "$log" &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for i in $(seq 1 50); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
[ -n "$port" ] || fail "the host server did not start"
# Natively the server is reachable (so the test can see a hole).
python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 2).close()" || fail "natively unreachable: the test is wrong"
sleep 0.2
grep -q tcp "$log" || fail "the server did not log the native connection"
: > "$log"
out=$(timeout -s KILL 30 "$HUSK" do -- /usr/bin/python3 -c "
import socket
reached = []
for host, fam in (('127.0.0.1', socket.AF_INET), ('0.0.0.0', socket.AF_INET), ('::1', socket.AF_INET6), ('::ffff:127.0.0.1', socket.AF_INET6)):
    try:
        s = socket.socket(fam); s.settimeout(2); s.connect((host, $port)); reached.append(host)
    except OSError:
        pass
    try:
        u = socket.socket(fam, socket.SOCK_DGRAM); u.sendto(b'x', (host, $port))
    except OSError:
        pass
print('reached', reached)
" 2>&1 </dev/null) || fail "the guest failed: $out"
[ "$out" = "reached []" ] || fail "the guest reached the host's loopback: $out"
sleep 0.3
[ -s "$log" ] && fail "packets from the sandbox arrived at the host server: $(cat "$log")"
exit 0
