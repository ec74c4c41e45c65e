#!/usr/bin/env bash
# husk as the runtime of Docker, containerd (ctr) and podman, end to end.
#
# Installs what it needs from Debian (docker.io, containerd, podman,
# busybox-static, debootstrap), starts dockerd by hand (no systemd here),
# builds two images (busybox from busybox-static; a debootstrap rootfs
# with python3, cached in $HUSK_TEST_CACHE), registers husk with
# `husk install`, and checks what users of runc/runsc rely on. Needs root.
# Exits non-zero if any check fails; skips (saying why) only when the
# tools cannot be installed at all.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
HUSK=${HUSK:-$ROOT/target/release/husk}
CACHE=${HUSK_TEST_CACHE:-/var/cache/husk-tests}
DOCKER=/usr/bin/docker # Debian's client, matching its daemon
RUNTIME=husk
WORK=$(mktemp -d /tmp/husk-integration.XXXXXX)
DAEMON_JSON=/etc/docker/daemon.json
started_dockerd=
wrote_containers_conf=
# Leave the host as we found it: daemon.json, dockerd, containers.conf.
cleanup() {
  if [ -e "$WORK/daemon.json.orig" ]; then
    cp "$WORK/daemon.json.orig" "$DAEMON_JSON"
  elif [ -e "$WORK/daemon.json.absent" ]; then
    rm -f "$DAEMON_JSON"
  fi
  if [ -n "$started_dockerd" ]; then
    kill "$(pidof dockerd)" 2>/dev/null
  elif pidof dockerd >/dev/null; then
    kill -HUP "$(pidof dockerd)"
  fi
  [ -n "$wrote_containers_conf" ] && rm -f /etc/containers/containers.conf
  rm -rf "$WORK"
}
trap cleanup EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1"; [ $# -gt 1 ] && printf '       %s\n' "$2"; }
skip() { echo "SKIPPED: $*"; exit 0; }
# expect NAME WANT_RC WANT_OUTPUT_SUBSTRING CMD...
expect() {
  local name=$1 want_rc=$2 want_out=$3
  shift 3
  local out rc
  out=$(timeout 120 "$@" 2>&1)
  rc=$?
  if [ "$rc" = "$want_rc" ] && [[ "$out" == *"$want_out"* ]]; then
    pass "$name"
  else
    fail "$name" "exit $rc (want $want_rc), output: $(echo "$out" | tail -5 | tr '\n' '|')"
  fi
}

[ "$(id -u)" = 0 ] || skip "the integration tests need root"

# --- tools --------------------------------------------------------------
need=()
[ -x /usr/sbin/dockerd ] || need+=(docker.io)
command -v ctr >/dev/null || need+=(containerd)
command -v podman >/dev/null || need+=(podman)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v script >/dev/null || need+=(bsdutils)
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || skip "no apt-get to install ${need[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >"$WORK/apt.log" 2>&1 ||
    skip "cannot install ${need[*]}: $(tail -3 "$WORK/apt.log" | tr '\n' ' ')"
fi
[ -x "$HUSK" ] || cargo build --release -p husk >/dev/null 2>&1 || { echo "FAIL - building husk"; exit 1; }

# --- dockerd --------------------------------------------------------------
if [ -e "$DAEMON_JSON" ]; then cp "$DAEMON_JSON" "$WORK/daemon.json.orig"; else touch "$WORK/daemon.json.absent"; fi
"$HUSK" install --runtime "$RUNTIME" >/dev/null || { echo "FAIL - husk install"; exit 1; }
if ! $DOCKER info >/dev/null 2>&1; then
  started_dockerd=yes
  (dockerd >"$CACHE-dockerd.log" 2>&1 &)
  for _ in $(seq 120); do $DOCKER info >/dev/null 2>&1 && break; sleep 0.5; done
else
  kill -HUP "$(pidof dockerd)"
fi
# (No `docker info | grep -q`: under pipefail, grep's early exit fails the
# pipeline whenever docker is still writing.)
has_runtime() { [[ "$($DOCKER info 2>/dev/null)" =~ Runtimes:[^$'\n']*\ $RUNTIME( |$'\n') ]]; }
for _ in $(seq 60); do has_runtime && break; sleep 0.5; done
has_runtime || { echo "FAIL - dockerd does not list runtime $RUNTIME"; exit 1; }

# --- images -----------------------------------------------------------------
mkdir -p "$CACHE" "$WORK/bb/bin" "$WORK/bb/etc" "$WORK/bb/tmp" "$WORK/bb/root"
cp /bin/busybox "$WORK/bb/bin/"
for a in $(/bin/busybox --list); do [ -e "$WORK/bb/bin/$a" ] || ln -s busybox "$WORK/bb/bin/$a"; done
echo "root:x:0:0:root:/root:/bin/sh" >"$WORK/bb/etc/passwd"
echo "root:x:0:" >"$WORK/bb/etc/group"
tar -C "$WORK/bb" -cf "$WORK/busybox.tar" .
$DOCKER import "$WORK/busybox.tar" husk-busybox >/dev/null || { echo "FAIL - docker import busybox"; exit 1; }
if [ ! -x "$CACHE/python-rootfs/usr/bin/python3" ]; then
  rm -rf "$CACHE/python-rootfs.tmp"
  debootstrap --variant=minbase --include=python3-minimal bookworm "$CACHE/python-rootfs.tmp" \
    http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 || { echo "FAIL - debootstrap"; tail -5 "$WORK/debootstrap.log"; exit 1; }
  mv "$CACHE/python-rootfs.tmp" "$CACHE/python-rootfs"
fi
tar -C "$CACHE/python-rootfs" -c . | $DOCKER import - husk-python >/dev/null || { echo "FAIL - docker import python"; exit 1; }

RUN=(run --runtime="$RUNTIME")

# --- Docker -----------------------------------------------------------------
echo "# docker $($DOCKER version --format '{{.Server.Version}}') with --runtime=$RUNTIME"
expect "run prints and exits with the guest's status" 3 "hi" $DOCKER "${RUN[@]}" --rm husk-busybox sh -c 'echo hi; exit 3'
expect "python3 runs in a debootstrap image" 0 "Linux" \
  $DOCKER "${RUN[@]}" --rm husk-python python3 -c 'import os; print(os.uname().sysname)'
expect "a missing program is reported" 127 "executable file not found" $DOCKER "${RUN[@]}" --rm husk-busybox nosuch
expect "Docker's default capabilities are the container's" 0 "CapEff:	00000000a80425fb" \
  $DOCKER "${RUN[@]}" --rm husk-busybox grep CapEff /proc/self/status
expect "--cap-drop takes one away" 1 "Operation not permitted" \
  $DOCKER "${RUN[@]}" --rm --cap-drop CHOWN husk-busybox chown 1 /tmp
# Docker's default seccomp profile reaches the sentry and is enforced
# (runc answers these the same way), and so does a profile of one's own.
expect "Docker's default seccomp profile denies unshare, as under runc" 1 "Operation not permitted" \
  $DOCKER "${RUN[@]}" --rm husk-busybox unshare -u true
# That check alone cannot fail (without CAP_SYS_ADMIN unshare is EPERM with
# or without a filter), so compare calls whose answer only the profile
# decides with runc's: keyctl and userfaultfd are ENOSYS under husk without
# a filter, and the profile makes them EPERM (kexec_load, bpf and
# perf_event_open are EPERM either way; perl-base is in every Debian
# image). And the process shows it runs under a filter.
probe='for my $nr (250, 323, 246, 321, 298) { my $r = syscall($nr, 0, 0, 0, 0, 0); print "$nr $r ", ($r < 0 ? "$!" : ""), "\n" }
open(my $f, "<", "/proc/self/status"); while (<$f>) { print if /^Seccomp:/ }'
want=$($DOCKER run --runtime=runc --rm husk-python perl -e "$probe" 2>&1)
if [[ "$want" == *"250 -1 Operation not permitted"*"323 -1 Operation not permitted"* ]]; then
  expect "Docker's default profile answers keyctl, userfaultfd, kexec_load, bpf, perf_event_open as under runc" 0 "$want" \
    $DOCKER "${RUN[@]}" --rm husk-python perl -e "$probe"
else
  fail "runc's answers under Docker's default profile" "$want"
fi
printf '%s' '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}' \
  >"$WORK/deny-mkdir.json"
expect "--security-opt seccomp=PROFILE is the container's filter" 1 "Operation not permitted" \
  $DOCKER "${RUN[@]}" --rm --security-opt seccomp="$WORK/deny-mkdir.json" husk-busybox mkdir /tmp/d
expect "--cpus and --pids-limit show in the sandbox's /sys/fs/cgroup" 0 "50000 100000 64" \
  $DOCKER "${RUN[@]}" --rm --cpus 0.5 --pids-limit 64 husk-busybox sh -c 'echo $(cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/pids.max)'

id=$($DOCKER "${RUN[@]}" -d husk-busybox sh -c 'trap "echo got TERM; exit 0" TERM; echo started; while true; do sleep 0.1; done')
sleep 0.5
expect "docker logs" 0 "started" $DOCKER logs "$id"
expect "docker exec returns the process's status" 4 "exec here" $DOCKER exec "$id" sh -c 'echo exec here; exit 4'
expect "docker exec -i passes stdin" 0 "piped" sh -c "echo piped | $DOCKER exec -i $id cat"
expect "docker exec sees the container's processes" 0 "while true" $DOCKER exec "$id" ps
expect "docker top lists the sandbox" 0 "husk" $DOCKER top "$id"
expect "docker stop delivers SIGTERM to the handler" 0 "" $DOCKER stop -t 10 "$id"
expect "the handler ran and the status is its" 0 "0 got TERM" sh -c \
  "echo \$($DOCKER inspect -f '{{.State.ExitCode}}' $id) \$($DOCKER logs $id | tail -1)"
expect "docker rm" 0 "" $DOCKER rm "$id"

id=$($DOCKER "${RUN[@]}" -d husk-busybox sh -c 'trap "" TERM; while true; do sleep 0.1; done')
sleep 0.3
expect "docker stop kills a guest that ignores SIGTERM after the timeout" 0 "137" \
  sh -c "$DOCKER stop -t 1 $id >/dev/null && $DOCKER inspect -f '{{.State.ExitCode}}' $id"
$DOCKER rm "$id" >/dev/null

expect "docker run -t gets a terminal with the window's size" 0 "/dev/pts/" script -qec \
  "stty rows 24 cols 80; $DOCKER run --runtime=$RUNTIME -t --rm husk-busybox sh -c 'tty; for i in \$(seq 50); do s=\$(stty size 2>/dev/null); [ -n \"\$s\" ] && break; sleep 0.1; done; echo size=\$s'" /dev/null
expect "  ... and the size is the window's" 0 "size=24 80" script -qec \
  "stty rows 24 cols 80; $DOCKER run --runtime=$RUNTIME -t --rm husk-busybox sh -c 'for i in \$(seq 50); do s=\$(stty size 2>/dev/null); [ -n \"\$s\" ] && break; sleep 0.1; done; echo size=\$s'" /dev/null

id=$($DOCKER "${RUN[@]}" -d husk-busybox sleep 60)
expect "docker exec -t gets a terminal of its own" 0 "/dev/pts/" script -qec \
  "stty rows 24 cols 80; $DOCKER exec -t $id sh -c 'tty'" /dev/null
$DOCKER rm -f "$id" >/dev/null

expect "--memory 64m kills a guest that allocates 200 MB" 137 "" \
  $DOCKER "${RUN[@]}" --name husk-oom --memory 64m husk-python python3 -c "b = b'x' * (200 << 20); print(len(b))"
# containerd may deliver the cgroup's OOM event just after the exit: give
# Docker a moment to record it before reading it.
expect "  ... and Docker reports the OOM kill" 0 "true" sh -c "for i in \$(seq 15); do
    [ \"\$($DOCKER inspect -f '{{.State.OOMKilled}}' husk-oom)\" = true ] && { echo true; exit 0; }; sleep 0.2; done
  $DOCKER inspect -f '{{.State.OOMKilled}}' husk-oom"
$DOCKER rm husk-oom >/dev/null 2>&1

id=$($DOCKER "${RUN[@]}" -d --memory 96m --pids-limit 40 husk-busybox sh -c 'i=0; while true; do i=$((i+1)); echo $i; sleep 0.05; done')
sleep 0.5
expect "docker stats sees the sandbox's cgroup and limit" 0 "96MiB" $DOCKER stats --no-stream --format '{{.MemUsage}}' "$id"
expect "docker pause freezes the sandbox" 0 "Paused" sh -c "$DOCKER pause $id >/dev/null && $DOCKER ps --filter id=$id --format '{{.Status}}'"
n1=$($DOCKER logs "$id" | wc -l); sleep 0.5; n2=$($DOCKER logs "$id" | wc -l)
if [ "$n1" = "$n2" ]; then pass "  ... nothing runs while paused"; else fail "  ... nothing runs while paused" "$n1 -> $n2 lines"; fi
$DOCKER unpause "$id" >/dev/null; sleep 0.5; n3=$($DOCKER logs "$id" | wc -l)
if [ "$n3" -gt "$n2" ]; then pass "docker unpause resumes it"; else fail "docker unpause resumes it" "$n2 -> $n3 lines"; fi
expect "docker rm -f" 0 "" $DOCKER rm -f "$id"
if [ -z "$(ls /sys/fs/cgroup/memory/docker/ 2>/dev/null | grep "$id")" ] && [ ! -e "/sys/fs/cgroup/docker/$id" ]; then
  pass "  ... removes the container's cgroup"
else
  fail "  ... removes the container's cgroup"
fi

mkdir -p "$WORK/vol" && echo "from the host" >"$WORK/vol/in.txt"
expect "docker run -v mounts a host directory read-write" 0 "from the host" \
  $DOCKER "${RUN[@]}" --rm -v "$WORK/vol:/data" husk-busybox sh -c 'cat /data/in.txt; echo from the guest >/data/out.txt'
expect "  ... and the guest's writes reach the host" 0 "from the guest" cat "$WORK/vol/out.txt"
expect "docker run -v ...:ro refuses writes" 0 "Read-only file system" \
  $DOCKER "${RUN[@]}" --rm -v "$WORK/vol:/data:ro" husk-busybox sh -c 'echo x >/data/new; true'
expect "docker run --read-only refuses writes to the root" 0 "Read-only file system" \
  $DOCKER "${RUN[@]}" --rm --read-only husk-busybox sh -c 'echo x >/etc/new; echo y >/tmp/ok && true'

expect "docker run --read-only --tmpfs /run gives a writable /run" 0 "ok" \
  $DOCKER "${RUN[@]}" --rm --read-only --tmpfs /run husk-busybox sh -c 'echo x >/run/f && echo ok'
expect "docker run -v onto a path the image lacks" 0 "from the host" \
  $DOCKER "${RUN[@]}" --rm -v "$WORK/vol:/new/deep/data:ro" husk-busybox cat /new/deep/data/in.txt

# One interface, loopback, which carries TCP; everything else is unreachable.
expect "--network none has only loopback" 0 "[lo]
hi
nc: can't connect to remote host (10.1.1.1): Network is unreachable
nc exited 1" \
  $DOCKER "${RUN[@]}" --rm --network none husk-busybox sh -c \
  'echo "[$(ip -o link | cut -d: -f2 | tr -d " " | tr "\n" " " | sed "s/ $//")]"
   nc -l -p 5000 & sleep 0.5; echo hi | nc 127.0.0.1 5000; wait
   echo x | nc 10.1.1.1 80 2>&1; echo "nc exited $?"'

# -p: Docker sends the host port to the container's address (DNAT, or its
# proxy for loopback); the sentry listens there on every port a guest
# listener holds, as the host kernel does under runc.
id=$($DOCKER "${RUN[@]}" -d -p 127.0.0.1:18080:80 --hostname husk-published husk-busybox httpd -f -p 80 -h /etc)
expect "docker run -p 18080:80 reaches a guest HTTP server from the host" 0 "husk-published" sh -c \
  'for i in $(seq 100); do out=$(curl -sS --max-time 5 http://127.0.0.1:18080/hostname 2>&1) && { echo "$out"; exit 0; }; sleep 0.2; done; echo "$out"; exit 1'
$DOCKER rm -f "$id" >/dev/null

# Docker bind-mounts single files: /etc/hosts, /etc/hostname, /etc/resolv.conf.
expect "docker run --add-host and --hostname reach /etc/hosts and /etc/hostname" 0 "$(printf '1.2.3.4\tmyhost-alias\nmyhost')" \
  $DOCKER "${RUN[@]}" --rm --hostname myhost --add-host myhost-alias:1.2.3.4 husk-busybox \
  sh -c 'grep myhost-alias /etc/hosts; cat /etc/hostname'

state_dir=/var/run/docker/runtime-$RUNTIME/moby
left=$(ls "$state_dir" 2>/dev/null)
if [ -z "$left" ]; then pass "no container state is left behind"; else fail "no container state is left behind" "$left"; fi
if pgrep -f "husk.* boot " >/dev/null; then fail "no sentry is left behind" "$(pgrep -af "husk.* boot ")"; else pass "no sentry is left behind"; fi

# --- containerd ---------------------------------------------------------------
sock=/run/containerd/containerd.sock
[ -S "$sock" ] || sock=/var/run/docker/containerd/containerd.sock
CTR=(ctr --address "$sock" -n husk-test)
echo "# containerd $(ctr --version | awk '{print $3}') via ctr --runc-binary"
$DOCKER save husk-busybox | "${CTR[@]}" image import - >/dev/null 2>&1
expect "ctr run with husk as the runc binary" 4 "hi from ctr" "${CTR[@]}" run --rm --runtime io.containerd.runc.v2 \
  --runc-binary "$HUSK" docker.io/library/husk-busybox:latest husk-ctr sh -c 'echo hi from ctr; exit 4'

# --- podman ---------------------------------------------------------------------
echo "# podman $(podman --version | awk '{print $3}') with --runtime $HUSK"
if [ ! -f /etc/containers/containers.conf ]; then
  wrote_containers_conf=yes
  mkdir -p /etc/containers
  # Root here cannot raise hard rlimits; podman's defaults would try.
  printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n\n[engine]\nruntime = "runc"\n' \
    >/etc/containers/containers.conf
fi
podman import "$WORK/busybox.tar" husk-busybox >/dev/null 2>&1
expect "podman run" 5 "hi from podman" podman --runtime "$HUSK" run --rm husk-busybox sh -c 'echo hi from podman; exit 5'
id=$(podman --runtime "$HUSK" run -d husk-busybox sh -c 'while true; do sleep 0.1; done')
expect "podman exec" 0 "in podman" podman --runtime "$HUSK" exec "$id" sh -c 'echo in podman'
expect "podman rm -f" 0 "" podman --runtime "$HUSK" rm -f -t 1 "$id"

echo "# $passed passed, $failed failed"
[ "$failed" = 0 ]
