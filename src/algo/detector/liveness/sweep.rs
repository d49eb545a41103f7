//! The fixed detector's sweep over every member it reaches (`detector_watch=all`).

use super::*;

impl Liveness {
    /// When the fixed detector sweeping every member (`detector_watch=all`) last heard `node`
    /// (any message: a heartbeat, or an ALIVE answering its PROBE); None without the sweep.
    pub(crate) fn swept_last_heard(&self, node: NodeId) -> Option<Duration> {
        self.sweep.then(|| self.silence.last_heard(node)).flatten()
    }

    /// Whether `node` was heard within the timeout before `now`.
    pub(crate) fn heard_within_timeout(&self, node: NodeId, now: Duration) -> bool {
        self.silence
            .last_heard(node)
            .is_some_and(|t| now.saturating_sub(t) < self.timeout)
    }

    /// How often the fixed detector sweeps (`detector_watch=all`): half a heartbeat period.
    pub(super) fn sweep_period(&self) -> Duration {
        (self.heartbeat / 2).max(Duration::from_millis(1))
    }

    /// The fixed detector's sweep over every member it reaches (`detector_watch=all`), every
    /// half heartbeat period: a member silent for the timeout is suspected (as the leader is
    /// after a timeout without heartbeats), one silent for half a period is PROBEd. A PROBE and
    /// its ALIVE must both arrive, so a live member is asked about four or five times before
    /// the timeout runs out (with the default 100/300 ms): about as many chances as the three
    /// one-way heartbeats the leader's followers get, so a lost datagram or two is not a
    /// suspicion. A suspect is left to its re-probes, whose answer withdraws it.
    pub(super) fn sweep(&mut self, cx: &mut LiveCx<'_>) {
        for x in self.reach.all() {
            if self.is_suspected(x) {
                continue;
            }
            let Some(heard) = self.silence.last_heard(x) else {
                // Never heard: silent since this node started running.
                self.silence.reset(x, self.running_since);
                continue;
            };
            let silent = cx.now.saturating_sub(heard);
            if silent >= self.timeout {
                self.suspect_fixed(cx, x, "watch");
            } else if silent >= self.sweep_period() {
                // Not a probe of the host's waits (`wait: false`): it only asks for ALIVE.
                cx.send(
                    x,
                    LiveMsg::Probe {
                        epoch: self.epoch,
                        wait: false,
                    },
                );
            }
        }
    }
}
