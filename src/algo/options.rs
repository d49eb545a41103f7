//! Options as types: each algorithm and family declares its `--set` keys once, with
//! [`options!`](crate::algo::options::options), as a struct with its `Default`; the registry's
//! key table (name, type, default, help), `coordlab algos`, the launcher's validation and the
//! algorithm itself all read that one declaration. One parser of each value type lives here:
//! booleans ([`boolean`]) and `ID:N` lists ([`id_list`]).

use crate::algo::{NodeId, Setup};
use std::collections::BTreeMap;
use std::str::FromStr;

/// What values a key takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// `true`/`false` (also `1`/`0`, `yes`/`no`, as [`boolean`] reads them).
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

/// One `--set` key, as its options struct declares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    /// Its name, as written in `--set NAME=VALUE`.
    pub name: &'static str,
    /// Its values.
    pub kind: Kind,
    /// What holds without it, in words (`false`, `100`, `1 each`): the typed default's text.
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Who gives it.
    pub set_by: SetBy,
}

/// The one reading of a boolean option: `true`/`1`/`yes` or `false`/`0`/`no`.
pub(crate) fn boolean(v: &str) -> Option<bool> {
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

/// What is wrong with an `ID:VALUE,...` list; each item names the offending part, so that a
/// caller words the one line its users know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdListError {
    /// `part` is not `ID:VALUE`.
    NotPair(String),
    /// The id of `part` is not a number (`id` as written).
    BadId {
        /// The whole item.
        part: String,
        /// The id as written.
        id: String,
    },
    /// The value of `part` does not parse (`value` as written).
    BadValue {
        /// The whole item.
        part: String,
        /// The value as written.
        value: String,
    },
    /// Node `0` is not among the members.
    NotMember(NodeId),
    /// Node `0` is given twice.
    Twice(NodeId),
}

impl IdListError {
    /// The item at fault, as written (None for errors naming a node).
    pub fn part(&self) -> Option<&str> {
        match self {
            IdListError::NotPair(p) | IdListError::BadId { part: p, .. } | IdListError::BadValue { part: p, .. } => {
                Some(p)
            }
            IdListError::NotMember(_) | IdListError::Twice(_) => None,
        }
    }
}

/// The one parser of `ID:VALUE,ID:VALUE,...` lists (weights, capabilities, clock offsets):
/// items trimmed, empty items skipped, every id a member of `members`, none given twice. The
/// range of a value is its reader's rule.
pub(crate) fn id_list<T: FromStr>(spec: &str, members: &[NodeId]) -> Result<Vec<(NodeId, T)>, IdListError> {
    let mut out: Vec<(NodeId, T)> = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((id, value)) = part.split_once(':') else {
            return Err(IdListError::NotPair(part.to_string()));
        };
        let Ok(node) = id.trim().parse::<NodeId>() else {
            return Err(IdListError::BadId {
                part: part.to_string(),
                id: id.trim().to_string(),
            });
        };
        let Ok(v) = value.trim().parse::<T>() else {
            return Err(IdListError::BadValue {
                part: part.to_string(),
                value: value.trim().to_string(),
            });
        };
        if !members.contains(&node) {
            return Err(IdListError::NotMember(node));
        }
        if out.iter().any(|&(x, _)| x == node) {
            return Err(IdListError::Twice(node));
        }
        out.push((node, v));
    }
    Ok(out)
}

/// Parses `ID:N,ID:N,...` naming members of `members` once each, N at most `max`; the error is
/// the `--set` key's one line.
pub fn id_weights(key: &str, value: &str, max: u64, members: &[u64]) -> Result<Vec<(u64, u64)>, String> {
    let list = id_list::<u64>(value, members).map_err(|e| match e {
        IdListError::NotMember(id) => format!("--set {key}: node {id} is not a member"),
        IdListError::Twice(id) => format!("--set {key}: node {id} appears twice"),
        e => format!(
            "--set {key}: '{}' is not ID:N (e.g. {key}=1:5,2:3)",
            e.part().unwrap_or_default()
        ),
    })?;
    if let Some(&(id, n)) = list.iter().find(|&&(_, n)| n > max) {
        return Err(format!("--set {key}: node {id} has {n}; at most {max}"));
    }
    Ok(list)
}

/// A type an option's value is read into: from the value given (None when it does not have
/// the type: the catalogue refuses such a value before a node is built) and from the text of
/// its declared default.
pub(crate) trait OptionValue: Sized {
    /// The value `v` of a key of kind `kind` for a node among `members`.
    fn read(v: &str, kind: &Kind, members: &[NodeId]) -> Option<Self>;
    /// The typed default, from the text the declaration shows (`stringify!` of it).
    fn from_default(text: &'static str) -> Self;
}

fn parsed<T: FromStr>(text: &str) -> T {
    match text.parse() {
        Ok(v) => v,
        // A declaration's default is a literal of its type: checked by the tests of each.
        Err(_) => panic!("option default '{text}' does not have its key's type"),
    }
}

impl OptionValue for u64 {
    fn read(v: &str, _: &Kind, _: &[NodeId]) -> Option<Self> {
        v.trim().parse().ok()
    }
    fn from_default(text: &'static str) -> Self {
        parsed(text)
    }
}

impl OptionValue for f64 {
    fn read(v: &str, _: &Kind, _: &[NodeId]) -> Option<Self> {
        v.trim().parse().ok().filter(|x: &f64| x.is_finite())
    }
    fn from_default(text: &'static str) -> Self {
        parsed(text)
    }
}

impl OptionValue for bool {
    fn read(v: &str, _: &Kind, _: &[NodeId]) -> Option<Self> {
        boolean(v)
    }
    fn from_default(text: &'static str) -> Self {
        boolean(text).unwrap_or_else(|| panic!("option default '{text}' is not a boolean"))
    }
}

/// A word of a [`Kind::Choice`].
impl OptionValue for &'static str {
    fn read(v: &str, kind: &Kind, _: &[NodeId]) -> Option<Self> {
        match kind {
            Kind::Choice(words) => words.iter().find(|w| **w == v).copied(),
            _ => None,
        }
    }
    fn from_default(text: &'static str) -> Self {
        text
    }
}

/// A value that holds by a rule rather than a literal (the smallest id, a size limit): None
/// until given, and its reader applies the rule.
impl<T: OptionValue> OptionValue for Option<T> {
    fn read(v: &str, kind: &Kind, members: &[NodeId]) -> Option<Self> {
        T::read(v, kind, members).map(Some)
    }
    fn from_default(_: &'static str) -> Self {
        None
    }
}

/// An `ID:N` list ([`Kind::IdWeights`]); empty by default, unlisted members taking the rule
/// of its reader.
impl OptionValue for Vec<(NodeId, u64)> {
    fn read(v: &str, kind: &Kind, members: &[NodeId]) -> Option<Self> {
        let list = id_list::<u64>(v, members).ok()?;
        match kind {
            Kind::IdWeights { max } if list.iter().any(|&(_, n)| n > *max) => None,
            _ => Some(list),
        }
    }
    fn from_default(_: &'static str) -> Self {
        Vec::new()
    }
}

/// The keys of several declarations as one table (an entry that takes a shared key, such as
/// `durable`, besides its own); `N` is their number, checked when the constant is built.
pub(crate) const fn concat_keys<const N: usize>(parts: &[&[Key]]) -> [Key; N] {
    let blank = Key {
        name: "",
        kind: Kind::Bool,
        default: "",
        help: "",
        set_by: SetBy::User,
    };
    let mut out = [blank; N];
    let (mut i, mut p) = (0, 0);
    while p < parts.len() {
        let mut k = 0;
        while k < parts[p].len() {
            out[i] = parts[p][k];
            i += 1;
            k += 1;
        }
        p += 1;
    }
    assert!(i == N, "concat_keys: N is not the number of keys");
    out
}

/// Reads option `name` of kind `kind` from `opts`: None when absent or not of its type.
pub(crate) fn read_one<T: OptionValue>(
    opts: &BTreeMap<String, String>,
    name: &str,
    kind: &Kind,
    members: &[NodeId],
) -> Option<T> {
    opts.get(name).and_then(|v| T::read(v, kind, members))
}

/// Declares a struct of options, one field per `--set` key, with everything else derived
/// from it: the struct with one public field per key, its `Default` (each field's declared
/// default), `KEYS` (the registry's table: name, kind, the default's text, help, who sets it),
/// `read` (lenient: a value missing or not of its type takes the default, for nodes already
/// checked) and `from_setup` (each value given checked against its kind, the error one line).
///
/// A field: `NAME: TYPE = DEFAULT [shown "WORDS"], KIND, "HELP" [, Launcher];`. DEFAULT is
/// one token, the literal (or, for a choice, the word) as `coordlab algos` shows it; `shown`
/// replaces that text when the default holds by a rule (`1 each`), the type then an `Option`
/// or a list whose reader applies the rule.
macro_rules! options {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $field:ident : $t:ty = $d:tt $(shown $w:literal)? , $kind:expr , $help:literal $(, $by:ident)? ;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $name {
            $(
                #[doc = $help]
                pub $field: $t,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $($field: <$t as $crate::algo::options::OptionValue>::from_default(stringify!($d)),)*
                }
            }
        }

        #[allow(dead_code)]
        impl $name {
            /// Its `--set` keys, as the registry lists and checks them.
            pub(crate) const KEYS: &'static [$crate::algo::options::Key] = &[
                $($crate::algo::options::Key {
                    name: stringify!($field),
                    kind: $kind,
                    default: $crate::algo::options::options!(@shown $d $(, $w)?),
                    help: $help,
                    set_by: $crate::algo::options::options!(@by $($by)?),
                },)*
            ];

            /// The options in `opts` for a node among `members`; a value absent or not of
            /// its type takes the default.
            pub(crate) fn read_map(
                opts: &std::collections::BTreeMap<String, String>,
                members: &[$crate::algo::NodeId],
            ) -> Self {
                let d = Self::default();
                $name {
                    $($field: $crate::algo::options::read_one(opts, stringify!($field), &$kind, members)
                        .unwrap_or(d.$field),)*
                }
            }

            /// The options of `setup` (values assumed checked: see `from_setup`).
            pub fn read(setup: &$crate::algo::Setup) -> Self {
                Self::read_map(&setup.opts, &setup.members)
            }

            /// The options of `setup`, each value given checked against its kind; the error
            /// is one line naming the key and the value.
            pub(crate) fn from_setup(setup: &$crate::algo::Setup) -> Result<Self, String> {
                for k in Self::KEYS {
                    if let Some(v) = setup.opts.get(k.name) {
                        k.kind.check(k.name, v, setup)?;
                    }
                }
                Ok(Self::read(setup))
            }
        }
    };
    (@shown $d:tt) => { stringify!($d) };
    (@shown $d:tt, $w:literal) => { $w };
    (@by) => { $crate::algo::options::SetBy::User };
    (@by $by:ident) => { $crate::algo::options::SetBy::$by };
}
pub(crate) use options;

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
