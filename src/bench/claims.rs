//! What a formula claims about a message count, and one measured count beside it.

/// What a formula claims about a count.
#[derive(Debug, Clone, Copy)]
pub enum Claim {
    /// The count this setup must produce.
    Exact(u64),
    /// An upper bound.
    Bound(u64),
    /// An average over random arrangements; one run is compared by its ratio.
    Average(f64),
}

impl Claim {
    /// The formula's value, as printed.
    pub(super) fn expected(&self) -> String {
        match *self {
            Claim::Exact(v) | Claim::Bound(v) => v.to_string(),
            Claim::Average(v) => format!("{v:.1}"),
        }
    }

    /// How `measured` stands against the claim: exact/DIFFERS, within/OVER, or a ratio.
    pub(super) fn verdict(&self, measured: u64) -> String {
        match *self {
            Claim::Exact(v) if v == measured => "exact".into(),
            Claim::Exact(v) => format!("DIFFERS ({:+})", measured as i64 - v as i64),
            Claim::Bound(v) if measured == v => "within (= bound)".into(),
            Claim::Bound(v) if measured < v => "within".into(),
            Claim::Bound(_) => "OVER".into(),
            Claim::Average(v) => format!("ratio {:.2}", measured as f64 / v),
        }
    }
}

/// One measured count beside its formula.
#[derive(Debug, Clone)]
pub(crate) struct Count {
    /// The message types summed, e.g. `ELECTION+ECHO`.
    pub messages: String,
    /// What the runs sent.
    pub measured: u64,
    /// The formula, as the course writes it.
    pub formula: String,
    /// Its value here, and how it binds.
    pub claim: Claim,
}

/// A count of `messages` beside `formula`.
pub(super) fn count(messages: &str, measured: u64, formula: impl Into<String>, claim: Claim) -> Count {
    Count {
        messages: messages.into(),
        measured,
        formula: formula.into(),
        claim,
    }
}

#[cfg(test)]
mod tests {
    use super::Claim;

    #[test]
    fn verdicts() {
        assert_eq!(Claim::Exact(5).verdict(5), "exact");
        assert_eq!(Claim::Exact(5).verdict(7), "DIFFERS (+2)");
        assert_eq!(Claim::Bound(64).verdict(64), "within (= bound)");
        assert_eq!(Claim::Bound(64).verdict(65), "OVER");
        assert_eq!(Claim::Average(10.0).verdict(12), "ratio 1.20");
    }
}
