//! Ring probe: a token sent round the ring for a number of laps, to measure the runtime's cost
//! per hop in steady state (`coordlab bench`). Not a coordination algorithm.
//!
//! Rules:
//! - on start, at the initiator: send TOKEN(lap 1) to the successor.
//! - on TOKEN(k), at any other node: forward TOKEN(k) to the successor.
//! - on TOKEN(k), at the initiator: if k < laps (`--set laps=N`, default 100) send TOKEN(k+1);
//!   otherwise send LAPS_DONE to every other node. The probe's goal (`--until done`, judged by
//!   `check::ring_probe`) holds once every node sent or heard LAPS_DONE; it never claims leadership.

use super::options::{options, Kind};
use super::{Algorithm, Context, Message, NodeId, Setup};
use serde::{Deserialize, Serialize};

options! {
    /// The probe's keys.
    pub(crate) struct ProbeOptions {
        laps: u64 = 100, Kind::Int { min: 1, max: u64::MAX },
            "laps of the token before the initiator announces the end";
    }
}

/// Probe messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum ProbeMsg {
    /// The token, on lap `0`.
    Token(u64),
    /// The initiator finished its laps.
    LapsDone,
}

impl Message for ProbeMsg {
    fn name(&self) -> &'static str {
        match self {
            ProbeMsg::Token(_) => "TOKEN",
            ProbeMsg::LapsDone => "LAPS_DONE",
        }
    }
}

/// One node of the probe ring.
#[derive(Debug, Clone)]
pub(crate) struct RingProbe {
    setup: Setup,
    laps: u64,
}

impl RingProbe {
    /// A probe node; `laps` from `--set laps=N`.
    pub fn new(setup: &Setup) -> Self {
        let laps = ProbeOptions::read(setup).laps;
        RingProbe {
            setup: setup.clone(),
            laps,
        }
    }
}

impl Algorithm for RingProbe {
    type Msg = ProbeMsg;
    type Timer = ();

    fn on_start(&mut self, cx: &mut Context<'_, ProbeMsg, ()>) {
        if self.setup.initiator {
            cx.send(self.setup.successor(), ProbeMsg::Token(1));
        }
    }

    fn on_msg(&mut self, cx: &mut Context<'_, ProbeMsg, ()>, _from: NodeId, msg: ProbeMsg) {
        let me = self.setup.me;
        match msg {
            ProbeMsg::Token(k) if !self.setup.initiator => cx.send(self.setup.successor(), ProbeMsg::Token(k)),
            ProbeMsg::Token(k) if k < self.laps => cx.send(self.setup.successor(), ProbeMsg::Token(k + 1)),
            ProbeMsg::Token(_) => {
                for &m in self.setup.members.iter().filter(|&&m| m != me) {
                    cx.send(m, ProbeMsg::LapsDone);
                }
            }
            ProbeMsg::LapsDone => {}
        }
    }

    fn on_timer(&mut self, _cx: &mut Context<'_, ProbeMsg, ()>, _t: ()) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{ring, NetConfig, Sim};
    use std::time::Duration;

    #[test]
    fn token_goes_round_laps_times_then_everyone_hears() {
        let mut setups = ring(&[3, 1, 2, 5], &[2]);
        for s in &mut setups {
            s.opts.insert("laps".into(), "7".into());
        }
        let mut s = Sim::new(NetConfig::default(), setups, RingProbe::new);
        s.run_for(Duration::from_secs(1));
        assert_eq!(s.sent("TOKEN"), 7 * 4);
        assert_eq!(s.sent("LAPS_DONE"), 3);
        assert!(s.events("leader").is_empty(), "a probe claims no leadership");
        let run = crate::check::sim_run(&s, "ring-probe", "ring");
        let a = crate::check::analyse(&run);
        assert!(a.election.is_none());
        assert_eq!(a.all_sections()[0].family(), "probe");
        assert!(!a.violated(), "{}", crate::check::summary::render(&a, false));
    }
}
