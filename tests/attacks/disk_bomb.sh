# disk_bomb: under `husk do --disk-limit 64M` (memory ample), reserves
# past the limit with fallocate, then fills /tmp, /dev/shm and the root
# overlay's upper layer (in /var/tmp) together, then makes empty files and
# directories without end. The three share the one budget: ENOSPC once
# they hold 64 MiB together (a write takes what fits first; a refused
# fallocate holds nothing), statfs shows 64 MiB on each, unlinking frees
# the space for new writes, the sandbox runs on, and each breach episode
# leaves one limit.disk record (three here: the fallocate, the bomb, and
# the refill after the unlinks).
. "$ATTACK_SRC/lib.sh"
log="$ATTACK_TMP/audit.log"
out=$(timeout -s KILL 60 "$HUSK" --disk-limit 64M --audit-log "$log" do --memory-mb 512 -- /usr/bin/python3 -c '
import errno, os
MiB = 1 << 20
def fill(path):
    n, buf = 0, b"x" * (MiB + 100)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    while True:
        try:
            w = os.write(fd, buf)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
            os.close(fd)
            return n
        n += w
fd = os.open("/tmp/reserved", os.O_CREAT | os.O_WRONLY, 0o600)
free = os.statvfs("/tmp").f_bfree
try:
    os.posix_fallocate(fd, 0, 100 * MiB)
    raise AssertionError("fallocate past the limit")
except OSError as e:
    assert e.errno == errno.ENOSPC, e
assert os.statvfs("/tmp").f_bfree == free and os.fstat(fd).st_size == 0, "a refused fallocate holds nothing"
os.posix_fallocate(fd, 0, 8 * MiB)
assert os.fstat(fd).st_size == 8 * MiB and os.statvfs("/tmp").f_bfree == free - 2048
os.close(fd)
os.unlink("/tmp/reserved")
paths = ["/tmp/a", "/dev/shm/b", "/var/tmp/c"]
sizes = [fill(p) for p in paths]
assert sizes[0] > 60 * MiB and sizes[1] < MiB and sizes[2] < MiB, sizes
made = 0
try:
    while made < 100000:
        os.mkdir("/tmp/d%d" % made) if made % 2 else open("/var/tmp/e%d" % made, "w").close()
        made += 1
except OSError as e:
    assert e.errno == errno.ENOSPC, e
assert made < 100, made
for p in ("/tmp", "/dev/shm", "/"):
    st = os.statvfs(p)
    assert st.f_blocks * st.f_frsize == 64 * MiB and st.f_bfree == 0, (p, st)
for p in paths:
    os.unlink(p)
again = fill("/dev/shm/again")
assert again > 60 * MiB, again
print("held", sum(sizes) // MiB, made, again // MiB)
' 2>&1) || fail "the guest failed: $out"
case "$out" in held\ 6[0-4]\ *) ;; *) fail "unexpected output: $out" ;; esac
n=$(grep -c '"type":"limit.disk"' "$log")
[ "$n" = 3 ] || fail "want a limit.disk record per breach (3), got $n: $(grep limit.disk "$log")"
grep '"type":"limit.disk"' "$log" | grep -q '"limit":67108864' || fail "the record does not name the limit"
"$HUSK" audit verify "$log" >/dev/null || fail "the audit log does not verify"
exit 0
