//! A run's secret key (32 bytes) and the run id derived from it. Reading and writing key
//! files is `crate::node::keyfile`'s; this is the pure part both drivers share.

/// Key length in bytes.
pub(crate) const KEY_LEN: usize = 32;

/// A run's secret key: every datagram of the run is sealed with it.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; KEY_LEN]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret; the run id is public (every datagram carries it).
        write!(f, "Key(run {:016x})", self.run_id())
    }
}

impl Key {
    /// The key made of `bytes`.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Key(bytes)
    }

    /// The fixed key of the simulator, where nobody is hostile but the code path is the same.
    pub fn simulated() -> Self {
        Key(*b"coordlab simulator fixed key 32b")
    }

    /// The secret bytes.
    pub fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The public run id every datagram carries: two runs with different keys never share one
    /// (but for a 2^-64 chance), so a receiver tells them apart by comparing 8 bytes.
    pub fn run_id(&self) -> u64 {
        let d = blake3::derive_key("coordlab 2026-11 run id", &self.0);
        u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    }
}
