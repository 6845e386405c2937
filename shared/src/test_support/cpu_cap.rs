//! Lambda's CPU share for a process under test: Lambda gives a function
//! CPU in proportion to its memory (1,769 MB is one vCPU, 128 MB about 7.2%
//! of one), and this caps a process the way the benchmark does
//! (`bench/src/cpu.rs`): a cgroup of the v1 `cpu` controller with
//! `cpu.cfs_quota_us` = MB × 100,000 / 1,769 per 100,000 µs period, and ten
//! times the default weight so that other work on the machine does not keep
//! it below its quota.
//!
//! **Needs root** (and the v1 `cpu` controller at `/sys/fs/cgroup/cpu`):
//! `scripts/test.sh` runs as root; elsewhere [`CpuCap::lambda`] panics
//! saying so.

use std::path::PathBuf;

const CPU_ROOT: &str = "/sys/fs/cgroup/cpu";

/// A capped cgroup, removed when dropped (its processes ended by then).
pub struct CpuCap {
    dir: PathBuf,
}

impl CpuCap {
    /// A group named after `name` (and this process), capped at the CPU
    /// share Lambda gives `memory_mb`.
    pub fn lambda(name: &str, memory_mb: u64) -> CpuCap {
        let dir = PathBuf::from(CPU_ROOT).join(format!("{name}-{}", std::process::id()));
        let quota = (memory_mb * 100_000 / 1_769).max(1_000);
        let made = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("cpu.cfs_period_us"), "100000"))
            .and_then(|()| std::fs::write(dir.join("cpu.shares"), "10240"))
            .and_then(|()| std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string()));
        if let Err(e) = made {
            panic!(
                "this test caps a process at {memory_mb} MB's CPU share with a cgroup ({}): it needs root and the cgroup v1 cpu controller (scripts/test.sh runs as root): {e}",
                dir.display()
            );
        }
        CpuCap { dir }
    }

    /// Put the process `pid` (all its threads) in the group.
    pub fn add(&self, pid: u32) {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .unwrap_or_else(|e| panic!("move process {pid} into {}: {e}", self.dir.display()));
    }

    /// Periods in which the group was held at its quota so far.
    pub fn throttled_periods(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("cpu.stat"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("nr_throttled "))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0)
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        // A process killed just before may take a moment to leave it.
        for _ in 0..40 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
    }
}
