//! Two pieces of work at once: the launcher's end (the last parsing, the check) runs after the
//! nodes have left the cores, and this machine has two.

/// Runs `a` on a second thread and `b` on this one, and returns both results; a panic in
/// either is this thread's.
pub(crate) fn both<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|s| {
        let other = s.spawn(a);
        let mine = b();
        (other.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), mine)
    })
}
