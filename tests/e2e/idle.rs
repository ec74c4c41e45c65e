//! An idle guest costs the sentry nothing: a guest blocked in
//! `epoll_wait` on 100 idle pipes and sockets leaves the sentry asleep
//! (every file wakes only its own waiters, and nothing re-checks on a
//! timer), so the sentry's CPU time barely moves while it waits.

use crate::util::{children, cmdline, guest_bin, husk_do, native, run};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long the guest stays blocked under husk, and how much of it the
/// test measures (after the guest says it is blocked): the figure,
/// 10 s, with room on both sides so the window never reaches the guest's
/// start or exit.
const IDLE_MS: u64 = 12_500;
const MEASURED: Duration = Duration::from_secs(10);
/// The sentry CPU time allowed in `MEASURED`: under 10 ms per 10 s idle.
/// A sentry that re-checked its files on a timer spent 44 ms.
const BOUND: Duration = Duration::from_millis(10);

/// The CPU time of all threads of `pid`, from the scheduler's nanosecond
/// counts (`schedstat`): clock ticks are too coarse for the bound.
fn cpu_time(pid: u32) -> Duration {
    let mut total = Duration::ZERO;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let path = t.path().join("schedstat");
        let Ok(text) = std::fs::read_to_string(&path) else {
            // The thread ended between the listing and the read.
            continue;
        };
        let ns = text.split_whitespace().next().and_then(|v| v.parse::<u64>().ok());
        let Some(ns) = ns else { panic!("{}: no run time in {text:?}", path.display()) };
        total += Duration::from_nanos(ns);
    }
    total
}

#[test]
fn idle_epoll_costs_the_sentry_nothing() {
    let bin = guest_bin("idle_epoll").to_string_lossy().into_owned();
    let nat = run(native(&[bin.as_str(), "200"]), None);
    assert_eq!(nat.code, 0, "idle_epoll FAILS NATIVELY: the test is wrong, not husk\n{}", nat.describe());

    let ms = IDLE_MS.to_string();
    let mut child = husk_do(&[], &[bin.as_str(), ms.as_str()]).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "blocked", "the guest did not get to its wait");
    let deadline = Instant::now() + Duration::from_secs(10);
    let sentry = loop {
        if let Some(s) = children(child.id()).into_iter().find(|&p| cmdline(p).contains(" boot ")) {
            break s;
        }
        assert!(Instant::now() < deadline, "no sentry process");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        std::path::Path::new(&format!("/proc/{sentry}/schedstat")).exists(),
        "this host keeps no schedstat: the sentry's CPU time cannot be measured finely enough"
    );
    let before = cpu_time(sentry);
    std::thread::sleep(MEASURED);
    let used = cpu_time(sentry).saturating_sub(before);

    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "idle_epoll failed under husk: {status}\n{rest}");
    eprintln!("sentry CPU time while the guest was idle for {MEASURED:?}: {used:?}");
    assert!(used <= BOUND, "the sentry used {used:?} of CPU in {MEASURED:?} while the guest was idle");
}
