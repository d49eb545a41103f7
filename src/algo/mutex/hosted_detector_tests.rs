//! The mutual-exclusion algorithms that host the family's detector besides central, with
//! `--set detector=fixed|phi|swim`, in the simulator:
//! - the token algorithms (token ring, Suzuki-Kasami): the token skips a node its holder's
//!   detector takes for dead, so a dead node costs lost tokens until the verdict and not one
//!   every lap (or every release) for ever;
//! - the permission algorithms (Ricart-Agrawala, Lamport): a node taken for dead is not waited
//!   on, so a dead node blocks nobody after the verdict, where without a detector it blocks
//!   every request for ever.
//!
//! - the voting algorithms (quorum, Maekawa): a vote held by a node taken for dead is taken
//!   back, and a Maekawa request moves to a grid quorum without it
//!   (`voting_detector_tests.rs`).
//!
//! In all, a node only paused gets its turn back, and one paused long enough to be taken for
//! dead while it held has its stale write refused by fencing.

use super::ballot::VoterLive;
use super::lamport::{Lamport, LamportLive};
use super::maekawa::Maekawa;
use super::peer_watch::PeerWatch;
use super::quorum::Quorum;
use super::ricart_agrawala::{RaLive, RicartAgrawala};
use super::suzuki_kasami::{SkLive, SuzukiKasami};
use super::testkit::{exits_after, minted, rough, setups, sim};
use super::token_ring::{TokenLive, TokenRing};
use super::{Mutex, Protocol};
use crate::algo::Setup;
use crate::sim::{NetConfig, Sim};
use crate::trace::Event;
use std::time::Duration;

pub(super) const DETECTORS: [&str; 3] = ["fixed", "phi", "swim"];

/// An algorithm that hosts the detector.
pub(super) trait Hosts: Protocol + 'static {
    const NAME: &'static str;
    /// Whether it circulates a token (regenerated when lost).
    const TOKEN: bool;
    /// Whether a node left alone still enters (not with votes: a majority, or a whole grid
    /// row, must be alive).
    const ALONE: bool;
    type Slot;
    fn watch(&self) -> Option<&PeerWatch<Self::Slot>>;
}

macro_rules! hosts {
    ($($p:ty, $name:literal, $token:literal, $alone:literal, $slot:ty;)*) => {$(
        impl Hosts for $p {
            const NAME: &'static str = $name;
            const TOKEN: bool = $token;
            const ALONE: bool = $alone;
            type Slot = $slot;
            fn watch(&self) -> Option<&PeerWatch<$slot>> {
                <$p>::watch(self)
            }
        }
    )*};
}

hosts! {
    TokenRing, "token-ring", true, true, TokenLive;
    SuzukiKasami, "suzuki-kasami", true, true, SkLive;
    RicartAgrawala, "ricart-agrawala", false, true, RaLive;
    Lamport, "lamport", false, true, LamportLive;
    Quorum, "quorum", false, false, VoterLive;
    Maekawa, "maekawa", false, false, VoterLive;
}

/// Runs the generic test `$f` for every algorithm that hosts the detector besides central.
macro_rules! every_host {
    ($f:ident) => {
        $f::<TokenRing>();
        $f::<SuzukiKasami>();
        $f::<RicartAgrawala>();
        $f::<Lamport>();
        $f::<Quorum>();
        $f::<Maekawa>();
    };
}

pub(super) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Five participants under full contention with fencing, hosting `detector` (none: ""), run
/// for half a second.
pub(super) fn run<P: Hosts>(detector: &str) -> Sim<Mutex<P>> {
    let mut opts = vec![("think_ms", "0"), ("hold_ms", "5"), ("fencing", "true")];
    if !detector.is_empty() {
        opts.push(("detector", detector));
    }
    let mut s = sim::<P>(5, NetConfig::default(), &opts);
    let hosted = s.node(1).protocol().and_then(|p| p.watch()).map(|w| w.detector());
    assert_eq!(hosted, (!detector.is_empty()).then_some(detector), "{}", P::NAME);
    s.run_for(ms(500));
    s
}

/// Whether node `by` takes node `of` for dead.
fn taken_for_dead<P: Hosts>(s: &Sim<Mutex<P>>, by: u64, of: u64) -> bool {
    s.node(by)
        .protocol()
        .and_then(|p| p.watch())
        .is_some_and(|w| w.takes_for_dead(of))
}

/// Tokens minted after simulated time `t`.
fn minted_after<P: Protocol>(s: &Sim<Mutex<P>>, t: Duration) -> usize {
    let t = t.as_micros() as u64;
    s.events("note")
        .into_iter()
        .filter(|r| r.t > t && matches!(&r.event, Event::Note { text, .. } if text.starts_with("minted")))
        .count()
}

/// Kills node 3 of a run of `P` hosting detector `d` and runs 6 s: every other node keeps
/// entering once the verdict is in (3.5 s after the kill: with fixed and phi it comes in a
/// timeout or two, with swim after its suspicion timeout, 2-3 s, longer with fewer
/// confirmations), and one of them says it goes on without node 3. Returns the run and when it
/// settled.
fn without_a_dead_node<P: Hosts>(d: &str) -> (Sim<Mutex<P>>, Duration) {
    let name = P::NAME;
    let mut s = run::<P>(d);
    s.crash(3);
    let settled = s.now() + ms(3500);
    s.run_for(ms(6000));
    for n in [1, 2, 4, 5] {
        assert!(
            exits_after(&s, n, settled) >= 20,
            "{name}, {d}: node {n} stopped entering"
        );
    }
    let told = s
        .events("note")
        .into_iter()
        .any(|r| matches!(&r.event, Event::Note { text, .. } if text.contains("takes [3] for dead")));
    assert!(told, "{name}, {d}: no node says it goes on without node 3");
    assert!(s.events("violation").is_empty(), "{name}, {d}");
    (s, settled)
}

fn a_dead_node_costs_lost_tokens_until_the_verdict<P: Hosts>() {
    let name = P::NAME;
    // Without a detector the token goes to the dead node again and again, and is regenerated
    // each time.
    let mut plain = run::<P>("");
    plain.crash(3);
    plain.run_for(ms(6000));
    let baseline = minted(&plain).len() - 1;
    assert!(baseline >= 4, "{name} without a detector: {baseline} regenerations");
    for d in DETECTORS {
        let (s, settled) = without_a_dead_node::<P>(d);
        assert_eq!(minted_after(&s, settled), 0, "{name}, {d}: still losing tokens");
    }
}

#[test]
fn a_dead_node_costs_lost_tokens_until_the_verdict_and_none_after() {
    a_dead_node_costs_lost_tokens_until_the_verdict::<TokenRing>();
    a_dead_node_costs_lost_tokens_until_the_verdict::<SuzukiKasami>();
}

fn a_dead_node_blocks_until_the_verdict<P: Hosts>() {
    let name = P::NAME;
    // Without a detector, every request waits for the dead node's word for ever.
    let mut plain = run::<P>("");
    plain.crash(3);
    let t = plain.now();
    plain.run_for(ms(4000));
    let stuck: usize = [1, 2, 4, 5].iter().map(|&n| exits_after(&plain, n, t + ms(500))).sum();
    assert_eq!(stuck, 0, "{name} without a detector went on without the dead node");
    for d in DETECTORS {
        without_a_dead_node::<P>(d);
    }
}

#[test]
fn a_dead_node_blocks_the_permission_algorithms_only_until_the_verdict() {
    a_dead_node_blocks_until_the_verdict::<RicartAgrawala>();
    a_dead_node_blocks_until_the_verdict::<Lamport>();
}

/// The node inside the section now, if any.
pub(super) fn inside<P: Protocol>(s: &Sim<Mutex<P>>) -> Option<u64> {
    (1..=5).find(|&n| matches!(s.node(n).phase(), Some(super::wrapper::Phase::Holding(_))))
}

pub(super) fn a_holder_paused_long_is_fenced<P: Hosts>() {
    for d in DETECTORS {
        let opts = [
            ("think_ms", "20"),
            ("hold_ms", "1000"),
            ("fencing", "true"),
            ("detector", d),
        ];
        let mut s = sim::<P>(5, NetConfig::default(), &opts);
        assert!(
            s.run_until(ms(5000), |s| inside(s).is_some()),
            "{}, {d}: nobody entered",
            P::NAME
        );
        let holder = inside(&s).unwrap_or_default();
        let t = s.now();
        s.pause(holder);
        let others = |s: &Sim<Mutex<P>>| (1..=5).filter(|&n| n != holder).any(|n| exits_after(s, n, t) > 0);
        assert!(
            s.run_until(t + ms(8000), others),
            "{}, {d}: blocked by the paused holder",
            P::NAME
        );
        s.resume(holder);
        let back = s.now().as_micros() as u64;
        // Back, it waits its turn behind the others' holds of a second each.
        let again = |s: &Sim<Mutex<P>>| {
            s.events("cs_enter")
                .iter()
                .any(|r| r.node == Some(holder) && r.t > back)
        };
        assert!(
            s.run_until(s.now() + ms(10_000), again),
            "{}, {d}: the resumed holder never entered again",
            P::NAME
        );
        assert!(s.events("violation").is_empty(), "{}, {d}: fenced", P::NAME);
        assert!(
            !s.events("reject_stale").is_empty(),
            "{}, {d}: the stale holder's write is refused",
            P::NAME
        );
        assert!(
            !taken_for_dead(&s, 1 + holder % 5, holder),
            "{}, {d}: still taken for dead",
            P::NAME
        );
    }
}

#[test]
fn a_holder_paused_long_is_taken_for_dead_and_fencing_refuses_its_stale_write() {
    a_holder_paused_long_is_fenced::<RicartAgrawala>();
    a_holder_paused_long_is_fenced::<Lamport>();
}

fn a_node_paused_long_gets_its_turn_back<P: Hosts>() {
    for d in DETECTORS {
        let mut s = run::<P>(d);
        s.pause(3);
        s.run_for(ms(5000));
        assert!(
            taken_for_dead(&s, 2, 3),
            "{}, {d}: node 2 takes the paused node for dead",
            P::NAME
        );
        s.resume(3);
        let t = s.now();
        s.run_for(ms(3000));
        assert!(
            exits_after(&s, 3, t) >= 5,
            "{}, {d}: the resumed node never had the token again",
            P::NAME
        );
        // The resumed node may have held a token of an old generation: fencing rejects its write.
        assert!(s.events("violation").is_empty(), "{}, {d}", P::NAME);
    }
}

#[test]
fn a_node_paused_long_is_skipped_and_gets_its_turn_back_once_heard() {
    every_host!(a_node_paused_long_gets_its_turn_back);
}

fn a_brief_pause_is_no_death<P: Hosts>() {
    for d in DETECTORS {
        let mut s = run::<P>(d);
        s.pause(3);
        s.run_for(ms(150));
        s.resume(3);
        s.run_for(ms(2000));
        let verdicts = s
            .events(if d == "swim" { "confirm" } else { "suspect" })
            .into_iter()
            .filter(|r| {
                matches!(
                    r.event,
                    Event::Suspect { target: 3, .. } | Event::Confirm { target: 3, .. }
                )
            })
            .count();
        assert_eq!(verdicts, 0, "{}, {d}: a 150 ms pause taken for death", P::NAME);
        if P::TOKEN {
            assert_eq!(minted(&s).len(), 1, "{}, {d}: a token regenerated", P::NAME);
        }
        assert!(
            exits_after(&s, 3, ms(700)) > 0,
            "{}, {d}: the paused node never entered again",
            P::NAME
        );
    }
}

#[test]
fn a_node_paused_briefly_is_not_skipped() {
    every_host!(a_brief_pause_is_no_death);
}

fn the_last_one_keeps_the_token<P: Hosts>() {
    if !P::ALONE {
        return;
    }
    for d in DETECTORS {
        let mut s = run::<P>(d);
        for n in [2, 3, 4, 5] {
            s.crash(n);
        }
        let t = s.now();
        // SWIM confirms a death with nobody to confirm the suspicion only after its longest
        // suspicion timeout (3.84 s here).
        s.run_for(ms(9000));
        assert!(
            exits_after(&s, 1, t + ms(6000)) >= 20,
            "{}, {d}: node 1 alone stopped entering",
            P::NAME
        );
    }
}

#[test]
fn with_every_other_node_dead_the_last_one_keeps_entering() {
    every_host!(the_last_one_keeps_the_token);
}

fn no_detector_traffic<P: Hosts>() {
    let s = run::<P>("");
    for name in ["PROBE", "ALIVE", "BEAT", "PING"] {
        assert_eq!(s.sent(name), 0, "{}: {name}", P::NAME);
    }
}

#[test]
fn default_runs_host_no_detector_and_send_no_detector_traffic() {
    every_host!(no_detector_traffic);
}

fn keys_taken_only_where_read<P: Hosts>() {
    let checked = |opts: &[(&str, &str)]| {
        let s: Setup = setups(3, opts).remove(1);
        Mutex::<P>::check(&s, P::NAME)
    };
    assert!(checked(&[("detector", "phi"), ("phi_threshold", "5")]).is_ok());
    assert!(checked(&[("detector", "swim"), ("swim_k", "1")]).is_ok());
    let alone = checked(&[("phi_threshold", "5")]).unwrap_err();
    assert!(alone.contains("add --set detector=phi"), "{alone}");
    let watch = checked(&[("detector_watch", "all")]).unwrap_err();
    assert!(watch.contains(&format!("{}'s detector", P::NAME)), "{watch}");
    let bad = checked(&[("detector", "chi")]).unwrap_err();
    assert!(bad.contains("fixed, phi or swim"), "{bad}");
}

#[test]
fn a_detector_key_is_taken_only_where_it_is_read() {
    every_host!(keys_taken_only_where_read);
}

fn soak<P: Hosts>() {
    for d in DETECTORS {
        for seed in 0..8 {
            let mut s = sim::<P>(
                5,
                rough(seed),
                &[
                    ("think_ms", "2"),
                    ("hold_ms", "3"),
                    ("fencing", "true"),
                    ("detector", d),
                ],
            );
            let mut rng = crate::rng::Rng::new(seed);
            let dead = rng.range(1, 6);
            for step in 0..8 {
                s.run_for(ms(rng.range(20, 400)));
                let victim = rng.range(1, 6);
                if step == 3 {
                    s.crash(dead);
                } else if victim != dead || step < 3 {
                    // Pauses shorter and longer than the timeouts; sometimes a crash and restart.
                    if rng.chance(0.3) {
                        s.crash(victim);
                        s.run_for(ms(rng.range(0, 200)));
                        s.restart(victim);
                    } else {
                        s.pause(victim);
                        s.run_for(ms(rng.range(5, 1500)));
                        s.resume(victim);
                    }
                }
            }
            let t = s.now();
            s.run_for(ms(8000));
            let what = format!("{}, {d}, seed {seed}, {dead} dead", P::NAME);
            assert!(
                s.events("violation").is_empty(),
                "{what}: two holders reached the resource"
            );
            for n in (1..=5).filter(|&n| n != dead) {
                assert!(
                    exits_after(&s, n, t + ms(5000)) >= 10,
                    "{what}: node {n} stopped entering"
                );
            }
        }
    }
}

#[test]
fn a_seeded_soak_of_pauses_crashes_and_restarts_on_a_rough_network_stays_fenced_and_live() {
    every_host!(soak);
}
