//! Everything that touches the operating system for one node: socket, poll loop, signals, logging.
//! The sans-IO core it drives lives in `crate::engine`.

pub mod config;
pub mod keyfile;
pub mod logging;
pub mod netfilter;
pub(crate) mod recv_batch;
pub mod recv_buf;
pub mod runtime;
mod send_batch;
pub mod signals;
pub mod socket;
mod state_slots;
mod stored;
pub mod warmup;

/// Names this process node `id` (`coordlab-n<id>`), forked or exec'd alike.
pub fn name_node(id: u64) {
    name_process(&format!("coordlab-n{id}"));
}

/// Names this process as `ps -e` and `top` show it (at most 15 bytes): its command line is the
/// launcher's when it was forked.
pub(crate) fn name_process(name: &str) {
    if let Ok(name) = std::ffi::CString::new(name) {
        let _ = nix::sys::prctl::set_name(&name);
    }
}
