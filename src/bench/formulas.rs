//! The textbook formulas the election counts are read against, and the id arrangements that
//! reach them.

use crate::trace::NodeId;

/// The ELECTION messages of Chang-Roberts on this arrangement with every node initiating: each
/// id travels until the first larger id along the ring swallows it; the largest goes all round.
pub(crate) fn chang_roberts_messages(ring: &[NodeId]) -> u64 {
    let n = ring.len();
    (0..n)
        .map(|i| (1..=n).find(|d| d == &n || ring[(i + d) % n] > ring[i]).unwrap_or(n) as u64)
        .sum()
}

/// Franklin's rounds on this arrangement: in each, an active node stays active only if its id
/// is larger than the nearest active id on both sides; the last round sends the winner's id all
/// round.
pub(crate) fn franklin_rounds(ring: &[NodeId]) -> u64 {
    let mut active = ring.to_vec();
    let mut rounds = 1;
    while active.len() > 1 {
        let k = active.len();
        active = (0..k)
            .filter(|&i| active[i] > active[(i + k - 1) % k] && active[i] > active[(i + 1) % k])
            .map(|i| active[i])
            .collect();
        rounds += 1;
    }
    rounds
}

/// An arrangement where each Franklin round knocks out exactly every other active node: the node
/// at ring position p survives as many rounds as p has trailing zero bits, so ids grow with that.
/// With n a power of two this takes log2(n) + 1 rounds, the bound.
pub(crate) fn franklin_halving(n: usize) -> Vec<NodeId> {
    let mut by_rounds: Vec<usize> = (0..n).collect();
    by_rounds.sort_by_key(|&p| (if p == 0 { u32::MAX } else { p.trailing_zeros() }, p));
    let mut ring = vec![0; n];
    for (rank, &p) in by_rounds.iter().enumerate() {
        ring[p] = rank as NodeId + 1;
    }
    ring
}

/// H_n, the n-th harmonic number.
pub(super) fn harmonic(n: usize) -> f64 {
    (1..=n).map(|k| 1.0 / k as f64).sum()
}

/// floor(log2 n), n > 0.
pub(super) fn log2_floor(n: usize) -> u64 {
    (usize::BITS - 1 - n.leading_zeros()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chang_roberts_best_worst_and_a_mixed_ring() {
        for n in [2u64, 3, 8, 64] {
            let inc: Vec<NodeId> = (1..=n).collect();
            let dec: Vec<NodeId> = (1..=n).rev().collect();
            assert_eq!(chang_roberts_messages(&inc), 2 * n - 1);
            assert_eq!(chang_roberts_messages(&dec), n * (n + 1) / 2);
        }
        // 3 -> 1 -> 2 -> back to 3: 3 goes round (3), 1 stops at 2 (1), 2 stops at 3 (1).
        assert_eq!(chang_roberts_messages(&[3, 1, 2]), 5);
    }

    #[test]
    fn franklin_rounds_match_the_worked_examples() {
        assert_eq!(franklin_rounds(&[1, 2, 3]), 2);
        assert_eq!(franklin_rounds(&[1, 3, 2, 4]), 3);
        assert_eq!(franklin_rounds(&[1, 8, 2, 7, 3, 6, 4, 5]), 3);
        assert_eq!(franklin_rounds(&[8, 1, 5, 2, 7, 3, 6, 4]), 4);
    }

    #[test]
    fn the_halving_arrangement_reaches_the_bound_at_powers_of_two() {
        for k in 1..=8 {
            let n = 1usize << k;
            let ring = franklin_halving(n);
            let mut sorted = ring.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (1..=n as u64).collect::<Vec<_>>());
            assert_eq!(franklin_rounds(&ring), log2_floor(n) + 1, "n={n}");
        }
    }
}
