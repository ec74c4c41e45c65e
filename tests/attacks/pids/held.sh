# held.sh — sourced by fork_bomb.sh and thread_bomb.sh.
#
# bomb_held MODE: builds pids/bomb.c and runs it (MODE fork or thread)
# from a shell under `husk do --pids-limit 64`, with an audit log. The
# attack is held when the bomb's every refusal was EAGAIN (it printed how
# many tasks it had, at most the limit), the shell lived on to print
# after it, and the log holds exactly one limit.pids record (one per
# breach, not one per refused call) for the bomb, and verifies.
set -u
source "$ATTACK_SRC/lib.sh"

bomb_held() {
    local mode=$1
    cc -static -O1 -Wall -Werror -pthread -o "$ATTACK_TMP/bomb" "$ATTACK_SRC/pids/bomb.c" || fail "cc"
    local log="$ATTACK_TMP/audit.log" out status=0
    out=$(cd "$ATTACK_TMP" && timeout -s KILL 60 "$HUSK" do --pids-limit 64 --audit-log "$log" \
        -- /bin/sh -c "./bomb $mode; echo after \$?") || status=$?
    echo "$out"
    [ "$status" = 0 ] || fail "husk do exited with $status"
    grep -q "^after 0$" <<<"$out" || fail "the shell did not live on, or the bomb saw other errors than EAGAIN"
    local n
    n=$(sed -n 's/^\([0-9]*\) [a-z]*, then Resource temporarily unavailable$/\1/p' <<<"$out")
    [ -n "$n" ] && [ "$n" -le 64 ] || fail "the bomb had ${n:-?} tasks under a limit of 64"
    local records
    records=$(grep -c '"type":"limit.pids"' "$log")
    [ "$records" = 1 ] || fail "$records limit.pids records, want 1"
    grep '"type":"limit.pids"' "$log" | grep -q '"comm":"bomb".*"limit":64' || fail "the record does not name the bomb and the limit"
    "$HUSK" audit verify "$log" >/dev/null || fail "the audit log does not verify"
}
