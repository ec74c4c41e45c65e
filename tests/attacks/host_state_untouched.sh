# host_state_untouched: a root guest's writes to the kernel's global
# knobs must not reach the host: core_pattern (the classic container
# escape: a crash then runs a program of the attacker's choosing on the
# host), the cgroup release agent, sysrq, the host name and domain name,
# the clock, the kernel's log level and printk, drop_caches. The host's
# values are compared before and after.
. "$ATTACK_SRC/lib.sh"
snap() {
    for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/hostname /proc/sys/kernel/domainname \
             /proc/sys/kernel/printk /proc/sys/kernel/sysrq /proc/sys/kernel/modprobe \
             /proc/sys/vm/overcommit_memory /proc/sys/net/ipv4/ip_forward; do
        printf '%s=%s\n' "$f" "$(cat "$f" 2>/dev/null)"
    done
    find /sys/fs/cgroup -maxdepth 2 -name release_agent -exec sh -c 'printf "%s=%s\n" "$1" "$(cat "$1")"' _ {} \; 2>/dev/null
}
before=$(snap)
t0=$(date +%s)
timeout -s KILL 30 "$HUSK" do -- /bin/sh -c '
    echo "|/tmp/pwn %p" > /proc/sys/kernel/core_pattern
    echo pwned > /proc/sys/kernel/hostname
    echo pwned > /proc/sys/kernel/domainname
    echo 8 > /proc/sys/kernel/printk
    echo 1 > /proc/sys/kernel/sysrq
    echo /tmp/pwn > /proc/sys/kernel/modprobe
    echo 1 > /proc/sys/vm/overcommit_memory
    echo 1 > /proc/sys/net/ipv4/ip_forward
    echo 3 > /proc/sys/vm/drop_caches
    echo b > /proc/sysrq-trigger
    for f in /sys/fs/cgroup/*/release_agent /sys/fs/cgroup/release_agent; do echo /tmp/pwn > "$f"; done
    hostname pwned2
    date -s "2001-01-01 00:00:00"
    python3 -c "import time; time.clock_settime(time.CLOCK_REALTIME, 1e9)"
    exit 0
' >/dev/null 2>&1 </dev/null
after=$(snap)
[ "$before" = "$after" ] || fail "host state changed: $(diff <(echo "$before") <(echo "$after"))"
now=$(date +%s)
[ "$now" -ge "$t0" ] && [ $(( now - t0 )) -lt 60 ] || fail "the host clock moved: $t0 -> $now"
exit 0
