//! Placeholder until the launcher's `net` code path (branch net-core) is merged: every network
//! action is refused, so no story or soak pretends to have broken the network.

use super::nodes::Fleet;
use crate::net::NetAction;

impl Fleet {
    /// Puts `action` in force through the run's network backend.
    pub fn net(&mut self, action: &NetAction) -> Result<String, String> {
        Err(format!("cannot {}: no network backend in this build yet", action.describe()))
    }
}
