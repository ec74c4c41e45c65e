# capped.sh — sourced by the memory attack scripts.
#
# build NAME: compiles memory/NAME.c statically into $ATTACK_TMP/NAME.
# capped_husk MB PROG ARGS…: runs `husk do --memory-mb MB -- PROG ARGS…`
#   inside a fresh cgroup v1 memory group capped at MB+512 MiB, as a safety
#   net for the host only: it fails when the cap ever acted (a failed
#   charge or an OOM kill in the group), since husk itself must have held
#   the sandbox to MB. Prints husk's output; its status is husk's.
set -u

CG_ROOT=/sys/fs/cgroup/memory

build() {
    cc -static -O1 -Wall -Werror -pthread -I "$GUEST_INCLUDE" -o "$ATTACK_TMP/$1" "$ATTACK_SRC/memory/$1.c"
}

capped_husk() {
    local mb=$1
    shift
    local cg="$CG_ROOT/husk-attack-$$-$RANDOM"
    mkdir "$cg" || { echo "cannot make memory cgroup $cg" >&2; return 99; }
    echo $(((mb + 512) << 20)) >"$cg/memory.limit_in_bytes"
    local status=0
    (
        echo "$BASHPID" >"$cg/cgroup.procs"
        exec timeout -s KILL 60 "$HUSK" do --memory-mb "$mb" -- "$@"
    ) || status=$?
    # Whatever husk left behind in the group is ended, by pid.
    local pid
    for pid in $(cat "$cg/cgroup.procs"); do
        kill -KILL "$pid" 2>/dev/null || true
    done
    local i
    for i in $(seq 50); do
        [ -z "$(cat "$cg/cgroup.procs")" ] && break
        sleep 0.1
    done
    local failcnt oom_kill peak
    failcnt=$(cat "$cg/memory.failcnt")
    oom_kill=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
    peak=$(cat "$cg/memory.max_usage_in_bytes")
    rmdir "$cg"
    echo "host cgroup: peak $((peak >> 20)) MiB of $((mb + 512)), failcnt $failcnt, oom_kill ${oom_kill:-0}" >&2
    if [ "$failcnt" != 0 ] || [ "${oom_kill:-0}" != 0 ]; then
        echo "FAIL: the host cgroup's cap acted, not husk" >&2
        return 98
    fi
    return "$status"
}
