//! Host binaries under `husk do`: stdout and exit status must be identical to
//! the native run of the same command (the guest's root filesystem is the
//! host's `/`, read-only under an in-memory overlay).

use std::path::Path;

use crate::util::{assert_same_as_native, husk_do, native, run, unique, TempDir};

#[test]
fn echo_hello_world() {
    let (_, sbx) = assert_same_as_native(&["/bin/echo", "hello", "world"], None);
    assert_eq!(sbx.stdout_str(), "hello world\n");
}

#[test]
fn true_exits_0() {
    let (_, sbx) = assert_same_as_native(&["/bin/true"], None);
    sbx.assert_code(0);
}

#[test]
fn false_exits_1() {
    let (_, sbx) = assert_same_as_native(&["/bin/false"], None);
    sbx.assert_code(1);
}

#[test]
fn ls_la_etc() {
    // Timestamps, link counts, sizes, owners: all must match exactly
    // (but for resolv.conf, where the sandbox's network mounts its own).
    let (nat, _) = assert_same_as_native(&["ls", "-la", "--ignore=resolv.conf", "/etc"], None);
    nat.assert_code(0);
}

#[test]
fn cat_os_release() {
    let (nat, _) = assert_same_as_native(&["cat", "/etc/os-release"], None);
    nat.assert_code(0);
}

#[test]
fn sha256sum_python() {
    let (nat, _) = assert_same_as_native(&["sha256sum", "/usr/bin/python3.11"], None);
    nat.assert_code(0);
}

#[test]
fn head_passwd() {
    let (nat, _) = assert_same_as_native(&["head", "-5", "/etc/passwd"], None);
    nat.assert_code(0);
}

#[test]
fn wc_passwd() {
    let (nat, _) = assert_same_as_native(&["wc", "-l", "/etc/passwd"], None);
    nat.assert_code(0);
}

#[test]
fn sort_passwd() {
    let (nat, _) = assert_same_as_native(&["sort", "/etc/passwd"], None);
    nat.assert_code(0);
}

#[test]
fn find_python_stdlib() {
    let (nat, _) = assert_same_as_native(&["sh", "-c", "find /usr/lib/python3.11 -name \"*.py\" | wc -l"], None);
    nat.assert_code(0);
}

#[test]
fn python_threads_with_locks() {
    let script = "import threading\n\
                  lock = threading.Lock()\n\
                  n = 0\n\
                  def w():\n    global n\n    for _ in range(500):\n        with lock:\n            n += 1\n\
                  ts = [threading.Thread(target=w) for _ in range(32)]\n\
                  [t.start() for t in ts]\n[t.join() for t in ts]\n\
                  print(n, threading.active_count())\n";
    let (nat, _) = assert_same_as_native(&["/usr/bin/python3", "-c", script], None);
    nat.assert_code(0);
    assert_eq!(nat.stdout_str(), "16000 1\n");
}

#[test]
fn python_daemon_threads_blocked_at_exit() {
    // Threads blocked on a condition variable when the process exits must
    // not keep the sandbox alive.
    let script = "import threading, sys\n\
                  ev = threading.Event()\n\
                  [threading.Thread(target=ev.wait, daemon=True).start() for _ in range(4)]\n\
                  print('bye')\nsys.exit(5)\n";
    let (nat, _) = assert_same_as_native(&["/usr/bin/python3", "-c", script], None);
    nat.assert_code(5);
}

#[test]
fn python_json_hashlib() {
    let (nat, _) = assert_same_as_native(
        &[
            "/usr/bin/python3",
            "-c",
            "import json,hashlib,os; print(json.dumps(sorted(os.listdir(\"/etc\"))[:5]), \
             hashlib.sha256(b\"x\").hexdigest())",
        ],
        None,
    );
    nat.assert_code(0);
}

#[test]
fn exit_status_7() {
    let (_, sbx) = assert_same_as_native(&["sh", "-c", "exit 7"], None);
    sbx.assert_code(7);
}

#[test]
fn killed_by_sigkill_is_137() {
    // A child shell kills itself and its parent execs into its status:
    // natively and in the sandbox "killed by signal 9" reads 128+9. (The
    // sandbox's first process cannot kill itself from inside, as a pid
    // namespace's init cannot: attacks::init_unkillable_inside.)
    let (nat, sbx) = assert_same_as_native(&["sh", "-c", "sh -c 'kill -9 $$'; exit $?"], None);
    nat.assert_code(137);
    sbx.assert_code(137);
}

#[test]
fn stdin_is_connected() {
    let (_, sbx) = assert_same_as_native(
        &["sh", "-c", "read a; read b; echo \"got $b $a\"; cat"],
        Some(b"first\nsecond\nrest of input\n"),
    );
    assert_eq!(sbx.stdout_str(), "got second first\nrest of input\n");
}

#[test]
fn stderr_is_connected() {
    let sbx = run(husk_do(&[], &["sh", "-c", "echo to-stderr >&2; echo to-stdout"]), None);
    sbx.assert_code(0);
    assert_eq!(sbx.stdout_str(), "to-stdout\n", "{}", sbx.describe());
    assert!(sbx.stderr_str().contains("to-stderr\n"), "{}", sbx.describe());
}

#[test]
fn environment_is_inherited() {
    let (_, sbx) = assert_same_as_native(&["sh", "-c", "echo \"[$HUSK_TEST_ENV]\""], None);
    assert_eq!(sbx.stdout_str(), "[marker]\n");
}

#[test]
fn cwd_is_inherited() {
    let argv = ["/bin/pwd"];
    let mut nat_cmd = native(&argv);
    nat_cmd.current_dir("/usr/share");
    let nat = run(nat_cmd, None);
    nat.assert_code(0);
    let mut sbx_cmd = husk_do(&[], &argv);
    sbx_cmd.current_dir("/usr/share");
    let sbx = run(sbx_cmd, None);
    sbx.assert_code(0);
    assert_eq!(sbx.stdout_str(), nat.stdout_str(), "{}", sbx.describe());
    assert_eq!(sbx.stdout_str(), "/usr/share\n");
}

#[test]
fn path_lookup() {
    // CMD without '/' is looked up in PATH.
    let (_, sbx) = assert_same_as_native(&["echo", "found", "in", "PATH"], None);
    assert_eq!(sbx.stdout_str(), "found in PATH\n");
}

/// Write `dir/<unique>` inside the sandbox, read it back there, and check
/// that nothing reached the host.
fn write_stays_in_sandbox(dir: &str) {
    let name = format!("{dir}/{}", unique("husk-probe"));
    assert!(!Path::new(&name).exists(), "{name} already exists on the host");
    let script = format!("echo hi > {name} && cat {name}");
    let sbx = run(husk_do(&[], &["sh", "-c", &script]), None);
    let leaked = Path::new(&name).exists();
    if leaked {
        let _ = std::fs::remove_file(&name);
    }
    sbx.assert_code(0);
    assert_eq!(sbx.stdout_str(), "hi\n", "{}", sbx.describe());
    assert!(!leaked, "a guest write to {name} reached the host filesystem");
}

#[test]
fn write_to_etc_stays_in_sandbox() {
    write_stays_in_sandbox("/etc");
}

#[test]
fn write_to_tmp_stays_in_sandbox() {
    write_stays_in_sandbox("/tmp");
}

#[test]
fn overwrite_of_host_file_stays_in_sandbox() {
    // Modify an existing host file (one this test owns, so a broken sandbox
    // cannot damage the host) inside the sandbox: the sandbox must see its
    // own version and the host copy must be untouched.
    let dir = TempDir::new("overwrite");
    let file = dir.path().join("host-file");
    std::fs::write(&file, "original\n").expect("write host file");
    let before = std::fs::metadata(&file).and_then(|m| m.modified()).ok();
    let script =
        format!("cat {f} && echo sandboxed >> {f} && cat {f} && rm {f} && ! cat {f} 2>/dev/null", f = file.display());
    let sbx = run(husk_do(&[], &["sh", "-c", &script]), None);
    assert_eq!(
        std::fs::read_to_string(&file).ok().as_deref(),
        Some("original\n"),
        "guest writes to {} reached the host",
        file.display()
    );
    let after = std::fs::metadata(&file).and_then(|m| m.modified()).ok();
    assert_eq!(before, after, "the host file's mtime changed");
    sbx.assert_code(0);
    assert_eq!(sbx.stdout_str(), "original\noriginal\nsandboxed\n", "{}", sbx.describe());
}

#[test]
fn pipeline_with_early_exit_raises_sigpipe() {
    let (nat, _) = assert_same_as_native(&["/bin/sh", "-c", "seq 1 100000 | sort -rn | head -3"], None);
    assert_eq!(nat.stdout_str(), "100000\n99999\n99998\n");
}

#[test]
fn background_subshells_and_wait() {
    // The sleeps are 0.3 s apart so that the order holds even when the
    // test machine is loaded and a fork takes tens of milliseconds.
    let script = "for i in 1 2 3; do (sleep 0.$((i * 3)); echo $i) & done; wait";
    let (nat, _) = assert_same_as_native(&["/bin/bash", "-c", script], None);
    assert_eq!(nat.stdout_str(), "1\n2\n3\n");
}

#[test]
fn trap_runs_a_handler_for_a_signal_to_self() {
    let script = "trap 'echo TERM' TERM; kill -TERM $$; echo after";
    let (nat, _) = assert_same_as_native(&["/bin/bash", "-c", script], None);
    assert_eq!(nat.stdout_str(), "TERM\nafter\n");
}

#[test]
fn timeout_kills_a_sleeping_child() {
    // timer_create + SIGALRM in timeout, sigsuspend, and an interrupted
    // nanosleep in the child.
    let (nat, _) = assert_same_as_native(&["/usr/bin/timeout", "0.5", "/bin/sleep", "5"], None);
    nat.assert_code(124);
}

#[test]
fn killing_a_background_job() {
    let script = "sleep 10 & pid=$!; kill $pid; wait $pid; echo $?";
    let (nat, _) = assert_same_as_native(&["/bin/bash", "-c", script], None);
    assert_eq!(nat.stdout_str(), "143\n");
}

#[test]
fn python_signal_alarm_interrupts_sleep() {
    let script = "import signal, time\n\
                  signal.signal(signal.SIGALRM, lambda *a: print('alarm', flush=True))\n\
                  signal.alarm(1)\n\
                  t = time.monotonic()\n\
                  time.sleep(1.5)\n\
                  print('after', time.monotonic() - t >= 1.5)\n";
    let (nat, _) = assert_same_as_native(&["/usr/bin/python3", "-c", script], None);
    assert_eq!(nat.stdout_str(), "alarm\nafter True\n");
}

#[test]
fn python_sigwait_in_a_thread() {
    // A process-directed signal every thread blocks goes to the thread
    // waiting for it, whichever thread sent it; the alarm ends a hang.
    let script = "import os, signal, threading, time\n\
                  signal.alarm(20)\n\
                  signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])\n\
                  got = []\n\
                  w = threading.Thread(target=lambda: got.append(signal.sigwait([signal.SIGUSR1])))\n\
                  w.start()\n\
                  time.sleep(0.2)\n\
                  os.kill(os.getpid(), signal.SIGUSR1)\n\
                  w.join()\n\
                  k = threading.Thread(target=lambda: (time.sleep(0.2), os.kill(os.getpid(), signal.SIGUSR1)))\n\
                  k.start()\n\
                  got.append(signal.sigwait([signal.SIGUSR1]))\n\
                  k.join()\n\
                  print([int(s) for s in got])\n";
    let (nat, _) = assert_same_as_native(&["/usr/bin/python3", "-c", script], None);
    assert_eq!(nat.stdout_str(), "[10, 10]\n");
}

/// Runs a Python script file (multiprocessing needs an importable main).
fn python_script(name: &str, body: &str) -> (crate::util::Run, crate::util::Run) {
    let dir = crate::util::TempDir::new(name);
    let path = dir.path().join(format!("{name}.py"));
    std::fs::write(&path, body).unwrap();
    let p = path.to_string_lossy().into_owned();
    let r = assert_same_as_native(&["/usr/bin/python3", p.as_str()], None);
    drop(dir);
    r
}

#[test]
fn python_multiprocessing_pool() {
    // socketpair pipes, fork, and semaphores in MAP_SHARED /dev/shm files.
    let (nat, _) = python_script(
        "mp_pool",
        "import multiprocessing as m\n\
         def sq(x): return x * x\n\
         if __name__ == '__main__':\n    with m.Pool(4) as p: print(sum(p.map(sq, range(100))))\n",
    );
    assert_eq!(nat.stdout_str(), "328350\n");
}

#[test]
fn python_process_pool_executor() {
    let (nat, _) = python_script(
        "ppe",
        "import concurrent.futures as cf\n\
         def cube(x): return x ** 3\n\
         if __name__ == '__main__':\n    with cf.ProcessPoolExecutor(2) as ex: print(sum(ex.map(cube, range(20))))\n",
    );
    assert_eq!(nat.stdout_str(), "36100\n");
}

#[test]
fn python_asyncio_with_subprocesses() {
    let (nat, _) = python_script(
        "aio",
        "import asyncio\n\
         async def run(i):\n    await asyncio.sleep(0.01 * i)\n    p = await asyncio.create_subprocess_exec('echo', str(i), stdout=asyncio.subprocess.PIPE)\n    out, _ = await p.communicate()\n    return out.decode().strip()\n\
         async def main():\n    print(' '.join(await asyncio.gather(*(run(i) for i in range(4)))))\n\
         asyncio.run(main())\n",
    );
    assert_eq!(nat.stdout_str(), "0 1 2 3\n");
}

#[test]
fn python_subprocess_pipes_and_timeout() {
    let (nat, _) = python_script(
        "subp",
        "import subprocess\n\
         r = subprocess.run(['sort'], input=b'b\\na\\n', capture_output=True)\n\
         print(r.stdout)\n\
         try:\n    subprocess.run(['sleep', '5'], timeout=0.3)\nexcept subprocess.TimeoutExpired:\n    print('timeout')\n",
    );
    assert_eq!(nat.stdout_str(), "b'a\\nb\\n'\ntimeout\n");
}

#[test]
fn python_asyncio_and_http_over_loopback() {
    // TCP through the netstack: an asyncio echo server and client, then
    // http.server answering urllib, with "localhost" resolved by the
    // guest's own resolver files.
    let (nat, _) = python_script(
        "loopback",
        "import asyncio, threading, urllib.request, http.server\n\
         async def echo(r, w):\n    w.write((await r.readline()).upper())\n    await w.drain()\n    w.close()\n\
         async def main():\n    srv = await asyncio.start_server(echo, '127.0.0.1', 0)\n    port = srv.sockets[0].getsockname()[1]\n    r, w = await asyncio.open_connection('localhost', port)\n    w.write(b'hello\\n')\n    print((await r.readline()).decode().strip())\n    w.close()\n    srv.close()\n    await srv.wait_closed()\n\
         asyncio.run(main())\n\
         class H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        body = self.path.encode()\n        self.send_response(200)\n        self.send_header('Content-Length', str(len(body)))\n        self.end_headers()\n        self.wfile.write(body)\n    def log_message(self, *a): pass\n\
         httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n\
         threading.Thread(target=httpd.serve_forever, daemon=True).start()\n\
         for i in range(3):\n    with urllib.request.urlopen(f'http://127.0.0.1:{httpd.server_port}/x{i}') as resp:\n        print(resp.status, resp.read().decode())\n\
         httpd.shutdown()\n",
    );
    assert_eq!(nat.stdout_str(), "HELLO\n200 /x0\n200 /x1\n200 /x2\n");
}

/// A guest script that tries TCP and UDP to three outside destinations
/// (IPv4, cloud metadata, IPv6) and prints each errno, then the interfaces
/// netlink (if_nameindex), the interface ioctls (if_nametoindex) and
/// /proc/net/dev show.
const NETWORK_PROBE: &str = "import socket, errno\n\
    for fam, addr in [(socket.AF_INET, ('1.1.1.1', 53)), (socket.AF_INET, ('169.254.169.254', 80)), (socket.AF_INET6, ('2001:db8::1', 53))]:\n    \
    for ty in (socket.SOCK_STREAM, socket.SOCK_DGRAM):\n        s = socket.socket(fam, ty)\n        \
    try:\n            s.connect(addr)\n            s.send(b'x')\n            print('reached', addr)\n        \
    except OSError as e:\n            print(errno.errorcode[e.errno])\n\
    print(socket.if_nameindex(), socket.if_nametoindex('lo'))\n\
    print([l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]])\n";

#[test]
fn the_network_is_loopback_only() {
    // With --network none the sandbox has one interface and every other
    // destination is unreachable, for TCP and UDP, IPv4 and IPv6.
    let r = crate::util::run(
        crate::util::husk_do(&["--network", "none"], &["/usr/bin/python3", "-c", NETWORK_PROBE]),
        None,
    );
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "ENETUNREACH\n".repeat(6) + "[(1, 'lo')] 1\n['lo']\n");
}

#[test]
fn the_default_network_has_an_uplink_and_lets_nothing_out_without_a_rule() {
    // The default network (sandbox) shows eth0, but with no allow rule the
    // egress gateway refuses every outside destination at once (EPERM).
    let r = crate::util::run(crate::util::husk_do(&[], &["/usr/bin/python3", "-c", NETWORK_PROBE]), None);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "EPERM\n".repeat(6) + "[(1, 'lo'), (2, 'eth0')] 1\n['lo', 'eth0']\n");
}

#[test]
fn make_j2_builds_a_c_project() {
    // Many short-lived processes: make's jobserver (pselect with a signal
    // mask, SIGCHLD), gcc's driver, cc1, as and ld.
    let dir = crate::util::TempDir::new("make");
    for i in 1..=4 {
        std::fs::write(dir.path().join(format!("f{i}.c")), format!("int f{i}(void) {{ return {i}; }}\n")).unwrap();
    }
    std::fs::write(
        dir.path().join("main.c"),
        "#include <stdio.h>\nint f1(void); int f2(void); int f3(void); int f4(void);\n\
         int main(void) { printf(\"%d\\n\", f1() + f2() + f3() + f4()); return 0; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("Makefile"),
        "OBJS = main.o f1.o f2.o f3.o f4.o\nprog: $(OBJS)\n\tcc -o $@ $(OBJS)\n%.o: %.c\n\tcc -c -O1 $< -o $@\n",
    )
    .unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    // The build happens inside the sandbox's overlay: the host directory
    // stays untouched, so the native run builds for real afterwards.
    let script = format!("cd {d} && make -s -j2 && ./prog");
    let sbx = crate::util::run(crate::util::husk_do(&[], &["/bin/sh", "-c", script.as_str()]), None);
    assert_eq!(sbx.code, 0, "{}", sbx.describe());
    assert_eq!(sbx.stdout_str(), "10\n");
    assert!(!dir.path().join("prog").exists(), "the sandbox's build must not reach the host");
}

#[test]
fn xargs_parallel() {
    let (nat, _) = assert_same_as_native(&["/bin/sh", "-c", "seq 1 20 | xargs -P4 -n1 echo | sort -n | tail -1"], None);
    assert_eq!(nat.stdout_str(), "20\n");
}

#[test]
fn ps_aux_lists_the_sandboxs_processes() {
    // The guest has a pid namespace of its own: its first process is 1,
    // and ps (reading /proc) sees only the sandbox's processes.
    let r = crate::util::run(crate::util::husk_do(&[], &["/bin/sh", "-c", "sleep 5 & ps aux; kill $!"]), None);
    r.assert_code(0);
    let out = r.stdout_str();
    let mut lines = out.lines();
    assert!(lines.next().is_some_and(|h| h.starts_with("USER") && h.contains("PID") && h.contains("COMMAND")), "{out}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    let command = |row: &Vec<&str>| row[10..].join(" ");
    assert_eq!(rows.len(), 3, "sh, sleep and ps only:\n{out}");
    assert!(rows.iter().any(|r| r[1] == "1" && command(r).starts_with("/bin/sh -c")), "{out}");
    assert!(rows.iter().any(|r| command(r) == "sleep 5"), "{out}");
    assert!(rows.iter().any(|r| command(r) == "ps aux"), "{out}");
}

#[test]
fn python_files_and_signals() {
    let (nat, _) = python_script(
        "files",
        "import os, shutil, signal, tempfile\n\
         got = []\n\
         signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))\n\
         os.kill(os.getpid(), signal.SIGUSR1)\n\
         print('handled', got == [signal.SIGUSR1])\n\
         with tempfile.TemporaryDirectory() as d:\n    \
             for i in range(3):\n        \
                 os.makedirs(os.path.join(d, 'src', f'd{i}'))\n        \
                 with open(os.path.join(d, 'src', f'd{i}', 'f.txt'), 'w') as f: f.write('x' * i)\n    \
             shutil.copytree(os.path.join(d, 'src'), os.path.join(d, 'dst'))\n    \
             for root, dirs, files in sorted(os.walk(os.path.join(d, 'dst'))):\n        \
                 for n in sorted(files):\n            \
                     p = os.path.join(root, n)\n            \
                     print(os.path.relpath(p, d), os.path.getsize(p))\n",
    );
    assert_eq!(nat.stdout_str(), "handled True\ndst/d0/f.txt 0\ndst/d1/f.txt 1\ndst/d2/f.txt 2\n");
}

#[test]
fn nothing_is_left_behind_after_many_threads_and_processes() {
    // 500 threads and 200 processes, then exit: every stub process and
    // sentry thread goes with the sandbox.
    let marker = format!("husk-leftover-{}", std::process::id());
    let script = format!(
        "import os, threading, sys\n\
         ev = threading.Event()\n\
         ts = [threading.Thread(target=ev.wait) for _ in range(500)]\n\
         [t.start() for t in ts]\n\
         ev.set(); [t.join() for t in ts]\n\
         for _ in range(200):\n    pid = os.fork()\n    if pid == 0: os._exit(0)\n    os.waitpid(pid, 0)\n\
         print('done')  # {marker}\n"
    );
    let r = crate::util::run(crate::util::husk_do(&[], &["/usr/bin/python3", "-c", script.as_str()]), None);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "done\n");
    let left = std::process::Command::new("pgrep").args(["-f", &marker]).output().unwrap();
    assert!(left.stdout.is_empty(), "left behind: {}", String::from_utf8_lossy(&left.stdout));
}

/// `tail -f` (GNU coreutils watches with inotify) sees lines another process
/// appends to a file on the sentry's tmpfs (/tmp). `-s 30`: tail's polling
/// fallback would sleep 30 s between looks, so lines arriving within the
/// 10 s the script waits come from inotify events. (On an overlay tail
/// always polls: coreutils counts overlayfs as remote. The guest program
/// `inotify` checks the overlay's events.)
#[test]
fn tail_follow_sees_appended_lines() {
    let script = "set -e\n\
         f=$(mktemp /tmp/husk-tailf.XXXXXX); o=$f.out\n\
         echo first > $f\n\
         tail -s 30 -n +1 -f $f > $o 2>&1 &\n\
         t=$!\n\
         wait_for() { i=0; while ! grep -qx \"$1\" $o; do i=$((i+1)); \
           if [ $i -ge 100 ]; then echo \"missing $1\"; cat $o; kill $t; rm -f $f $o; exit 1; fi; \
           sleep 0.1; done; }\n\
         wait_for first\n\
         sh -c \"echo second >> $f\"\n\
         wait_for second\n\
         sh -c \"echo third >> $f\"\n\
         wait_for third\n\
         kill $t; wait $t || true\n\
         cat $o; rm -f $f $o\n";
    let (_, sbx) = assert_same_as_native(&["sh", "-c", script], None);
    assert_eq!(sbx.stdout_str(), "first\nsecond\nthird\n");
}

#[test]
fn python_sysv_shm_through_ctypes() {
    // SysV shared memory from Python (ctypes on libc's shmget/shmat, not
    // multiprocessing.shared_memory, which is POSIX shm): a fork child's
    // store is seen by its parent.
    let script = "import ctypes, os\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  libc.shmat.restype = ctypes.c_void_p\n\
                  libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]\n\
                  libc.shmdt.argtypes = [ctypes.c_void_p]\n\
                  sid = libc.shmget(0, 4096, 0o600)\n\
                  assert sid >= 0, ctypes.get_errno()\n\
                  addr = libc.shmat(sid, None, 0)\n\
                  buf = (ctypes.c_char * 16).from_address(addr)\n\
                  pid = os.fork()\n\
                  if pid == 0:\n    buf.value = b'from child'\n    os._exit(0)\n\
                  os.waitpid(pid, 0)\n\
                  print(buf.value.decode())\n\
                  assert libc.shmdt(addr) == 0 and libc.shmctl(sid, 0, None) == 0\n";
    let (nat, _) = assert_same_as_native(&["/usr/bin/python3", "-c", script], None);
    nat.assert_code(0);
    assert_eq!(nat.stdout_str(), "from child\n");
}

#[test]
fn ipcs_shows_sysv_objects() {
    // util-linux's ipcmk, ipcs and ipcrm against the sandbox's ipc namespace.
    let script = "id=$(ipcmk -M 8192 | sed 's/.*: //') && ipcs -m -i \"$id\" && ipcrm -m \"$id\" \
                  && ipcmk -S 3 >/dev/null && ipcmk -Q >/dev/null && ipcs -s && ipcs -q && cat /proc/sysvipc/shm";
    let sbx = run(husk_do(&[], &["sh", "-c", script]), None);
    sbx.assert_code(0);
    let out = sbx.stdout_str();
    for want in ["bytes=8192", "nattch=0", "mode=0644"] {
        assert!(out.contains(want), "ipcs -m -i does not show {want}\n{}", sbx.describe());
    }
    let sems = out.lines().filter(|l| l.starts_with("0x") && l.split_whitespace().nth(4) == Some("3")).count();
    assert_eq!(sems, 1, "ipcs -s lists the set of 3\n{}", sbx.describe());
    assert!(out.contains("Message Queues"), "{}", sbx.describe());
    let shm_rows = out.lines().skip_while(|l| !l.trim_start().starts_with("key      shmid")).skip(1).count();
    assert_eq!(shm_rows, 0, "the removed segment is gone from /proc/sysvipc/shm\n{}", sbx.describe());
}

#[test]
fn a_root_guest_mounts_a_scratch_tmpfs() {
    // What a test setup does: mount a sized tmpfs, use it, look at it with
    // findmnt, df and mount, unmount it. Natively in a mount namespace of
    // its own (so the host's /mnt is untouched), and under husk.
    let script = "mount -t tmpfs -o size=1m none /mnt && echo x > /mnt/f && cat /mnt/f \
                  && findmnt -n -o FSTYPE,SOURCE,TARGET,VFS-OPTIONS,PROPAGATION /mnt \
                  && df -k --output=size /mnt | tail -1 && mount | grep -c ' on /mnt type tmpfs ' \
                  && umount /mnt && ! findmnt /mnt && ! test -e /mnt/f && echo done";
    let nat = run(native(&["unshare", "-m", "sh", "-c", script]), None);
    nat.assert_code(0);
    let sbx = run(husk_do(&[], &["sh", "-c", script]), None);
    sbx.assert_code(0);
    assert_eq!(sbx.stdout_str(), nat.stdout_str(), "{}", sbx.describe());
    assert!(sbx.stdout_str().starts_with("x\ntmpfs "), "{}", sbx.describe());
}
