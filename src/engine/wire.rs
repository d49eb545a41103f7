//! The envelope every datagram carries, and its codec: the only file that names bincode.
//! The envelope holds only what the engine itself reads.

use crate::trace::NodeId;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The wire protocol version; a datagram with another one is dropped.
pub const VERSION: u8 = 1;
/// The largest datagram a node accepts; anything longer is dropped as too large.
pub const MAX_DATAGRAM: usize = 32 * 1024;

const CONFIG: bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Varint,
    bincode::config::Limit<MAX_DATAGRAM>,
> = bincode::config::standard().with_limit::<MAX_DATAGRAM>();

/// What every datagram carries around the algorithm's message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<M> {
    /// Protocol version.
    pub version: u8,
    /// The sender's node id (checked against the source address).
    pub from: NodeId,
    /// The sender's Lamport clock at the send.
    pub lamport: u64,
    /// The sender's per-boot send sequence number: with `from`, the message's id, written in
    /// both the `send` and the `recv` event so that the two can be paired.
    pub seq: u64,
    /// The sender's vector and hybrid clocks at the send (empty vector when vector clocks are off).
    pub stamps: Stamps,
    /// The algorithm's message.
    pub msg: M,
}

/// The clocks a datagram piggybacks besides the Lamport clock: the sender's vector clock as
/// `(node, count)` pairs (zeros left out, so a vector costs only the nodes it has heard of) and
/// its hybrid logical clock `(l, c)`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamps {
    /// The vector clock, sparse.
    pub vc: Vec<(NodeId, u64)>,
    /// The hybrid logical clock: physical part (microseconds) and counter.
    pub hlc: (u64, u32),
}

/// Why a datagram was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// Longer than [`MAX_DATAGRAM`].
    TooLarge(usize),
    /// Did not decode as an envelope of this algorithm.
    Malformed(String),
    /// Decoded, but of another protocol version.
    Version(u8),
    /// Decoded, with bytes left over.
    Trailing(usize),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::TooLarge(n) => write!(f, "too large: {n} bytes (limit {MAX_DATAGRAM})"),
            WireError::Malformed(e) => write!(f, "malformed: {e}"),
            WireError::Version(v) => write!(f, "protocol version {v}, expected {VERSION}"),
            WireError::Trailing(n) => write!(f, "malformed: {n} trailing bytes"),
        }
    }
}

/// Encodes an envelope.
pub fn encode<M: Serialize>(env: &Envelope<M>) -> Vec<u8> {
    // Encoding into a Vec fails only past the size limit, which no message of ours reaches.
    bincode::serde::encode_to_vec(env, CONFIG).unwrap_or_default()
}

/// Decodes a datagram; never panics, whatever the bytes.
pub fn decode<M: DeserializeOwned>(bytes: &[u8]) -> Result<Envelope<M>, WireError> {
    if bytes.len() > MAX_DATAGRAM {
        return Err(WireError::TooLarge(bytes.len()));
    }
    let (env, used): (Envelope<M>, usize) =
        bincode::serde::decode_from_slice(bytes, CONFIG).map_err(|e| WireError::Malformed(e.to_string()))?;
    if env.version != VERSION {
        return Err(WireError::Version(env.version));
    }
    if used != bytes.len() {
        return Err(WireError::Trailing(bytes.len() - used));
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    enum M {
        A(u64),
        B { ids: Vec<u64> },
    }

    #[test]
    fn round_trip() {
        let e = Envelope {
            version: VERSION,
            from: 3,
            lamport: 9,
            seq: 2,
            stamps: Stamps {
                vc: vec![(1, 2), (3, 4)],
                hlc: (5, 6),
            },
            msg: M::B { ids: vec![1, 2, 3] },
        };
        assert_eq!(decode::<M>(&encode(&e)).unwrap(), e);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut rng = crate::rng::Rng::new(1);
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let _ = decode::<M>(&bytes);
        }
        assert!(matches!(decode::<M>(&[]), Err(WireError::Malformed(_))));
        // A huge claimed vector length must hit the limit, not allocate.
        let mut evil = encode(&Envelope {
            version: VERSION,
            from: 1,
            lamport: 1,
            seq: 0,
            stamps: Stamps::default(),
            msg: M::A(1),
        });
        evil.truncate(evil.len() - 2);
        evil.extend_from_slice(&[1, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
        assert!(decode::<M>(&evil).is_err());
        assert_eq!(
            decode::<M>(&vec![0u8; MAX_DATAGRAM + 1]),
            Err(WireError::TooLarge(MAX_DATAGRAM + 1))
        );
    }

    #[test]
    fn other_version_and_trailing_bytes_are_refused() {
        let mut e = Envelope {
            version: 7,
            from: 1,
            lamport: 0,
            seq: 0,
            stamps: Stamps::default(),
            msg: M::A(5),
        };
        assert_eq!(decode::<M>(&encode(&e)), Err(WireError::Version(7)));
        e.version = VERSION;
        let mut b = encode(&e);
        b.push(0);
        assert_eq!(decode::<M>(&b), Err(WireError::Trailing(1)));
    }
}
