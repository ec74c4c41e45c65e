# owner_sigkill_leaves_nothing: SIGKILL of `husk do` (and of its process
# group, as a test harness does) at any moment, from the first instants of
# start-up on, while the machine is loaded, must leave no process of the
# sandbox behind: no sentry, no gofer, no stub. (Before, the gofer
# survived in most such kills and the sentry in some.)
. "$ATTACK_SRC/lib.sh"
mark="owner-$$-$RANDOM"
# Two CPU hogs, bounded in time, for load (niced, so that the tests running
# beside this one keep their timing).
nice -n 19 timeout 60 sh -c 'while :; do :; done' & hog1=$!
nice -n 19 timeout 60 sh -c 'while :; do :; done' & hog2=$!
trap 'kill $hog1 $hog2 2>/dev/null; kill_marked "$mark"' EXIT
delays="0 0.01 0.02 0.05 0.1 0.15 0.2 0.3 0.4 0.6"
for round in 1; do
    for d in $delays; do
        HUSK_ATTACK_MARK=$mark setsid timeout -s KILL 30 "$HUSK" do -- /bin/sh -c \
            'sleep 20 & sleep 20 & (sleep 20; :) & python3 -c "import os,time; os.fork(); time.sleep(20)"' \
            </dev/null >/dev/null 2>&1 &
        p=$!
        sleep "$d"
        # The whole group, as a harness kills a hung test.
        kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p"
        wait "$p" 2>/dev/null
        none_left "$mark" 5 || fail "round $round, killed after ${d}s: left $(marked "$mark" | xargs -r ps -o pid,args -p)"
    done
done
# And a kill of the husk do process alone (not its group).
# (Not under timeout(1), whose death would leave husk do its orphan: the
# harness's bound and the clean-up trap stand in for it.)
HUSK_ATTACK_MARK=$mark "$HUSK" do -- /bin/sh -c 'sleep 20 & sleep 20' </dev/null >/dev/null 2>&1 &
p=$!
sleep 0.5
kill -KILL "$p"
wait "$p" 2>/dev/null
none_left "$mark" 5 || fail "husk do alone killed: left $(marked "$mark" | xargs -r ps -o pid,args -p)"
exit 0
