//! CPU accounting, and Lambda's CPU share emulated with a cgroup.
//!
//! Lambda gives a function CPU in proportion to its memory: 1,769 MB is one
//! vCPU, 128 MB about 7.2% of one. [`CpuGroup`] makes a cgroup (v1 `cpu`
//! controller) with `cpu.cfs_quota_us` = MB × 100,000 / 1,769 per 100,000 µs
//! period, and a `cpuacct` group beside it that counts the CPU time of
//! everything in it, threads that have ended included. The function's
//! process is put in both before it runs its first instruction (see
//! [`CpuGroup::join_on_exec`]). Its weight (`cpu.shares`) is ten times the
//! default, so that other work on the machine does not keep it below its quota.
//!
//! Without cgroups (not root, or cgroup v2 only), the CPU of a process is read
//! from `/proc/<pid>/task/*/schedstat` (nanoseconds of each live thread), or
//! from `/proc/<pid>/stat` (clock ticks) as a last resort.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The CPU share Lambda gives `memory_mb`, as a CFS quota per 100 ms period.
pub fn lambda_quota_us(memory_mb: u64) -> u64 {
    (memory_mb * 100_000 / 1_769).max(1_000)
}

const CPU_ROOT: &str = "/sys/fs/cgroup/cpu";
const CPUACCT_ROOT: &str = "/sys/fs/cgroup/cpuacct";

/// A pair of cgroups (`cpu` for the cap, `cpuacct` for the count), removed
/// when dropped.
#[derive(Debug)]
pub struct CpuGroup {
    cpu: PathBuf,
    acct: Option<PathBuf>,
    /// The quota written, if any.
    pub quota_us: Option<u64>,
}

impl CpuGroup {
    /// Make the groups `name` under the v1 `cpu` and `cpuacct` hierarchies,
    /// capped at `quota_us` per 100,000 µs when given (else uncapped, for
    /// the count alone).
    pub fn create(name: &str, quota_us: Option<u64>) -> std::io::Result<CpuGroup> {
        let cpu = Path::new(CPU_ROOT).join(name);
        std::fs::create_dir_all(&cpu)?;
        let acct = if Path::new(CPU_ROOT).join("cpuacct.usage").exists() {
            None // cpu and cpuacct mounted together: one group does both
        } else if Path::new(CPUACCT_ROOT).exists() {
            let a = Path::new(CPUACCT_ROOT).join(name);
            std::fs::create_dir_all(&a)?;
            Some(a)
        } else {
            None
        };
        let group = CpuGroup {
            cpu,
            acct,
            quota_us,
        };
        std::fs::write(group.cpu.join("cpu.cfs_period_us"), "100000")?;
        // Lambda guarantees the share; on a busy machine (builds next to the
        // benchmark) the group would get less than its quota with the default
        // weight of 1,024, so it gets ten times that: the quota still caps it.
        std::fs::write(group.cpu.join("cpu.shares"), "10240")?;
        let quota = quota_us.map_or("-1".to_owned(), |q| q.to_string());
        std::fs::write(group.cpu.join("cpu.cfs_quota_us"), quota)?;
        Ok(group)
    }

    /// The `cgroup.procs` files to write the process into, opened now, so
    /// that the child can join between `fork` and `exec` with nothing but a
    /// `write` (see the harness's `pre_exec`). Writing `0` moves the writer.
    pub fn join_on_exec(&self) -> std::io::Result<Vec<File>> {
        let mut files = vec![
            std::fs::OpenOptions::new()
                .write(true)
                .open(self.cpu.join("cgroup.procs"))?,
        ];
        if let Some(a) = &self.acct {
            files.push(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(a.join("cgroup.procs"))?,
            );
        }
        Ok(files)
    }

    /// CPU time used by the group's processes so far, in nanoseconds.
    pub fn usage_ns(&self) -> Option<u64> {
        let dir = self.acct.as_ref().unwrap_or(&self.cpu);
        std::fs::read_to_string(dir.join("cpuacct.usage"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Periods in which the group was throttled, and for how long in all
    /// (nanoseconds), from `cpu.stat`.
    pub fn throttled(&self) -> Option<(u64, u64)> {
        let text = std::fs::read_to_string(self.cpu.join("cpu.stat")).ok()?;
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
        };
        Some((get("nr_throttled ")?, get("throttled_time ")?))
    }
}

impl Drop for CpuGroup {
    fn drop(&mut self) {
        // Empty by now (the process was stopped and reaped); if not, the
        // group stays behind, which does no harm.
        let _ = std::fs::remove_dir(&self.cpu);
        if let Some(a) = &self.acct {
            let _ = std::fs::remove_dir(a);
        }
    }
}

/// Join the groups whose `cgroup.procs` files are given: called in the child
/// between `fork` and `exec`, so it only writes.
pub fn join(files: &[File]) -> std::io::Result<()> {
    for mut f in files {
        f.write_all(b"0")?;
    }
    Ok(())
}

/// CPU time of a process's live threads, in nanoseconds, from
/// `/proc/<pid>/task/*/schedstat`; else user + system time from
/// `/proc/<pid>/stat` (clock ticks of 10 ms).
pub fn process_cpu_ns(pid: u32) -> Option<u64> {
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        let mut total = 0u64;
        let mut any = false;
        for t in tasks.flatten() {
            if let Some(ns) = std::fs::read_to_string(t.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            {
                total += ns;
                any = true;
            }
        }
        if any {
            return Some(total);
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields are counted after its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}

/// This process's own CPU time (all its threads), in nanoseconds.
pub fn self_cpu_ns() -> Option<u64> {
    process_cpu_ns(std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_follows_memory() {
        assert_eq!(lambda_quota_us(1_769), 100_000);
        assert_eq!(lambda_quota_us(128), 7_235);
        assert_eq!(lambda_quota_us(3_538), 200_000);
    }

    #[test]
    fn own_cpu_grows() {
        let before = self_cpu_ns().expect("readable on Linux");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = self_cpu_ns().expect("readable on Linux");
        assert!(after > before);
    }
}
