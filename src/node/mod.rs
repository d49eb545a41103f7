//! Everything that touches the operating system for one node: socket, poll loop, signals, logging.
//! The sans-IO core it drives lives in `crate::engine`.

pub mod arena;
pub mod config;
pub mod keyfile;
pub mod logging;
pub mod netfilter;
pub(crate) mod recv_batch;
pub mod recv_buf;
pub mod runtime;
mod send_batch;
pub(crate) use send_batch::SendBatch;
pub mod signals;
pub mod socket;
mod state_map;
mod state_slots;
mod stored;
pub mod warmup;

/// From how many nodes a launch is large: the zygote then shares its copy of the code and
/// rehearses once for all (`cluster::fork_code`), and each node gives its warm-up's free heap
/// pages back, where the memory target is.
pub(crate) const LARGE_LAUNCH: usize = 1024;

/// Tunes glibc's allocator for a node: in the zygote before it forks any (so that the heap
/// every forked node starts from is made this way), and in a node started on its own.
///
/// No fastbins: a small chunk freed into one waits there until a request of 1 KiB or more (a
/// vector clock of 64 entries is one, copied into every record) makes glibc consolidate them
/// all. perf put that consolidation and its unlinking at 8% of a node's CPU on the ELECTION
/// lap of a ring of 64 once the warm-up's heap was kept (1% while it was trimmed, when the
/// heap's page faults cost more); with both changes the lap's hop fell by a sixth to a
/// quarter (docs/cost.md).
/// Small requests are still served first from glibc's per-thread cache. The launcher keeps
/// them: its own phases of a 4,096-node launch were a few ms slower without.
pub fn tune_allocator() {
    // SAFETY: a plain call into the allocator, before any thread is started.
    unsafe { nix::libc::mallopt(nix::libc::M_MXFAST, 0) };
}

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
