//! The quorum's risk (`coordlab quorum-risk`): the probability P_v that a majority-quorum
//! mutual exclusion lets two in when each coordinator restarts (and forgets its grant) with
//! probability P, by the course's formula
//!
//!   P_v = sum over k from 2m-n to n of C(m,k) P^k (1-P)^(m-k),   C(m,k) = 0 for k > m,
//!
//! computed in log space (log-sum-exp), so that tiny results such as the course's example
//! (P = 0.0001, n = 32, m = 24, about 7e-59) print as numbers rather than 0. The protocol's
//! own rate, observed in the simulator, is [`risk_sim`](super::risk_sim)'s.

/// ln C(m, k).
fn ln_choose(m: u64, k: u64) -> f64 {
    (1..=k).map(|i| ((m - k + i) as f64).ln() - (i as f64).ln()).sum()
}

/// Checks n, m and P: m a majority of n, P a probability.
pub fn check(n: u64, m: u64, p: f64) -> Result<(), String> {
    if n == 0 {
        return Err("--n: at least one coordinator".into());
    }
    if m * 2 <= n || m > n {
        return Err(format!(
            "--m {m}: a quorum of {n} coordinators must be a majority, more than {} and at most {n}",
            n / 2
        ));
    }
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return Err(format!("--p {p}: a probability, between 0 and 1"));
    }
    Ok(())
}

/// log10 of P_v; negative infinity when P_v is exactly 0.
pub fn log10_violation(n: u64, m: u64, p: f64) -> f64 {
    let lo = (2 * m).saturating_sub(n);
    let terms: Vec<f64> = (lo..=m)
        .filter_map(|k| {
            let a = if k == 0 { 0.0 } else { k as f64 * p.ln() };
            let b = if m == k { 0.0 } else { (m - k) as f64 * (1.0 - p).ln() };
            let t = ln_choose(m, k) + a + b;
            t.is_finite().then_some(t)
        })
        .collect();
    let Some(max) = terms.iter().copied().reduce(f64::max) else {
        return f64::NEG_INFINITY;
    };
    let sum: f64 = terms.iter().map(|t| (t - max).exp()).sum();
    (max + sum.ln()) / std::f64::consts::LN_10
}

/// A probability from its log10, in scientific notation even far below f64's range (`7.35e-59`).
pub fn format_log10(l: f64) -> String {
    if l == f64::NEG_INFINITY {
        return "0".into();
    }
    let e = l.floor();
    let mut mant = 10f64.powf(l - e);
    let mut e = e as i64;
    if mant >= 9.995 {
        mant /= 10.0;
        e += 1;
    }
    format!("{mant:.3}e{e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_course_example_is_tiny_but_not_zero() {
        let l = log10_violation(32, 24, 0.0001);
        assert!(l < -40.0 && l > -70.0, "{l}");
        // k from 16 to 24: the first term dominates, C(24,16) = 735471.
        let first = (735_471f64).log10() - 64.0 + 8.0 * (0.9999f64).log10();
        assert!((l - first).abs() < 1e-3, "{l} vs {first}");
        assert_eq!(format_log10(l), "7.349e-59");
    }

    #[test]
    fn small_cases_match_by_hand() {
        // n = 3, m = 2: k from 1 to 2: 2P(1-P) + P^2.
        let p: f64 = 0.1;
        let exact = 2.0 * p * (1.0 - p) + p * p;
        assert!((10f64.powf(log10_violation(3, 2, p)) - exact).abs() < 1e-12);
        assert_eq!(log10_violation(3, 2, 0.0), f64::NEG_INFINITY);
        assert!(check(4, 2, 0.1).is_err() && check(3, 2, 1.5).is_err() && check(3, 2, 0.5).is_ok());
    }
}
