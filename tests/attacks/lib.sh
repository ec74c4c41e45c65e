# Shared helpers of the .sh attacks (sourced, not an attack itself).
set -u

fail() { echo "FAIL: $*" >&2; exit 1; }

# Pids of live (not zombie) processes whose environment holds $1.
marked() {
    local f p st
    for f in $(grep -lsxz "HUSK_ATTACK_MARK=$1" /proc/[0-9]*/environ); do
        p=${f#/proc/}; p=${p%/environ}
        st=$({ cut -d' ' -f3 < "/proc/$p/stat"; } 2>/dev/null)
        [ -n "$st" ] && [ "$st" != Z ] && echo "$p"
    done
}

# Waits up to $2 seconds for no process marked $1 to remain.
none_left() {
    local i
    for i in $(seq 1 $(( $2 * 10 ))); do
        [ -z "$(marked "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}

# Kills whatever is marked $1 (the attack's own clean-up, after a failure).
kill_marked() {
    local p
    for p in $(marked "$1"); do kill -KILL "$p" 2>/dev/null; done
}

# Plants a random secret beside the sandbox's future root: sets $secret
# (its text) and $name (its file name in $ATTACK_TMP).
plant_secret() {
    secret="HUSK-SECRET-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
    name="secret-$RANDOM$RANDOM"
    echo "$secret" >"$ATTACK_TMP/$name"
}
