//! A keyed timer queue: setting a key replaces it; the earliest deadline is the poll timeout.

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::Hash;
use std::time::Duration;

/// Named timers with lazy deletion from a min-heap. A step sets several (each a remove and an
/// insert in both maps): Fx, not SipHash, since the keys are the algorithm's own, never a
/// peer's choice.
#[derive(Debug)]
pub(crate) struct Timers<T> {
    live: FxHashMap<T, (Duration, u64)>,
    heap: BinaryHeap<Reverse<(Duration, u64)>>,
    by_gen: FxHashMap<u64, T>,
    next_gen: u64,
}

impl<T: Copy + Eq + Hash> Default for Timers<T> {
    fn default() -> Self {
        Self {
            live: FxHashMap::default(),
            heap: BinaryHeap::new(),
            by_gen: FxHashMap::default(),
            next_gen: 0,
        }
    }
}

impl<T: Copy + Eq + Hash> Timers<T> {
    /// Sets `key` to fire at `deadline`, replacing any earlier setting.
    pub fn set(&mut self, key: T, deadline: Duration) {
        self.cancel(key);
        let gen = self.next_gen;
        self.next_gen += 1;
        self.live.insert(key, (deadline, gen));
        self.by_gen.insert(gen, key);
        self.heap.push(Reverse((deadline, gen)));
    }

    /// Cancels `key` if set.
    pub(crate) fn cancel(&mut self, key: T) {
        if let Some((_, gen)) = self.live.remove(&key) {
            self.by_gen.remove(&gen);
        }
    }

    /// The earliest live deadline.
    pub(crate) fn next_deadline(&mut self) -> Option<Duration> {
        while let Some(&Reverse((d, gen))) = self.heap.peek() {
            if self.by_gen.contains_key(&gen) {
                return Some(d);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes and returns one timer whose deadline is at or before `now`, earliest first.
    pub(crate) fn pop_expired(&mut self, now: Duration) -> Option<T> {
        let d = self.next_deadline()?;
        if d > now {
            return None;
        }
        let Reverse((_, gen)) = self.heap.pop()?;
        let key = self.by_gen.remove(&gen)?;
        self.live.remove(&key);
        Some(key)
    }

    /// Pops the earliest timer if its deadline is `now` itself: one that a step at `now` set
    /// with no delay. None when the earliest expired before `now` (it waits for
    /// [`Timers::pop_expired`] with the others) or is not due.
    pub(crate) fn pop_set_at(&mut self, now: Duration) -> Option<T> {
        match self.next_deadline()? == now {
            true => self.pop_expired(now),
            false => None,
        }
    }

    #[cfg(test)]
    /// Whether no timer is set.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_cancel_and_order() {
        let ms = Duration::from_millis;
        let mut t = Timers::default();
        t.set('a', ms(30));
        t.set('b', ms(10));
        t.set('a', ms(5)); // replaces the 30 ms setting
        t.set('c', ms(20));
        t.cancel('c');
        assert_eq!(t.next_deadline(), Some(ms(5)));
        assert_eq!(t.pop_expired(ms(4)), None);
        assert_eq!(t.pop_expired(ms(100)), Some('a'));
        assert_eq!(t.pop_expired(ms(100)), Some('b'));
        assert_eq!(t.pop_expired(ms(100)), None);
        assert!(t.is_empty());
    }

    #[test]
    fn only_a_timer_set_for_now_itself_pops_at_now() {
        let ms = Duration::from_millis;
        let mut t = Timers::default();
        t.set('z', ms(7));
        t.set('y', ms(7));
        t.set('l', ms(8)); // later
        assert_eq!(t.pop_set_at(ms(7)), Some('z'));
        assert_eq!(t.pop_set_at(ms(7)), Some('y'));
        assert_eq!(t.pop_set_at(ms(7)), None, "not due yet");
        // An expired timer ahead of one set for now holds it back: both wait for pop_expired.
        t.set('o', ms(5)); // expired before
        t.set('n', ms(9)); // set for now
        assert_eq!(t.pop_set_at(ms(9)), None);
        assert_eq!(t.pop_expired(ms(9)), Some('o'));
        assert_eq!(t.pop_expired(ms(9)), Some('l'));
        assert_eq!(t.pop_set_at(ms(9)), Some('n'));
        assert!(t.is_empty());
    }
}
