//! A step's way out: the state stored, the records written, the datagrams sent, then the human
//! log lines, in that order (see [`runtime`](super)).

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
        if let Some(w) = &mut self.trace {
            for rec in self.host.records() {
                if let Err(e) = w.write(rec) {
                    log::error!("cannot write the trace: {e}");
                    self.trace_failed.get_or_insert(e.to_string());
                }
            }
        }
        if self.trace_failed.is_none() {
            self.send_outbox();
        }
        // The node stops when its trace failed: what it sends now would have no `send` there.
        self.host.clear_outbox();
        // The human lines last, in one write(2): formatting them and writing them cost more
        // than the rest of a hop's work, and the next node need not wait for them.
        for rec in self.host.take_records() {
            self.human.write(&rec);
        }
        self.human.flush();
    }

    /// Sends the step's messages, those to one node in one datagram (`engine::bundle`).
    fn send_outbox(&mut self) {
        let msgs: Vec<_> = self
            .host
            .outbox()
            .iter()
            .map(|o| (o.to, o.bytes.as_slice(), o.fence))
            .collect();
        let addrs = &self.opts.addrs;
        let mut datagrams = Vec::with_capacity(msgs.len());
        for (to, bytes) in self.packer.pack(&msgs) {
            match addrs.get(&to) {
                Some(addr) => datagrams.push((to, bytes, *addr)),
                None => log::error!("no address for node {to}: message(s) not sent"),
            }
        }
        let n = datagrams.len();
        self.sender.send(self.socket.as_raw_fd(), &datagrams, |to, addr, e| {
            log::warn!("send to node {to} ({addr}) failed, datagram lost: {e}");
        });
        self.host.count_datagrams(n);
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
