//! Global snapshots of a running system: a bank whose money moves between accounts, recorded
//! by Chandy-Lamport's markers or by every node at the same time on its own clock.

pub mod bank;
mod bank_messages;
mod bank_options;

#[cfg(test)]
mod tests;
