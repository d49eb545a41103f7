//! The authenticated datagram and its codec: the only file that names bincode or blake3.
//!
//! A datagram is a fixed header, the bincode body, and a MAC over both:
//!
//! ```text
//! version u8 | run u64 | from u64 | to u64 | boot u64 | seq u64 | clocks | msg | mac [32]
//! ```
//!
//! (header integers little-endian; the clocks -- Lamport, hybrid, vector -- hand-encoded as in
//! `stamps.rs`; the message in bincode). `run` is derived from the run's key, so a receiver refuses another
//! run's datagram by comparing 8 bytes; the MAC is BLAKE3 in keyed mode over everything before
//! it, with a key derived from the run's key. The header is read without bincode so the cheap
//! checks (length, version, run, sender, replay window) come before the MAC and the decoding.

use super::key::Key;
use super::stamps::{put_stamps, Reader};
use crate::trace::NodeId;
use serde::{de::DeserializeOwned, Serialize};

/// The wire protocol version; a datagram with another one is dropped.
pub const VERSION: u8 = 3;
/// The largest datagram a node accepts; anything longer is dropped as too large.
pub(crate) const MAX_DATAGRAM: usize = 32 * 1024;
/// Header bytes before the body.
pub(crate) const HEADER_LEN: usize = 1 + 5 * 8;
/// MAC bytes at the end.
pub(crate) const MAC_LEN: usize = 32;

const CONFIG: bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Varint,
    bincode::config::Limit<MAX_DATAGRAM>,
> = bincode::config::standard().with_limit::<MAX_DATAGRAM>();

/// What every datagram carries around the algorithm's message.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<M> {
    /// The sender's node id (checked against the source address).
    pub from: NodeId,
    /// The node it is for: a datagram is not accepted by another member.
    pub to: NodeId,
    /// The sender's boot id (its start time): a restarted sender starts a new replay window.
    pub boot: u64,
    /// The sender's per-boot send sequence number: with `from`, the message's id, written in
    /// both the `send` and the `recv` event so that the two can be paired.
    pub seq: u64,
    /// The sender's Lamport clock at the send.
    pub lamport: u64,
    /// The sender's vector and hybrid clocks at the send (empty vector when vector clocks are off).
    pub stamps: Stamps,
    /// The algorithm's message.
    pub msg: M,
}

/// An envelope to seal, by parts: what [`Sealer::seal_parts`] takes.
pub struct Sealing<'a, M> {
    /// The sender.
    pub from: NodeId,
    /// The destination.
    pub to: NodeId,
    /// The sender's boot id.
    pub boot: u64,
    /// The sender's per-boot sequence number.
    pub seq: u64,
    /// The sender's Lamport clock at the send.
    pub lamport: u64,
    /// The sender's vector clock's pairs, sorted by node (empty when vector clocks are off).
    pub vc: &'a [(NodeId, u64)],
    /// The sender's hybrid logical clock.
    pub hlc: (u64, u32),
    /// The algorithm's message.
    pub msg: &'a M,
}

/// The clocks a datagram piggybacks besides the Lamport clock: the sender's vector clock as
/// `(node, count)` pairs (zeros left out, so a vector costs only the nodes it has heard of) and
/// its hybrid logical clock `(l, c)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stamps {
    /// The vector clock, sparse.
    pub vc: Vec<(NodeId, u64)>,
    /// The hybrid logical clock: physical part (microseconds) and counter.
    pub hlc: (u64, u32),
}

/// The fixed header, read before anything is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The run id.
    pub run: u64,
    /// Claimed sender.
    pub from: NodeId,
    /// Claimed destination.
    pub to: NodeId,
    /// Claimed sender boot.
    pub boot: u64,
    /// Claimed sequence number.
    pub seq: u64,
}

/// Why a datagram was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// Longer than [`MAX_DATAGRAM`].
    TooLarge(usize),
    /// Shorter than a header and a MAC.
    Short(usize),
    /// Of another protocol version.
    Version(u8),
    /// Of another run (another key).
    ForeignRun(u64),
    /// From an address that is not a member's.
    UnknownSender,
    /// Claims a member id other than the one its address belongs to.
    Spoofed {
        /// The id claimed.
        claims: NodeId,
        /// The member the address belongs to.
        is: NodeId,
    },
    /// Addressed to another member.
    Misdirected(NodeId),
    /// Already seen, too old for the replay window, or from an earlier boot of the sender.
    Replay(String),
    /// The MAC does not match: forged or altered.
    Forged,
    /// Authentic, but the body does not decode as a message of this algorithm.
    Malformed(String),
    /// A datagram of several messages ([`bundle`](super::bundle)) whose framing is broken:
    /// the rest of it is refused.
    Bundle(String),
}

impl WireError {
    /// The reason's class: what drops are counted under (`drop` records' `class`).
    pub fn class(&self) -> &'static str {
        match self {
            WireError::TooLarge(_) => "too-large",
            WireError::Short(_) => "short",
            WireError::Version(_) => "version",
            WireError::ForeignRun(_) => "foreign-run",
            WireError::UnknownSender => "unknown-sender",
            WireError::Spoofed { .. } => "spoofed",
            WireError::Misdirected(_) => "misdirected",
            WireError::Replay(_) => "replay",
            WireError::Forged => "forged",
            WireError::Malformed(_) => "malformed",
            WireError::Bundle(_) => "bundle",
        }
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::TooLarge(n) => write!(f, "too large: {n} bytes (limit {MAX_DATAGRAM})"),
            WireError::Short(n) => write!(f, "short: {n} bytes, less than a header and a MAC"),
            WireError::Version(v) => write!(f, "version: protocol version {v}, expected {VERSION}"),
            WireError::ForeignRun(r) => write!(f, "foreign-run: run id {r:016x} is not this run's"),
            WireError::UnknownSender => write!(f, "unknown sender: the address is not a cluster member"),
            WireError::Spoofed { claims, is } => {
                write!(
                    f,
                    "spoofed: sender claims id {claims} but its address belongs to node {is}"
                )
            }
            WireError::Misdirected(to) => write!(f, "misdirected: addressed to node {to}"),
            WireError::Replay(why) => write!(f, "replay: {why}"),
            WireError::Forged => write!(f, "forged: bad MAC (not sealed with this run's key, or altered)"),
            WireError::Malformed(e) => write!(f, "malformed: {e}"),
            WireError::Bundle(e) => write!(f, "bundle: {e}"),
        }
    }
}

/// Seals and opens datagrams with one run's key.
#[derive(Clone)]
pub struct Sealer {
    mac_key: [u8; 32],
    run: u64,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sealer {{ run: {:016x} }}", self.run)
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

impl Sealer {
    /// A sealer for the run of `key`.
    pub fn new(key: &Key) -> Self {
        Sealer {
            mac_key: blake3::derive_key("coordlab 2026-11 datagram MAC", key.bytes()),
            run: key.run_id(),
        }
    }

    /// The run id every datagram of this run carries.
    pub fn run(&self) -> u64 {
        self.run
    }

    fn mac(&self, covered: &[u8]) -> blake3::Hash {
        blake3::keyed_hash(&self.mac_key, covered)
    }

    /// Encodes and seals an envelope.
    pub fn seal<M: Serialize>(&self, env: &Envelope<M>) -> Vec<u8> {
        self.seal_parts(Sealing {
            from: env.from,
            to: env.to,
            boot: env.boot,
            seq: env.seq,
            lamport: env.lamport,
            vc: &env.stamps.vc,
            hlc: env.stamps.hlc,
            msg: &env.msg,
        })
    }

    /// The datagram of an envelope given by parts, the vector clock borrowed (a node sends its
    /// own clock's pairs without copying them).
    pub fn seal_parts<M: Serialize>(&self, e: Sealing<'_, M>) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + 16 + 3 * e.vc.len() + 32 + MAC_LEN);
        out.push(VERSION);
        for x in [self.run, e.from, e.to, e.boot, e.seq] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        put_stamps(&mut out, e.lamport, e.vc, e.hlc);
        // Encoding into a Vec fails only past the size limit, which no message of ours reaches.
        let _ = bincode::serde::encode_into_std_write(e.msg, &mut out, CONFIG);
        let mac = self.mac(&out);
        out.extend_from_slice(mac.as_bytes());
        out
    }

    /// The cheap checks: length, version and run id; then the header as claimed.
    pub fn header(&self, bytes: &[u8]) -> Result<Header, WireError> {
        if bytes.len() > MAX_DATAGRAM {
            return Err(WireError::TooLarge(bytes.len()));
        }
        if bytes.len() < HEADER_LEN + MAC_LEN {
            return Err(WireError::Short(bytes.len()));
        }
        if bytes[0] != VERSION {
            return Err(WireError::Version(bytes[0]));
        }
        let run = u64_at(bytes, 1);
        if run != self.run {
            return Err(WireError::ForeignRun(run));
        }
        Ok(Header {
            run,
            from: u64_at(bytes, 9),
            to: u64_at(bytes, 17),
            boot: u64_at(bytes, 25),
            seq: u64_at(bytes, 33),
        })
    }

    /// Checks the MAC (in constant time); call after [`Sealer::header`] passed.
    pub fn verify(&self, bytes: &[u8]) -> Result<(), WireError> {
        let split = bytes.len() - MAC_LEN;
        let mut tag = [0u8; MAC_LEN];
        tag.copy_from_slice(&bytes[split..]);
        // blake3::Hash's equality is constant-time.
        if self.mac(&bytes[..split]) == blake3::Hash::from_bytes(tag) {
            Ok(())
        } else {
            Err(WireError::Forged)
        }
    }

    /// Decodes the body of a verified datagram with header `h`.
    pub fn body<M: DeserializeOwned>(h: &Header, bytes: &[u8]) -> Result<Envelope<M>, WireError> {
        let mut clocks = Reader::new(&bytes[HEADER_LEN..bytes.len() - MAC_LEN]);
        let (lamport, stamps) = clocks.stamps()?;
        let body = clocks.rest();
        let (msg, used): (M, usize) =
            bincode::serde::decode_from_slice(body, CONFIG).map_err(|e| WireError::Malformed(e.to_string()))?;
        if used != body.len() {
            return Err(WireError::Malformed(format!("{} trailing bytes", body.len() - used)));
        }
        Ok(Envelope {
            from: h.from,
            to: h.to,
            boot: h.boot,
            seq: h.seq,
            lamport,
            stamps,
            msg,
        })
    }

    /// Every check but the sender's and the replay window's, in order; for tests and tools.
    pub fn open<M: DeserializeOwned>(&self, bytes: &[u8]) -> Result<Envelope<M>, WireError> {
        let h = self.header(bytes)?;
        self.verify(bytes)?;
        Self::body(&h, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    enum M {
        A(u64),
        B { ids: Vec<u64> },
    }

    fn env(msg: M) -> Envelope<M> {
        Envelope {
            from: 3,
            to: 1,
            boot: 77,
            seq: 2,
            lamport: 9,
            stamps: Stamps {
                vc: vec![(1, 2), (3, 4)],
                hlc: (5, 6),
            },
            msg,
        }
    }

    fn sealer(k: u8) -> Sealer {
        Sealer::new(&Key::from_bytes([k; 32]))
    }

    #[test]
    fn round_trip() {
        let s = sealer(1);
        let e = env(M::B { ids: vec![1, 2, 3] });
        assert_eq!(s.open::<M>(&s.seal(&e)).unwrap(), e);
    }

    #[test]
    fn every_altered_bit_is_refused() {
        let s = sealer(1);
        let good = s.seal(&env(M::A(5)));
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                let e = s.open::<M>(&b).unwrap_err();
                let expected = match i {
                    0 => "version",
                    1..=8 => "foreign-run",
                    _ => "forged",
                };
                assert_eq!(e.class(), expected, "byte {i} bit {bit}: {e}");
            }
        }
    }

    #[test]
    fn another_key_is_another_run_and_a_stolen_run_id_is_still_forged() {
        let (a, b) = (sealer(1), sealer(2));
        assert_ne!(a.run(), b.run());
        let theirs = b.seal(&env(M::A(1)));
        assert_eq!(a.open::<M>(&theirs).unwrap_err().class(), "foreign-run");
        // Someone who read our run id off the wire, without the key.
        let mut forged = theirs.clone();
        forged[1..9].copy_from_slice(&a.run().to_le_bytes());
        assert_eq!(a.open::<M>(&forged), Err(WireError::Forged));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let s = sealer(1);
        let mut rng = crate::rng::Rng::new(1);
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            assert!(s.open::<M>(&bytes).is_err());
        }
        assert_eq!(s.open::<M>(&[]).unwrap_err().class(), "short");
        assert_eq!(
            s.open::<M>(&vec![0u8; MAX_DATAGRAM + 1]),
            Err(WireError::TooLarge(MAX_DATAGRAM + 1))
        );
        // Authentic but undecodable: a huge claimed vector length must be refused, not allocated.
        let mut b = vec![VERSION];
        for x in [s.run(), 3, 1, 1, 1] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.extend_from_slice(&[1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        let mac = s.mac(&b);
        b.extend_from_slice(mac.as_bytes());
        assert_eq!(s.open::<M>(&b).unwrap_err().class(), "malformed");
    }
}
