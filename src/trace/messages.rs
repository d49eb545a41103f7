//! Which `send` a `recv` received: the one rule every reader of a trace pairs messages by (the
//! pictures, the ShiViz log, the consistent-cut check, the clock check).
//!
//! A datagram is named by its sender, its receiver and the sender's `seq`. A restarted sender
//! numbers again from 1, so one name can belong to several sends of a run: a receive (or a
//! clock claim naming a reference's `seq`) at true time `t` answers the latest of them sent at
//! or before `t`. Two processes can stamp one microsecond in either order, so a receive stamped
//! before every send of its name takes the first.

use super::{Event, NodeId, Record};
use std::collections::HashMap;

/// A datagram's name: (sender, receiver, the sender's `seq`).
pub(crate) type MsgName = (NodeId, NodeId, u64);

/// The sends of a run by name, each with what its reader keeps of it (`T`: a record, a
/// position, an arrow's index).
#[derive(Debug, Clone)]
pub(crate) struct Sends<T> {
    by_name: HashMap<MsgName, Vec<(u64, T)>>,
}

impl<T> Default for Sends<T> {
    fn default() -> Self {
        Sends {
            by_name: HashMap::new(),
        }
    }
}

impl<T> Sends<T> {
    /// Notes the send `name` at true time `t`, keeping `what`.
    pub fn insert(&mut self, name: MsgName, t: u64, what: T) {
        let v = self.by_name.entry(name).or_default();
        // Records arrive in time order per sender; keep the list sorted if they do not.
        let at = v.partition_point(|(ts, _)| *ts <= t);
        v.insert(at, (t, what));
    }

    /// The send that a receive of `name` at true time `t` received (see the module's rule).
    pub(crate) fn send_of(&self, name: MsgName, t: u64) -> Option<&T> {
        let v = self.by_name.get(&name)?;
        v.iter().rev().find(|(ts, _)| *ts <= t).or(v.first()).map(|(_, w)| w)
    }
}

impl<'a> Sends<&'a Record> {
    /// Every send among `records`, each kept as its record.
    pub fn of(records: impl IntoIterator<Item = &'a Record>) -> Self {
        let mut out = Sends::default();
        for r in records {
            if let Some(name) = sent(r) {
                out.insert(name, r.t, r);
            }
        }
        out
    }
}

/// The name of the datagram `r` sends, if it is a `send`.
pub fn sent(r: &Record) -> Option<MsgName> {
    match (r.node, &r.event) {
        (Some(n), Event::Send { to, seq, .. }) => Some((n, *to, *seq)),
        _ => None,
    }
}

/// The name of the datagram `r` receives, if it is a `recv`.
pub fn received(r: &Record) -> Option<MsgName> {
    match (r.node, &r.event) {
        (Some(n), Event::Recv { from, seq, .. }) => Some((*from, n, *seq)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_takes_the_latest_send_of_its_name_at_or_before_it() {
        let mut s = Sends::default();
        // Node 1 sends seq 4 to node 2, restarts and sends seq 4 again.
        s.insert((1, 2, 4), 100, "first boot");
        s.insert((1, 2, 4), 900, "second boot");
        s.insert((1, 3, 4), 120, "to another node");
        assert_eq!(s.send_of((1, 2, 4), 150), Some(&"first boot"));
        assert_eq!(s.send_of((1, 2, 4), 900), Some(&"second boot"));
        assert_eq!(s.send_of((1, 2, 4), 5000), Some(&"second boot"));
        // Stamped a microsecond before its send by the other process's clock: the first.
        assert_eq!(s.send_of((1, 2, 4), 99), Some(&"first boot"));
        assert_eq!(s.send_of((1, 3, 4), 130), Some(&"to another node"));
        assert_eq!(s.send_of((2, 1, 4), 130), None);
    }
}
