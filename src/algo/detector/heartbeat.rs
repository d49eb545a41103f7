//! The fixed-timeout heartbeat detector's bookkeeping: when each node was last heard, and whom
//! this node suspects. A node is suspected when nothing came from it for the timeout; any
//! message from it withdraws the suspicion.

use crate::trace::{Event, NodeId};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Last-heard times and the current suspicions.
#[derive(Debug, Clone, Default)]
pub struct Silence {
    heard: BTreeMap<NodeId, Duration>,
    suspected: BTreeSet<NodeId>,
}

impl Silence {
    /// Notes that `node` was heard at `now`; returns the `unsuspect` event if it was suspected.
    pub fn heard(&mut self, node: NodeId, now: Duration) -> Option<Event> {
        self.heard.insert(node, now);
        self.suspected
            .remove(&node)
            .then_some(Event::Unsuspect { target: node })
    }

    /// Suspects `node` now, after `timeout` without the answer named by `cause` (`heartbeat`,
    /// `ack`); returns the `suspect` event unless already suspected.
    pub fn suspect(&mut self, node: NodeId, now: Duration, timeout: Duration, cause: &str) -> Option<Event> {
        self.suspect_as(node, now, timeout, cause, None, None)
    }

    /// [`suspect`](Self::suspect), with what the phi or SWIM detector adds to the event.
    pub(crate) fn suspect_as(
        &mut self,
        node: NodeId,
        now: Duration,
        timeout: Duration,
        cause: &str,
        phi: Option<f64>,
        incarnation: Option<u64>,
    ) -> Option<Event> {
        if !self.suspected.insert(node) {
            return None;
        }
        // A node never heard from has been silent since this node started.
        let since = self.heard.get(&node).copied().unwrap_or(Duration::ZERO);
        Some(Event::Suspect {
            target: node,
            silence_ms: now.saturating_sub(since).as_millis() as u64,
            timeout_ms: timeout.as_millis() as u64,
            cause: cause.to_string(),
            // Two decimals are all a reader needs, and keep the trace line short.
            phi: phi.map(|p| (p * 100.0).round() / 100.0),
            incarnation,
        })
    }

    /// Notes that `node` was heard at `now` without withdrawing a suspicion (SWIM withdraws
    /// only on a higher incarnation).
    pub(crate) fn touch(&mut self, node: NodeId, now: Duration) {
        self.heard.insert(node, now);
    }

    /// Starts the silence clock of `node` afresh (a new leader to watch).
    pub fn reset(&mut self, node: NodeId, now: Duration) {
        self.heard.insert(node, now);
    }

    /// Starts every silence clock afresh (this node itself was stopped: nobody's silence
    /// during the gap counts).
    pub fn restart(&mut self, now: Duration) {
        for t in self.heard.values_mut() {
            *t = now;
        }
    }

    /// Drops the suspicion of `node` without having heard it (this node no longer has an
    /// opinion on it); returns the `unsuspect` event if it was suspected.
    pub fn forget(&mut self, node: NodeId) -> Option<Event> {
        self.suspected
            .remove(&node)
            .then_some(Event::Unsuspect { target: node })
    }

    /// When `node` was last heard (or its clock reset), if ever.
    pub(crate) fn last_heard(&self, node: NodeId) -> Option<Duration> {
        self.heard.get(&node).copied()
    }

    /// Whether `node` is suspected.
    pub(crate) fn is_suspected(&self, node: NodeId) -> bool {
        self.suspected.contains(&node)
    }

    /// Everyone suspected now.
    pub fn suspected(&self) -> &BTreeSet<NodeId> {
        &self.suspected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspect_once_and_withdraw_on_hearing() {
        let ms = Duration::from_millis;
        let mut s = Silence::default();
        s.reset(8, ms(100));
        assert_eq!(
            s.suspect(8, ms(412), ms(300), "heartbeat"),
            Some(Event::Suspect {
                target: 8,
                silence_ms: 312,
                timeout_ms: 300,
                cause: "heartbeat".into(),
                phi: None,
                incarnation: None,
            })
        );
        assert_eq!(s.suspect(8, ms(500), ms(300), "heartbeat"), None);
        assert!(s.is_suspected(8));
        assert_eq!(s.heard(8, ms(600)), Some(Event::Unsuspect { target: 8 }));
        assert_eq!(s.heard(8, ms(700)), None);
    }
}
