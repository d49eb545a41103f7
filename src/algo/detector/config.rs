//! Which detector a node runs and its tuning: the `--set` keys declared once here
//! ([`DetectorOptions`], their defaults in its declaration), taken by every family that hosts
//! [`Liveness`](super::Liveness).

use crate::algo::options::{options, Kind};
use crate::algo::Setup;
use std::collections::BTreeMap;
use std::time::Duration;

options! {
    /// The detector's keys.
    pub(crate) struct DetectorOptions {
        detector: &'static str = fixed, Kind::Choice(&["fixed", "phi", "swim"]),
            "failure detector: fixed timeout, phi accrual (Hayashibara), or SWIM with Lifeguard";
        detector_watch: &'static str = waits, Kind::Choice(&["waits", "all"]),
            "whom a node watches: what its algorithm waits on (fixed only), or every member it reaches";
        // Far above Akka's 8: the normal model's tail is too thin for lost beats. Since BEATs
        // relay the peers' stamps (a lost BEAT is made up by a relay within a period), 40 with
        // a 70 ms pause made no mistake at 25% loss in the simulator, at 0.98x fixed's
        // detection time, and suspected no node paused for 150 ms; a 40 ms pause was faster
        // (0.83x) but suspected such pauses (src/algo/detector/heavy_loss_tests.rs;
        // docs/detectors.md, Measured).
        phi_threshold: f64 = 40, Kind::Float { min: 0.5, max: 100.0 },
            "phi: suspect a peer once phi (-log10 of the chance it is still alive) exceeds this";
        phi_window: u64 = 100, Kind::Int { min: 2, max: 10_000 }, "phi: inter-arrival times kept per peer";
        phi_min_std_ms: u64 = 5, Kind::Int { min: 1, max: 60_000 },
            "phi: the smallest standard deviation of inter-arrival times assumed, ms";
        phi_pause_ms: u64 = 70, Kind::Int { min: 0, max: 60_000 },
            "phi: acceptable heartbeat pause added to the mean inter-arrival time, ms";
        // BEATs are phi's only evidence, so how often they go is what its accuracy is bought
        // with; 80 ms sends as many datagrams as fixed's sweep (docs/detectors.md, Measured, "datagrams
        // counted, phi's beat period, SWIM's re-sent PINGs").
        phi_beat_ms: u64 = 80, Kind::Int { min: 0, max: 60_000 },
            "phi: a BEAT goes to every peer it reaches this often, ms (0: the heartbeat period)";
        // Relaying every known stamp in every BEAT costs n^2 stamps a period: at 64 that was
        // 63 stamps a BEAT and 390 MB of trace a second. 6 keeps the redundancy 8 members
        // have (each peer's newest stamp reaches an observer by about 6 relays a period) at
        // any size (docs/detectors.md, "64 nodes on 2 cores").
        phi_relay: u64 = 6, Kind::Int { min: 0, max: 10_000 },
            "phi: peers' stamps a BEAT relays; each period every known stamp goes out in this many BEATs";
        // A probe is judged a period after its first PING; four start each period, so a crash
        // waits a quarter period, not half of one, for its first PING. At 35% loss in the
        // simulator (32 members), four 240 ms probes a period made 37 first-hand suspicions
        // where one 200 ms probe a period had made 92, and found crashes 33 ms sooner
        // (docs/detectors.md, "Overlapping probes").
        swim_period_ms: u64 = 240, Kind::Int { min: 1, max: 60_000 },
            "swim: a probe is judged a period after its first PING, ms (stretched by the local health multiplier)";
        swim_probes: u64 = 4, Kind::Int { min: 1, max: 8 },
            "swim: probes started per period, each judged a period after its first PING (1: SWIM's one probe a period)";
        // A probe needs its timeout and two round trips (the PING-REQ's relay), not a whole
        // period, on a network that answers quickly; measured from the member's own ACKs.
        // In the simulator (6 seeds, 5% loss, up to 25 ms of delay) a crash was suspected
        // 214 ms after it against 271 judged at the period's end, and at 35% loss with 5-60
        // ms of delay the first-hand mistakes were no more (26 and 65 against 37 and 78, 32
        // and 64 members; docs/detectors.md, "The probe's window").
        swim_window: &'static str = rtt, Kind::Choice(&["rtt", "period"]),
            "swim: when a probe is judged: rtt (its timeout plus two round trips measured from its ACKs, half a period at least) or period (a period after its first PING)";
        // memberlist's LAN profile waits half its period (1 s / 500 ms); 70 ms here leaves the
        // indirect probes' four hops the rest of a 240 ms period.
        swim_probe_timeout_ms: u64 = 70, Kind::Int { min: 1, max: 60_000 },
            "swim: how long a direct probe's ACK is awaited before asking others, ms";
        // memberlist asks 3; 6 (every other member of 8) halves the suspicions of live
        // members under heavy loss, and costs nothing while probes are answered.
        // A probe of a live member fails only when every PING and every relayed path is lost:
        // re-sending the direct PING while it goes unanswered is what makes that rare under
        // heavy loss (docs/detectors.md, Measured, "datagrams counted, phi's beat period,
        // SWIM's re-sent PINGs").
        swim_retry_ms: u64 = 20, Kind::Int { min: 0, max: 60_000 },
            "swim: an unanswered direct PING is sent again this often within the period, ms (0: never)";
        swim_k: u64 = 6, Kind::Int { min: 0, max: 16 },
            "swim: members asked to probe indirectly when a direct probe goes unanswered";
        // memberlist's LAN value; at a 200 ms period the shortest timeout is 800 ms on up to
        // 10 members, still longer than the demo's 600 ms pause.
        swim_suspicion_mult: u64 = 4, Kind::Int { min: 1, max: 100 },
            "swim: shortest suspicion timeout, in probe periods times log10(members)";
        swim_suspicion_max_mult: u64 = 4, Kind::Int { min: 1, max: 100 },
            "swim: longest suspicion timeout (no confirmations), as a multiple of the shortest";
        // A failed probe of a live member, gossiped at once, was believed by every member before
        // the refutation caught up: one mistake at 64 members counted 60 times. Told first,
        // the suspect refutes to its suspecter, and nobody else hears (docs/detectors.md,
        // "The suspect told first").
        swim_hold: &'static str = rtt, Kind::Choice(&["rtt", "off"]),
            "swim: rtt (a first-hand suspicion goes to the suspect at once and is gossiped only if not refuted within two round trips) or off (gossiped at once, as SWIM does)";
    }
}

/// Refuses a `detector_watch` value the chosen detector cannot honour: phi's beats and SWIM's
/// probes go to every member by design, so `waits` (given explicitly) would be a word ignored.
pub(crate) fn check_watch(opts: &BTreeMap<String, String>) -> Result<(), String> {
    let o = DetectorOptions::read_map(opts, &[]);
    match opts.get("detector_watch").map(String::as_str) {
        Some("waits") if o.detector != "fixed" => Err(format!(
            "--set detector_watch=waits is for detector=fixed: {} watches every member it reaches by design \
             (drop the key, or give detector_watch=all)",
            o.detector
        )),
        _ => Ok(()),
    }
}

/// Whether the fixed detector sweeps every member it reaches (`detector_watch=all`) rather than
/// probing only what its host waits on.
pub(crate) fn watches_all(opts: &BTreeMap<String, String>) -> bool {
    DetectorOptions::read_map(opts, &[]).detector_watch == "all"
}

/// The detector chosen and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Choice {
    /// Suspect after a fixed silence (the timeout).
    Fixed,
    /// Phi accrual.
    Phi(PhiParams),
    /// SWIM with Lifeguard.
    Swim(SwimParams),
}

/// The phi accrual detector's parameters (Akka's names in brackets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhiParams {
    /// Suspect above this phi (`threshold`).
    pub threshold: f64,
    /// Inter-arrival samples kept (`max-sample-size`).
    pub window: usize,
    /// Smallest standard deviation assumed (`min-std-deviation`).
    pub min_std: Duration,
    /// Added to the mean (`acceptable-heartbeat-pause`).
    pub pause: Duration,
    /// How often beats are sent (`heartbeat-interval`; the key `phi_beat_ms`), also the first
    /// estimate of the mean.
    pub period: Duration,
    /// Peers' stamps relayed per BEAT (the key `phi_relay`).
    pub relay: usize,
}

/// SWIM's parameters (memberlist's names in brackets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwimParams {
    /// A probe is judged this long after its first PING (`ProbeInterval`, where one probe
    /// starts each period).
    pub period: Duration,
    /// Probes started per period, each judged a period after it started (1: SWIM).
    pub probes: u32,
    /// A direct probe's answer is awaited this long (`ProbeTimeout`).
    pub probe_timeout: Duration,
    /// An unanswered direct PING is sent again this often (zero: never).
    pub retry: Duration,
    /// Indirect probers asked (`IndirectChecks`).
    pub k: usize,
    /// `SuspicionMult`.
    pub suspicion_mult: u32,
    /// `SuspicionMaxTimeoutMult`.
    pub suspicion_max_mult: u32,
    /// Largest local health multiplier (`AwarenessMaxMultiplier`).
    pub max_lhm: u32,
    /// `swim_window=rtt`: a probe is judged once its timeout and two measured round trips
    /// have passed, not a whole period after its first PING.
    pub rtt_window: bool,
    /// `swim_hold=rtt`: a first-hand suspicion is told to its suspect first and gossiped only
    /// when no refutation came back within two round trips.
    pub hold: bool,
}

impl Choice {
    /// The detector `setup` asks for (values assumed checked against its keys).
    pub(crate) fn from_setup(setup: &Setup) -> Choice {
        Choice::from_opts(&setup.opts, setup.heartbeat)
    }

    /// The detector the `--set` options `opts` ask for, with a heartbeat period of `heartbeat`
    /// (phi's beat period when `phi_beat_ms` is 0; the launcher reads it too, to show each
    /// node's view in `status`).
    pub(crate) fn from_opts(opts: &BTreeMap<String, String>, heartbeat: Duration) -> Choice {
        let o = DetectorOptions::read_map(opts, &[]);
        let ms = Duration::from_millis;
        match o.detector {
            "phi" => Choice::Phi(PhiParams {
                threshold: o.phi_threshold,
                window: o.phi_window.max(2) as usize,
                min_std: ms(o.phi_min_std_ms),
                pause: ms(o.phi_pause_ms),
                period: match o.phi_beat_ms {
                    0 => heartbeat,
                    b => ms(b),
                },
                relay: o.phi_relay as usize,
            }),
            "swim" => Choice::Swim(SwimParams {
                period: ms(o.swim_period_ms),
                probes: o.swim_probes as u32,
                probe_timeout: ms(o.swim_probe_timeout_ms),
                retry: ms(o.swim_retry_ms),
                k: o.swim_k as usize,
                suspicion_mult: o.swim_suspicion_mult as u32,
                suspicion_max_mult: o.swim_suspicion_max_mult as u32,
                max_lhm: 8,
                rtt_window: o.swim_window == "rtt",
                hold: o.swim_hold == "rtt",
            }),
            _ => Choice::Fixed,
        }
    }

    /// Its name, as `detector=` takes it.
    pub fn name(&self) -> &'static str {
        match self {
            Choice::Fixed => "fixed",
            Choice::Phi(_) => "phi",
            Choice::Swim(_) => "swim",
        }
    }
}
