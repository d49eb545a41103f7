//! Tests of [`liveness`](super): the fixed detector's probing and stalls, and the detector
//! hosted by a plain algorithm.

use super::*;
use crate::algo::{Command, Event};
use crate::rng::Rng;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn run(l: &mut Liveness, now: u64, f: impl FnOnce(&mut Liveness, &mut LiveCx<'_>)) -> Vec<Command<LiveMsg, LiveTimer>> {
    let (mut rng, mut out) = (Rng::new(1), Vec::new());
    l.notice_stall(ms(now));
    f(l, &mut Context::new(ms(now), 1, &mut rng, &mut out));
    out
}

#[test]
fn a_suspect_is_probed_with_backoff_until_it_answers() {
    let mut l = Liveness::new(&Setup::new(1, vec![1, 2], vec![2]), [2]);
    run(&mut l, 0, |l, cx| l.start(cx));
    let out = run(&mut l, 100, |l, cx| {
        l.suspect(cx, 2, "heartbeat");
    });
    assert!(
        matches!(out[..], [Command::Record(Event::Suspect { target: 2, .. }), Command::SetTimer(LiveTimer::Reprobe(2), d)] if d == ms(100))
    );
    let mut delays = Vec::new();
    for t in [200, 300, 400, 500] {
        let out = run(&mut l, t, |l, cx| l.on_timer(cx, LiveTimer::Reprobe(2)));
        assert!(matches!(out[0], Command::Send(2, LiveMsg::Probe { wait: false, .. })));
        if let Command::SetTimer(_, d) = out[1] {
            delays.push(d.as_millis());
        }
    }
    assert_eq!(delays, [200, 300, 300, 300], "doubling up to the timeout");
    let out = run(&mut l, 520, |l, cx| l.heard(cx, 2));
    assert!(matches!(
        out[..],
        [
            Command::Record(Event::Unsuspect { target: 2 }),
            Command::CancelTimer(LiveTimer::Reprobe(2))
        ]
    ));
    assert!(!l.is_suspected(2));
}

#[test]
fn a_gap_longer_than_the_timeout_is_a_stall_of_this_node() {
    let mut l = Liveness::new(&Setup::new(1, vec![1, 2], vec![2]), [2]);
    run(&mut l, 0, |l, cx| l.start(cx));
    assert!(!l.notice_stall(ms(150)));
    assert!(!l.notice_stall(ms(300)));
    assert!(l.notice_stall(ms(2000)), "stopped for 1.7 s");
    assert_eq!(l.running_since(), ms(2000));
}

#[test]
fn a_waited_on_node_is_probed_then_suspected() {
    let mut l = Liveness::new(&Setup::new(1, vec![1, 2, 3], vec![2, 3]), [2, 3]);
    run(&mut l, 0, |l, cx| l.watch(cx, true));
    let out = run(&mut l, 100, |l, cx| l.heard(cx, 3));
    assert!(out.is_empty());
    let mut silent = Vec::new();
    let out = run(&mut l, 300, |l, cx| silent = l.check(cx, &[2, 3]));
    assert!(silent.is_empty());
    assert!(matches!(out[..], [Command::Send(2, LiveMsg::Probe { wait: true, .. })]));
    run(&mut l, 300, |l, cx| l.watch(cx, true));
    run(&mut l, 600, |l, cx| silent = l.check(cx, &[2, 3]));
    assert_eq!(silent, [2]);
    assert!(l.is_suspected(2));
}

/// The detector hosted by something that is not an election: a plain [`Algorithm`] that pings
/// every peer each heartbeat period, the way a mutex or clock family would host it.
///
/// [`Algorithm`]: crate::algo::Algorithm
mod hosted {
    use super::*;
    use crate::algo::{Algorithm, Event, Message};
    use crate::sim::{ring, NetConfig, Sim};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Serialize, Deserialize)]
    enum PingMsg {
        Ping,
        Live(LiveMsg),
    }

    impl Message for PingMsg {
        fn name(&self) -> &'static str {
            match self {
                PingMsg::Ping => "PING",
                PingMsg::Live(m) => m.name(),
            }
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    enum PingTimer {
        Period,
        Live(LiveTimer),
    }

    crate::algo::compose::slot! {
        struct Slot;
        impl for PingMsg, PingTimer: LiveMsg => PingMsg::Live, LiveTimer => PingTimer::Live
    }

    /// Pings its peers; suspects one silent for a timeout.
    struct Pinger {
        peers: Vec<NodeId>,
        live: Liveness,
        period: Duration,
        timeout: Duration,
        last: BTreeMap<NodeId, Duration>,
    }

    impl Pinger {
        fn new(setup: &Setup) -> Self {
            let peers: Vec<NodeId> = setup.members.iter().copied().filter(|&m| m != setup.me).collect();
            Pinger {
                live: Liveness::new(setup, peers.clone()),
                last: peers.iter().map(|&p| (p, Duration::ZERO)).collect(),
                peers,
                period: setup.heartbeat,
                timeout: setup.timeout,
            }
        }
    }

    impl Algorithm for Pinger {
        type Msg = PingMsg;
        type Timer = PingTimer;

        fn on_start(&mut self, cx: &mut Context<'_, PingMsg, PingTimer>) {
            self.last.values_mut().for_each(|t| *t = cx.now);
            cx.within::<Slot, _>(|c| self.live.start(c));
            cx.set_timer(PingTimer::Period, self.period);
        }

        fn on_msg(&mut self, cx: &mut Context<'_, PingMsg, PingTimer>, from: NodeId, msg: PingMsg) {
            if self.live.notice_stall(cx.now) {
                self.last.values_mut().for_each(|t| *t = cx.now);
            }
            self.last.insert(from, cx.now);
            cx.within::<Slot, _>(|c| {
                self.live.heard(c, from);
                if let PingMsg::Live(m) = &msg {
                    self.live.on_msg(c, from, m);
                }
            });
        }

        fn on_timer(&mut self, cx: &mut Context<'_, PingMsg, PingTimer>, t: PingTimer) {
            if self.live.notice_stall(cx.now) {
                self.last.values_mut().for_each(|t| *t = cx.now);
            }
            match t {
                PingTimer::Period => {
                    for &p in &self.peers {
                        cx.send(p, PingMsg::Ping);
                        if cx.now.saturating_sub(self.last[&p]) > self.timeout {
                            cx.within::<Slot, _>(|c| self.live.suspect(c, p, "ping"));
                        }
                    }
                    cx.set_timer(PingTimer::Period, self.period);
                }
                PingTimer::Live(t) => cx.within::<Slot, _>(|c| self.live.on_timer(c, t)),
            }
        }
    }

    #[test]
    fn a_non_election_host_suspects_a_crashed_peer_and_withdraws_it_when_it_is_back() {
        let ids = [1, 2, 3];
        let mut s = Sim::new(NetConfig::default(), ring(&ids, &[]), Pinger::new);
        s.run_for(Duration::from_secs(1));
        assert!(s.events("suspect").is_empty());
        s.crash(3);
        s.run_for(Duration::from_secs(1));
        assert!(s.node(1).live.is_suspected(3) && s.node(2).live.is_suspected(3));
        s.restart(3);
        s.run_for(Duration::from_millis(400));
        assert!(!s.node(1).live.is_suspected(3) && !s.node(2).live.is_suspected(3));
        let back = s.events("unsuspect");
        assert!(back.iter().all(|r| matches!(r.event, Event::Unsuspect { target: 3 })));
        assert_eq!(back.len(), 2);
    }
}
