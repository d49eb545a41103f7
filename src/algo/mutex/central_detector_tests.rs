//! Central with `--set detector=fixed|phi|swim`, in the simulator: the coordinator (node 3)
//! regrants a holder its detector takes for dead, and no other.

use super::central::Central;
use super::testkit::{exits_after, first_to_enter, setups, sim};
use super::Mutex;
use crate::algo::Setup;
use crate::sim::{NetConfig, Sim};
use crate::trace::{Event, Record};
use std::time::Duration;

const DETECTORS: [&str; 3] = ["fixed", "phi", "swim"];
const COORDINATOR: u64 = 3;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Three participants and the resource; holds of `hold_ms`, fencing on, `detector`.
fn run(detector: &str, hold_ms: &str) -> Sim<Mutex<Central>> {
    let s = sim::<Central>(
        3,
        NetConfig::default(),
        &[
            ("think_ms", "20"),
            ("hold_ms", hold_ms),
            ("fencing", "true"),
            ("detector", detector),
        ],
    );
    assert_eq!(
        s.node(COORDINATOR).protocol().and_then(|p| p.detector()),
        Some(detector)
    );
    s
}

/// The coordinator's notes that it took `holder` for dead.
fn regrants_of(s: &Sim<Mutex<Central>>, holder: u64) -> Vec<Record> {
    let said = format!("suspects holder {holder} ");
    s.events("note")
        .into_iter()
        .filter(|r| r.node == Some(COORDINATOR))
        .filter(|r| matches!(&r.event, Event::Note { text, .. } if text.contains(&said)))
        .cloned()
        .collect()
}

/// When the verdict on `target` was reached: the coordinator's suspicion (fixed, phi), or a
/// confirmation (swim: by any member, since the coordinator may learn the death by gossip
/// from the member that confirmed it first).
fn verdicts_on(s: &Sim<Mutex<Central>>, detector: &str, target: u64) -> Vec<u64> {
    let swim = detector == "swim";
    s.events(if swim { "confirm" } else { "suspect" })
        .into_iter()
        .filter(|r| swim || r.node == Some(COORDINATOR))
        .filter(|r| match r.event {
            Event::Suspect { target: t, .. } | Event::Confirm { target: t, .. } => t == target,
            _ => false,
        })
        .map(|r| r.t)
        .collect()
}

/// Entries by nodes other than `not` after `t` (us).
fn entries_after(s: &Sim<Mutex<Central>>, not: u64, t: u64) -> Vec<u64> {
    s.events("cs_enter")
        .into_iter()
        .filter(|r| r.node != Some(not) && r.t > t)
        .map(|r| r.t)
        .collect()
}

#[test]
fn a_holder_killed_mid_hold_is_regranted_once_the_detector_takes_it_for_dead() {
    for d in DETECTORS {
        let mut s = run(d, "2000");
        let holder = first_to_enter(&mut s, ms(20_000), COORDINATOR);
        s.crash(holder);
        let t = s.now().as_micros() as u64;
        let entered = s.run_until(s.now() + ms(8000), |s| !entries_after(s, holder, t).is_empty());
        assert!(entered, "{d}: nobody entered after the holder {holder} died");
        let verdict = *verdicts_on(&s, d, holder)
            .first()
            .unwrap_or_else(|| panic!("{d}: no verdict on the dead holder"));
        let next = entries_after(&s, holder, t)[0];
        assert!(
            verdict >= t && verdict <= next,
            "{d}: entry at {next} us before the verdict at {verdict} us"
        );
        assert_eq!(regrants_of(&s, holder).len(), 1, "{d}");
        if d == "phi" {
            let cause = s.events("suspect").into_iter().find_map(|r| match &r.event {
                Event::Suspect { target, cause, phi, .. } if *target == holder && r.node == Some(COORDINATOR) => {
                    Some((cause.clone(), *phi))
                }
                _ => None,
            });
            let (cause, phi) = cause.expect("phi's suspicion");
            assert_eq!(cause, "phi");
            assert!(phi.is_some_and(|p| p > 8.0), "{phi:?}");
        }
    }
}

#[test]
fn a_participant_killed_while_it_waits_does_not_block_the_others() {
    for d in DETECTORS {
        let mut s = run(d, "300");
        let holder = first_to_enter(&mut s, ms(20_000), COORDINATOR);
        // The other participant waits in the queue (or soon will): kill it.
        let waiter = if holder == 1 { 2 } else { 1 };
        s.crash(waiter);
        let t = s.now();
        let served = s.run_until(t + ms(10_000), |s| {
            [holder, COORDINATOR].iter().all(|&n| exits_after(s, n, t) >= 5)
        });
        assert!(served, "{d}: blocked by the dead {waiter}");
        assert!(s.events("violation").is_empty(), "{d}");
    }
}

#[test]
fn a_holder_paused_briefly_keeps_its_grant() {
    for d in DETECTORS {
        let mut s = run(d, "1000");
        let holder = first_to_enter(&mut s, ms(20_000), COORDINATOR);
        let t = s.now().as_micros() as u64;
        s.pause(holder);
        s.run_for(ms(150));
        s.resume(holder);
        s.run_for(ms(1500));
        assert!(
            regrants_of(&s, holder).is_empty(),
            "{d}: regranted after a 150 ms pause"
        );
        assert!(verdicts_on(&s, d, holder).is_empty(), "{d}");
        assert!(
            s.events("violation").is_empty() && s.events("reject_stale").is_empty(),
            "{d}"
        );
        assert!(
            s.events("cs_exit").iter().any(|r| r.node == Some(holder) && r.t > t),
            "{d}: the holder finished its hold"
        );
    }
}

#[test]
fn a_holder_paused_long_is_regranted_and_fencing_rejects_its_stale_write() {
    for d in DETECTORS {
        let mut s = run(d, "1000");
        let holder = first_to_enter(&mut s, ms(20_000), COORDINATOR);
        let t = s.now().as_micros() as u64;
        s.pause(holder);
        // SWIM's suspicion timeout without confirmations is up to 3.6 s here.
        s.run_until(s.now() + ms(8000), |s| !entries_after(s, holder, t).is_empty());
        assert_eq!(
            regrants_of(&s, holder).len(),
            1,
            "{d}: the paused holder was taken for dead"
        );
        assert!(!entries_after(&s, holder, t).is_empty(), "{d}: the next entered");
        s.resume(holder);
        s.run_for(ms(1500));
        assert!(s.events("violation").is_empty(), "{d}: fenced");
        assert!(
            !s.events("reject_stale").is_empty(),
            "{d}: the stale holder's END is rejected"
        );
        // Back, it is no longer taken for dead (SWIM: it refuted), so nobody stays blocked.
        let live = s
            .node(COORDINATOR)
            .protocol()
            .and_then(|p| p.watch())
            .map(|w| w.live().is_suspected(holder));
        assert_eq!(live, Some(false), "{d}: still suspected after it came back");
    }
}

#[test]
fn the_coordinators_own_pause_is_no_evidence_against_the_holder() {
    for d in DETECTORS {
        let mut s = run(d, "6000");
        let holder = first_to_enter(&mut s, ms(20_000), COORDINATOR);
        s.pause(COORDINATOR);
        s.run_for(ms(2000));
        s.resume(COORDINATOR);
        s.run_for(ms(1500));
        assert!(regrants_of(&s, holder).is_empty(), "{d}: regranted on its own pause");
        assert!(verdicts_on(&s, d, holder).is_empty(), "{d}");
        assert!(s.events("violation").is_empty(), "{d}");
        assert_eq!(
            s.node(COORDINATOR).protocol().and_then(|p| p.holder()),
            Some(holder),
            "{d}"
        );
    }
}

#[test]
fn default_runs_host_no_detector_and_send_no_detector_traffic() {
    let mut s = sim::<Central>(3, NetConfig::default(), &[("think_ms", "20"), ("hold_ms", "20")]);
    assert_eq!(s.node(COORDINATOR).protocol().and_then(|p| p.detector()), None);
    s.run_for(ms(2000));
    for name in ["PROBE", "ALIVE", "BEAT", "PING", "HOLDING"] {
        assert_eq!(s.sent(name), 0, "{name}");
    }
    assert!(s.events("cs_exit").len() >= 10);
}

fn checked(opts: &[(&str, &str)]) -> Result<(), String> {
    let s: Setup = setups(3, opts).remove(1);
    Mutex::<Central>::check(&s, "central")
}

#[test]
fn a_detector_key_is_taken_only_where_it_is_read() {
    assert!(checked(&[("detector", "phi"), ("phi_threshold", "5")]).is_ok());
    assert!(checked(&[("detector", "swim"), ("swim_k", "1")]).is_ok());
    assert!(checked(&[("regrant_ms", "100")]).is_ok());
    let both = checked(&[("detector", "fixed"), ("regrant_ms", "100")]).unwrap_err();
    assert!(both.contains("give one"), "{both}");
    let alone = checked(&[("phi_threshold", "5")]).unwrap_err();
    assert!(alone.contains("add --set detector=phi"), "{alone}");
    let other = checked(&[("detector", "phi"), ("swim_k", "1")]).unwrap_err();
    assert!(other.contains("add --set detector=swim"), "{other}");
    let bad = checked(&[("detector", "chi")]).unwrap_err();
    assert!(bad.contains("fixed, phi or swim"), "{bad}");
}

#[test]
fn a_waiter_whose_grant_was_lost_and_taken_back_is_served_when_it_asks_again() {
    // Found by a chaos soak: the GRANT to node 3 was lost, the coordinator took node 3 (paused)
    // for dead and granted the next, and then took node 3's repeated REQUEST for one already
    // served: node 3 waited for ever.
    for d in DETECTORS {
        let mut s = run(d, "300");
        let holder = first_to_enter(&mut s, ms(20_000), COORDINATOR);
        let waiter = if holder == 1 { 2 } else { 1 };
        let t = s.now().as_micros() as u64;
        let queued = |s: &Sim<Mutex<Central>>| {
            s.events("recv").iter().any(|r| {
                r.node == Some(COORDINATOR)
                    && r.t > t
                    && matches!(&r.event, Event::Recv { from, msg, .. } if *from == waiter && msg == "REQUEST")
            })
        };
        assert!(
            s.run_until(s.now() + ms(5000), queued),
            "{d}: node {waiter} never asked"
        );
        // Its GRANT, when the holder leaves, is cut off, and so is everything else it would say
        // or hear (phi hears a peer through the others' relays, SWIM through indirect probes).
        s.partition(&[waiter], &[holder, COORDINATOR]);
        let cut = s.now();
        s.run_until(cut + ms(8000), |s| !regrants_of(s, waiter).is_empty());
        assert!(
            !regrants_of(&s, waiter).is_empty(),
            "{d}: node {waiter} never taken for dead"
        );
        s.heal();
        let healed = s.now().as_micros() as u64;
        let served = |s: &Sim<Mutex<Central>>| {
            s.events("cs_enter")
                .iter()
                .any(|r| r.node == Some(waiter) && r.t > healed)
        };
        assert!(
            s.run_until(s.now() + ms(5000), served),
            "{d}: node {waiter} was never served"
        );
        assert!(s.events("violation").is_empty(), "{d}");
    }
}

#[test]
fn the_detectors_check_never_probes_or_suspects_its_own_node() {
    // Found by a chaos soak: fixed's check, armed while another node held, fired while the
    // coordinator held its own grant, and the coordinator PROBEd and then suspected itself.
    use super::central::{CentralMsg, CentralTimer};
    use super::central_detector::HolderWatch;
    use super::{Ask, MutexView};
    use crate::algo::detector::LiveTimer;
    use crate::algo::{Command, Context};
    let setup = setups(3, &[("detector", "fixed")])
        .into_iter()
        .find(|s| s.me == COORDINATOR)
        .unwrap();
    let mut w = HolderWatch::new(&setup, &[1, 2, 3]);
    let view = MutexView { peers: vec![1, 2, 3] };
    let mut rng = crate::rng::Rng::new(1);
    for k in 1..=4u64 {
        let mut out = Vec::new();
        let mut cx: Context<'_, CentralMsg, CentralTimer> = Context::new(ms(400 * k), COORDINATOR, &mut rng, &mut out);
        let ((), inner) = cx.run_inner(
            &view,
            |pcx: &mut Context<'_, CentralMsg, CentralTimer, Ask, MutexView>| {
                w.on_timer(pcx, LiveTimer::Check, &[COORDINATOR])
            },
        );
        for c in inner {
            match c {
                Command::Send(to, m) => assert_ne!(to, COORDINATOR, "check {k}: {m:?} to itself"),
                Command::Record(Event::Suspect { target, .. }) => assert_ne!(target, COORDINATOR, "check {k}"),
                _ => {}
            }
        }
    }
}
