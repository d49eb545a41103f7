//! A step's way out: the state stored, the records written, then the datagrams sent, in that
//! order (see [`runtime`](super)).

use super::*;

impl<A: Algorithm> Process<A> {
    /// Sends what the host wants sent and logs what it recorded.
    pub(super) fn pump(&mut self) {
        if let Some(bytes) = self.host.take_persisted() {
            match &mut self.state {
                Some(state) => {
                    if let Err(e) = state.store(&bytes) {
                        log::error!("cannot persist the state: {e}");
                    }
                }
                None => log::warn!("state to persist but no log directory: it will not survive a restart"),
            }
        }
        // The records first: written through the mapping they are in the file at once, so a
        // SIGKILL after a datagram left cannot lose its `send` (docs/trace.md, what a kill loses).
        for rec in self.host.take_records() {
            if let Some(w) = &mut self.trace {
                if let Err(e) = w.write(&rec) {
                    log::error!("cannot write the trace: {e}");
                    self.trace_failed.get_or_insert(e.to_string());
                }
            }
            self.human.write(&rec);
        }
        if self.trace_failed.is_some() {
            // The node stops: what it sends now would have no `send` in its trace.
            self.host.clear_outbox();
            return;
        }
        let mut datagrams = Vec::new();
        for out in self.host.outbox() {
            match self.opts.addrs.get(&out.to) {
                Some(addr) => datagrams.push((out.to, out.bytes.as_slice(), *addr)),
                None => log::error!("no address for node {}: message not sent", out.to),
            }
        }
        self.sender.send(self.socket.as_raw_fd(), &datagrams, |to, addr, e| {
            log::warn!("send to node {to} ({addr}) failed, datagram lost: {e}");
        });
        self.host.clear_outbox();
    }

    pub(super) fn flush_trace(&mut self) {
        if let Some(w) = &mut self.trace {
            if let Err(e) = w.flush() {
                log::error!("cannot write the trace: {e}");
                self.trace_failed.get_or_insert(e.to_string());
            }
        }
    }
}
