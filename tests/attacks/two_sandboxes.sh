# two_sandboxes: two sandboxes at once must not see each other. Sandbox A
# writes a marker into /tmp, /dev/shm and a POSIX shm object, listens on
# a loopback TCP port, binds an abstract and a path unix socket, and keeps
# a recognizable string in its memory; sandbox B, running beside it, must
# find none of them: no files, no shm, nothing listening, no socket to
# connect to, only its own processes in /proc, and A's string in no
# /proc/*/mem or environment it can read.
. "$ATTACK_SRC/lib.sh"
mark="two-$$-$RANDOM"
trap 'kill_marked "$mark"' EXIT
ready="$ATTACK_TMP/a.out"
HUSK_ATTACK_MARK=$mark "$HUSK" do -- /usr/bin/python3 -c "
import os, socket, sys, time, mmap
open('/tmp/$mark', 'w').write('a')
open('/dev/shm/$mark', 'w').write('a')
fd = os.open('/dev/shm/psx-$mark', os.O_CREAT | os.O_RDWR); os.write(fd, b'a')
t = socket.socket(); t.bind(('127.0.0.1', 47123)); t.listen(4)
ab = socket.socket(socket.AF_UNIX); ab.bind('\0$mark'); ab.listen(4)
pu = socket.socket(socket.AF_UNIX); pu.bind('/tmp/$mark.sock'); pu.listen(4)
secret = ('A-SECRET-' + '$mark') * 100
print('ready', os.getpid(), flush=True)
time.sleep(15)
" >"$ready" 2>&1 </dev/null &
for i in $(seq 1 100); do grep -q ready "$ready" && break; sleep 0.1; done
grep -q ready "$ready" || fail "sandbox A did not start: $(cat "$ready")"
out=$(HUSK_ATTACK_MARK=$mark timeout -s KILL 30 "$HUSK" do -- /usr/bin/python3 -c "
import os, socket, glob
seen = []
for p in ('/tmp/$mark', '/dev/shm/$mark', '/dev/shm/psx-$mark', '/tmp/$mark.sock'):
    if os.path.exists(p): seen.append(p)
def refused(fam, addr):
    s = socket.socket(fam); s.settimeout(2)
    try:
        s.connect(addr); return False
    except OSError:
        return True
if not refused(socket.AF_INET, ('127.0.0.1', 47123)): seen.append('tcp 47123')
if not refused(socket.AF_UNIX, '\0$mark'): seen.append('abstract socket')
pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]
if len(pids) > 3: seen.append('processes %s' % pids)
for p in (q for q in pids if q != os.getpid()):
    for f in ('environ', 'cmdline'):
        try:
            if b'$mark' in open('/proc/%d/%s' % (p, f), 'rb').read(): seen.append('%s of %d' % (f, p))
        except OSError:
            pass
print('seen', seen)
" 2>&1 </dev/null) || fail "sandbox B failed: $out"
[ "$out" = "seen []" ] || fail "sandbox B saw sandbox A: $out"
# B's environment holds the mark (the harness put it there); A's secret
# string is in no memory B can read: B found no A process at all above.
exit 0
