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
    /// (reading thousands of smaps would disturb the run being measured).
    pub(crate) fn worst_of(pids: &[u32]) -> Option<Memory> {
        let step = (pids.len() / 64).max(1);
        pids.iter()
            .step_by(step)
            .filter_map(|&p| Memory::of(p))
            .reduce(|a, b| a.max(b))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_pss_at_least_its_private_memory() {
        let m = Memory::of(std::process::id()).expect("smaps_rollup of this process");
        assert!(m.pss_kib >= m.private_kib && m.private_kib > 0, "{m:?}");
        // A process that does not exist is left out, not read as zero.
        let worst = Memory::worst_of(&[u32::MAX, std::process::id()]).expect("this process read");
        assert!(worst.private_kib > 0, "{worst:?}");
        assert_eq!(Memory::worst_of(&[u32::MAX]), None);
        assert_eq!(Memory::cell(None), "-");
    }
}
