//! What a node costs in memory: its proportional set size (PSS: every page it maps, a shared
//! page divided by the processes that share it) and its private memory (the pages only it
//! maps). VmRSS would count the binary's code in every one of a thousand nodes.

/// One process's memory, KiB, from `/proc/PID/smaps_rollup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Memory {
    /// Proportional set size.
    pub pss_kib: u64,
    /// Private_Clean + Private_Dirty.
    pub private_kib: u64,
}

impl Memory {
    /// Reads process `pid`'s memory; None if it is gone or the kernel does not say.
    pub fn of(pid: u32) -> Option<Memory> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = s.lines().find(|l| l.starts_with(name))?;
            line.split_whitespace().nth(1)?.parse().ok()
        };
        Some(Memory {
            pss_kib: field("Pss:")?,
            private_kib: field("Private_Clean:")? + field("Private_Dirty:")?,
        })
    }

    /// The largest of each figure among `pids`, read from at most 64 of them spread evenly
    /// (reading thousands of smaps would disturb the run being measured); None unless every one
    /// read was running from before the first read to after the last. A sample taken while the
    /// run stops is no reading: as nodes exit, the pages they shared are divided among fewer,
    /// and a ring of 64 caught ending read up to 1,785 KiB of PSS against about 340 running.
    pub(crate) fn worst_of(pids: &[u32]) -> Option<Memory> {
        let step = (pids.len() / 64).max(1);
        let sampled: Vec<u32> = pids.iter().step_by(step).copied().collect();
        let read: Option<Vec<Memory>> = sampled.iter().map(|&p| Memory::of(p)).collect();
        match sampled.iter().all(|&p| running(p)) {
            true => read?.into_iter().reduce(Memory::max),
            false => None,
        }
    }

    /// Each figure the larger of the two.
    pub fn max(self, o: Memory) -> Memory {
        Memory {
            pss_kib: self.pss_kib.max(o.pss_kib),
            private_kib: self.private_kib.max(o.private_kib),
        }
    }

    /// Folds a new reading into the worst so far.
    pub(crate) fn keep_worst(worst: &mut Option<Memory>, seen: Option<Memory>) {
        *worst = match (*worst, seen) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// "PSS/private" for a table cell, "-" when not read.
    pub fn cell(m: Option<Memory>) -> String {
        m.map_or("-".into(), |m| format!("{}/{}", m.pss_kib, m.private_kib))
    }
}

/// Whether process `pid` exists and has not ended (a zombie waiting to be reaped has ended).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        // The state follows the command name's closing parenthesis (the name may hold any).
        let state = s.rfind(')').and_then(|at| s[at + 1..].split_whitespace().next());
        !matches!(state, None | Some("Z" | "X"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_pss_at_least_its_private_memory() {
        let m = Memory::of(std::process::id()).expect("smaps_rollup of this process");
        assert!(m.pss_kib >= m.private_kib && m.private_kib > 0, "{m:?}");
        let worst = Memory::worst_of(&[std::process::id()]).expect("this process read");
        assert!(worst.private_kib > 0, "{worst:?}");
        // A process that does not exist (or no longer runs) makes the sample no reading, not a
        // reading of the others.
        assert_eq!(Memory::worst_of(&[u32::MAX, std::process::id()]), None);
        assert_eq!(Memory::worst_of(&[u32::MAX]), None);
        assert_eq!(Memory::cell(None), "-");
    }
}

#[cfg(test)]
mod running_tests {
    use super::running;

    #[test]
    fn a_zombie_is_not_running_and_a_live_child_is() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("sleep");
        assert!(running(child.id()));
        child.kill().expect("kill");
        // Killed and not yet reaped: a zombie until `wait`.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while running(child.id()) {
            assert!(std::time::Instant::now() < deadline, "the killed child still runs");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.wait().expect("reaped");
        assert!(!running(child.id()));
        assert!(running(std::process::id()));
    }
}
