//! The `--set` keys an algorithm or its family takes (declared with its options struct, see
//! `crate::algo::options`), and the near miss of a mistyped key.

pub use crate::algo::options::{id_weights, Key, Kind, SetBy};

/// The key of `keys` nearest to `typo` by edit distance, when near enough to be a slip.
pub(crate) fn nearest<'a>(typo: &str, keys: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
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

    #[test]
    fn a_slip_finds_its_key_and_a_stranger_finds_none() {
        let keys = ["majority", "weights", "pick"];
        assert_eq!(nearest("majorty", keys), Some("majority"));
        assert_eq!(nearest("wieghts", keys), Some("weights"));
        assert_eq!(nearest("pik", keys), Some("pick"));
        assert_eq!(nearest("loss", keys), None);
    }
}
