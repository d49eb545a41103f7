//! The `--set` keys an algorithm or its family takes: a name, a type, a default and one line of
//! help, and the check of a value against its type.

use crate::algo::Setup;

/// What values a key takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// `true`/`false` (also `1`/`0`, `yes`/`no`, as [`Setup::flag`] reads them).
    Bool,
    /// A whole number from `min` to `max`.
    Int {
        /// The smallest accepted.
        min: u64,
        /// The largest accepted.
        max: u64,
    },
    /// A number from `min` to `max`.
    Float {
        /// The smallest accepted.
        min: f64,
        /// The largest accepted.
        max: f64,
    },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A list `ID:N,ID:N,...` of members, each given once, with whole numbers up to `max`.
    IdWeights {
        /// The largest number accepted.
        max: u64,
    },
}

/// Who may give a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetBy {
    /// The user, with `--set KEY=VALUE`.
    User,
    /// The launcher alone (e.g. `mesh` on `coordlab mesh`): refused from the user's `--set`.
    Launcher,
}

/// One `--set` key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    /// Its name, as written in `--set NAME=VALUE`.
    pub name: &'static str,
    /// Its values.
    pub kind: Kind,
    /// What holds without it, in words (`false`, `100`, `1 each`).
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Who gives it.
    pub set_by: SetBy,
}

/// Parses a boolean value the way [`Setup::flag`] reads it.
fn boolean(v: &str) -> Option<bool> {
    match v {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

impl Kind {
    /// The type in a few characters, for `coordlab algos`.
    pub fn describe(&self) -> String {
        match *self {
            Kind::Bool => "true|false".into(),
            Kind::Int { min, max } if max == u64::MAX => format!("integer >= {min}"),
            Kind::Int { min, max } => format!("integer {min}..{max}"),
            Kind::Float { min, max } => format!("number {min}..{max}"),
            Kind::Choice(words) => words.join("|"),
            Kind::IdWeights { .. } => "ID:N,ID:N,...".into(),
        }
    }

    /// Checks `value` of key `key` for a node of `setup` (members matter for id lists); the
    /// error is one line naming the key, the value and what was expected.
    pub fn check(&self, key: &str, value: &str, setup: &Setup) -> Result<(), String> {
        let bad = |expected: String| Err(format!("--set {key}={value}: expected {expected}"));
        match *self {
            Kind::Bool if boolean(value).is_some() => Ok(()),
            Kind::Bool => bad("true or false".into()),
            Kind::Int { min, max } => match value.trim().parse::<u64>() {
                Ok(v) if (min..=max).contains(&v) => Ok(()),
                _ => bad(self.describe().replace("integer", "a whole number")),
            },
            Kind::Float { min, max } => match value.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && (min..=max).contains(&v) => Ok(()),
                _ => bad(format!("a number from {min} to {max}")),
            },
            Kind::Choice(words) if words.contains(&value) => Ok(()),
            Kind::Choice(words) => bad(or_list(words)),
            Kind::IdWeights { max } => id_weights(key, value, max, &setup.members).map(|_| ()),
        }
    }
}

/// Parses `ID:N,ID:N,...` naming members of `members` once each, N at most `max`.
pub fn id_weights(key: &str, value: &str, max: u64, members: &[u64]) -> Result<Vec<(u64, u64)>, String> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let parsed = part
            .split_once(':')
            .and_then(|(id, n)| Some((id.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?)));
        let Some((id, n)) = parsed else {
            return Err(format!("--set {key}: '{part}' is not ID:N (e.g. {key}=1:5,2:3)"));
        };
        if !members.contains(&id) {
            return Err(format!("--set {key}: node {id} is not a member"));
        }
        if n > max {
            return Err(format!("--set {key}: node {id} has {n}; at most {max}"));
        }
        if out.iter().any(|&(x, _)| x == id) {
            return Err(format!("--set {key}: node {id} appears twice"));
        }
        out.push((id, n));
    }
    Ok(out)
}

/// The key of `keys` nearest to `typo` by edit distance, when near enough to be a slip.
pub fn nearest<'a>(typo: &str, keys: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    keys.into_iter()
        .map(|k| (distance(typo, k), k))
        .filter(|&(d, k)| d <= 2.max(k.len() / 3))
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != cb)).min(up + 1).min(row[j] + 1);
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> Setup {
        Setup::new(1, vec![1, 2, 3], vec![2, 3])
    }

    #[test]
    fn each_kind_accepts_its_values_and_names_what_it_expected() {
        let s = setup();
        let check = |k: Kind, v: &str| k.check("k", v, &s);
        for v in ["true", "false", "1", "0", "yes", "no"] {
            assert_eq!(check(Kind::Bool, v), Ok(()));
        }
        assert_eq!(
            check(Kind::Bool, "ture"),
            Err("--set k=ture: expected true or false".into())
        );
        let int = Kind::Int { min: 1, max: 10 };
        assert_eq!(check(int, "10"), Ok(()));
        assert_eq!(check(int, "0"), Err("--set k=0: expected a whole number 1..10".into()));
        assert_eq!(
            check(int, "-3"),
            Err("--set k=-3: expected a whole number 1..10".into())
        );
        let any = Kind::Int { min: 1, max: u64::MAX };
        assert_eq!(check(any, "x"), Err("--set k=x: expected a whole number >= 1".into()));
        let f = Kind::Float { min: 0.0, max: 1.0 };
        assert_eq!(check(f, "0.25"), Ok(()));
        assert_eq!(
            check(f, "NaN"),
            Err("--set k=NaN: expected a number from 0 to 1".into())
        );
        assert_eq!(
            check(f, "1.5"),
            Err("--set k=1.5: expected a number from 0 to 1".into())
        );
        let c = Kind::Choice(&["a", "b", "c"]);
        assert_eq!(check(c, "b"), Ok(()));
        assert_eq!(check(c, "d"), Err("--set k=d: expected a, b or c".into()));
        let w = Kind::IdWeights { max: 9 };
        assert_eq!(check(w, "1:5, 3:2"), Ok(()));
        assert_eq!(
            check(w, "1=5"),
            Err("--set k: '1=5' is not ID:N (e.g. k=1:5,2:3)".into())
        );
        assert_eq!(check(w, "7:1"), Err("--set k: node 7 is not a member".into()));
        assert_eq!(check(w, "1:10"), Err("--set k: node 1 has 10; at most 9".into()));
        assert_eq!(check(w, "1:1,1:2"), Err("--set k: node 1 appears twice".into()));
    }

    #[test]
    fn a_slip_finds_its_key_and_a_stranger_finds_none() {
        let keys = ["majority", "weights", "pick"];
        assert_eq!(nearest("majorty", keys), Some("majority"));
        assert_eq!(nearest("wieghts", keys), Some("weights"));
        assert_eq!(nearest("pik", keys), Some("pick"));
        assert_eq!(nearest("loss", keys), None);
    }
}
