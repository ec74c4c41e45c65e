//! The machine a run was made on, recorded with every result: figures from
//! different machines (or from one machine under different load) do not
//! compare, so a reader must be able to tell them apart.

use std::process::Command;

/// What the machine is and how busy it was.
pub struct Machine {
    pub date: String,
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
    /// The CPU reports the `hypervisor` flag: this is a virtual machine, so
    /// any `/dev/kvm` in it is nested.
    pub virtualized: bool,
    pub load_before: String,
    pub load_after: String,
}

impl Machine {
    /// Reads the machine's description and its load now.
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim()))
            .unwrap_or("unknown")
            .to_string();
        let virtualized =
            cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
        let date = Command::new("date")
            .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        Machine {
            date,
            cpu,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            virtualized,
            load_before: load_average(),
            load_after: String::new(),
        }
    }

    /// Records the load once the run is over.
    pub fn finish(&mut self) {
        self.load_after = load_average();
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "date": self.date,
            "cpu": self.cpu,
            "cores": self.cores,
            "kernel": self.kernel,
            "virtualized": self.virtualized,
            "load_before": self.load_before,
            "load_after": self.load_after,
        })
    }
}

/// The 1, 5 and 15 minute load averages.
fn load_average() -> String {
    read_trimmed("/proc/loadavg").split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}
