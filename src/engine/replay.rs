//! The replay window: per sender, its latest boot and which of the last [`WINDOW`] sequence
//! numbers of that boot were accepted. Checked before the MAC (cheap) but updated only after
//! it, so a forged datagram can never move a window.

use crate::trace::NodeId;
use rustc_hash::FxHashMap;

/// How many sequence numbers below the highest seen are still accepted (once each).
pub(crate) const WINDOW: u64 = 128;

#[derive(Debug, Clone, Copy)]
struct Peer {
    boot: u64,
    top: u64,
    /// Bit i set: sequence number `top - i` was accepted.
    seen: u128,
}

/// The senders' windows. Fx, not SipHash: an entry is made only for a sender whose MAC
/// verified, so no stranger chooses the keys.
#[derive(Debug, Default)]
pub(crate) struct ReplayWindow {
    peers: FxHashMap<NodeId, Peer>,
}

impl ReplayWindow {
    /// Whether (`from`, `boot`, `seq`) would be new; Err says why not. Changes nothing.
    pub fn check(&self, from: NodeId, boot: u64, seq: u64) -> Result<(), String> {
        let Some(p) = self.peers.get(&from) else {
            return Ok(());
        };
        if boot < p.boot {
            return Err(format!(
                "node {from} boot {boot} is older than its boot {} seen",
                p.boot
            ));
        }
        if boot > p.boot || seq > p.top {
            return Ok(());
        }
        let age = p.top - seq;
        if age >= WINDOW {
            return Err(format!(
                "node {from} #{seq} is older than the window (highest #{}, window {WINDOW})",
                p.top
            ));
        }
        if p.seen & (1u128 << age) != 0 {
            return Err(format!("node {from} #{seq} was already accepted"));
        }
        Ok(())
    }

    /// Records (`from`, `boot`, `seq`) as accepted; call only after [`ReplayWindow::check`]
    /// and the MAC passed.
    pub(crate) fn mark(&mut self, from: NodeId, boot: u64, seq: u64) {
        let p = self.peers.entry(from).or_insert(Peer {
            boot,
            top: seq,
            seen: 0,
        });
        if boot > p.boot {
            *p = Peer {
                boot,
                top: seq,
                seen: 0,
            };
        }
        if seq > p.top {
            let shift = seq - p.top;
            p.seen = if shift >= 128 { 0 } else { p.seen << shift };
            p.top = seq;
        }
        let age = p.top - seq;
        if age < WINDOW {
            p.seen |= 1u128 << age;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_seq_once_late_ones_within_the_window_and_a_new_boot_starts_afresh() {
        let mut w = ReplayWindow::default();
        for seq in [5, 3, 9, 4] {
            assert!(w.check(1, 10, seq).is_ok(), "{seq}");
            w.mark(1, 10, seq);
        }
        for seq in [5, 3, 9, 4] {
            assert!(w.check(1, 10, seq).unwrap_err().contains("already"), "{seq}");
        }
        assert!(w.check(1, 10, 6).is_ok(), "out of order but new");
        w.mark(1, 10, 300);
        assert!(w.check(1, 10, 100).unwrap_err().contains("older than the window"));
        assert!(w.check(1, 10, 250).is_ok());
        // Another sender has its own window.
        assert!(w.check(2, 10, 5).is_ok());
        // The sender restarted: its new boot starts at #1 again.
        assert!(w.check(1, 11, 1).is_ok());
        w.mark(1, 11, 1);
        assert!(w.check(1, 11, 1).is_err());
        assert!(w.check(1, 10, 301).unwrap_err().contains("boot"));
    }
}
