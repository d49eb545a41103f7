//! The launcher's clock flags turned into each node's [`ClockSpec`]: `--clock-offset-ms` and
//! `--clock-drift-ppm` (`ID:VALUE,...`), `--clock-skew random:MAXMS,MAXPPM` (from the seed;
//! the explicit flags win for the nodes they name).

use super::ClockSpec;
use crate::algo::options::{id_list, IdListError};
use crate::rng::Rng;
use crate::trace::NodeId;
use std::collections::BTreeMap;

/// Parses `ID:VALUE,...` for `flag`, refusing unknown ids, duplicates and non-numbers.
fn per_node(flag: &str, spec: &str, ids: &[NodeId]) -> Result<BTreeMap<NodeId, f64>, String> {
    let list = id_list::<f64>(spec, ids).map_err(|e| match e {
        IdListError::NotPair(part) => format!("{flag}: '{part}' is not ID:VALUE (e.g. 3:-120)"),
        IdListError::BadId { id, .. } => format!("{flag}: '{id}' is not a node id"),
        IdListError::BadValue { value, .. } => format!("{flag}: '{value}' is not a number"),
        IdListError::NotMember(id) => format!("{flag}: node {id} is not in the launch"),
        IdListError::Twice(id) => format!("{flag}: node {id} appears twice"),
    })?;
    if let Some((_, v)) = list.iter().find(|(_, v)| !(v.is_finite() && v.abs() <= 1e9)) {
        return Err(format!("{flag}: '{v}' is not a number"));
    }
    if list.is_empty() {
        return Err(format!("{flag} is empty"));
    }
    Ok(list.into_iter().collect())
}

/// Parses `random:MAXMS,MAXPPM`.
fn random_spec(spec: &str) -> Result<(f64, f64), String> {
    let bad = || format!("--clock-skew: '{spec}' is not random:MAXMS,MAXPPM (e.g. random:200,100)");
    let rest = spec.trim().strip_prefix("random:").ok_or_else(bad)?;
    let (ms, ppm) = rest.split_once(',').ok_or_else(bad)?;
    let num = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0 && *x <= 1e6)
    };
    match (num(ms), num(ppm)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(bad()),
    }
}

/// Every node's clock for a launch of `ids` with these flags and seed; the error names the flag.
pub(crate) fn plan_clocks(
    ids: &[NodeId],
    offset_ms: Option<&str>,
    drift_ppm: Option<&str>,
    skew: Option<&str>,
    seed: u64,
) -> Result<BTreeMap<NodeId, ClockSpec>, String> {
    let mut out: BTreeMap<NodeId, ClockSpec> = ids.iter().map(|&id| (id, ClockSpec::default())).collect();
    if let Some(s) = skew {
        let (ms, ppm) = random_spec(s)?;
        let mut rng = Rng::new(seed ^ 0xc10c_c10c);
        let mut uniform = |max: f64| (rng.range(0, 2_000_001) as f64 / 1_000_000.0 - 1.0) * max;
        for spec in out.values_mut() {
            spec.offset_us = (uniform(ms) * 1000.0).round() as i64;
            spec.drift_ppm = uniform(ppm).round();
        }
    }
    if let Some(s) = offset_ms {
        for (id, v) in per_node("--clock-offset-ms", s, ids)? {
            out.get_mut(&id).expect("checked").offset_us = (v * 1000.0).round() as i64;
        }
    }
    if let Some(s) = drift_ppm {
        for (id, v) in per_node("--clock-drift-ppm", s, ids)? {
            if v.abs() >= 100_000.0 {
                return Err(format!(
                    "--clock-drift-ppm: {v} ppm for node {id} is beyond 100000 (10%)"
                ));
            }
            out.get_mut(&id).expect("checked").drift_ppm = v;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::plan_clocks;

    #[test]
    fn flags_make_each_node_s_clock_and_bad_ones_are_named() {
        let ids = [1, 2, 3];
        let c = plan_clocks(&ids, Some("2:-120,3:40.5"), Some("1:50"), None, 1).unwrap();
        assert_eq!(c[&1].offset_us, 0);
        assert_eq!(c[&1].drift_ppm, 50.0);
        assert_eq!(c[&2].offset_us, -120_000);
        assert_eq!(c[&3].offset_us, 40_500);
        let r = plan_clocks(&ids, None, None, Some("random:200,100"), 7).unwrap();
        assert!(r
            .values()
            .all(|s| s.offset_us.abs() <= 200_000 && s.drift_ppm.abs() <= 100.0));
        assert!(r.values().any(|s| s.offset_us != 0));
        assert_eq!(r, plan_clocks(&ids, None, None, Some("random:200,100"), 7).unwrap());
        for (o, d, s, want) in [
            (Some("9:1"), None, None, "node 9 is not in the launch"),
            (Some("1=5"), None, None, "not ID:VALUE"),
            (Some("1:x"), None, None, "'x' is not a number"),
            (None, Some("1:1,1:2"), None, "appears twice"),
            (None, None, Some("uniform:1,2"), "random:MAXMS,MAXPPM"),
            (None, None, Some("random:5"), "random:MAXMS,MAXPPM"),
        ] {
            let e = plan_clocks(&ids, o, d, s, 1).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
