//! The message pattern's floor for the Ricart-Agrawala row of the DistAlgo table: n bare
//! processes on loopback that do exactly what the algorithm sends -- a REQUEST to every peer,
//! a REPLY now or deferred to the exit, the exit's replies and the next REQUEST to a peer in
//! one datagram, each step's datagrams in one `sendmmsg` -- and nothing else: no trace, no
//! MAC, no vector clock, no event loop, no resource, no check. What a run of coordlab costs
//! above this is coordlab's own work; what this costs is the kernel's price for the pattern
//! (wake-ups of idle processes, loopback datagrams, context switches) on this machine.

use super::floor::Waiting;
use crate::error::{failed, CliError};
use crate::node::SendBatch;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A datagram's first byte: what it carries.
const REPLY: u8 = 1;
const REQUEST: u8 = 2;
/// From the launcher: the peers' ports follow; start requesting.
const GO: u8 = 4;
/// To the launcher: this process made its entries (it goes on replying).
const DONE: u8 = 8;
/// From the launcher: every process is done; exit.
const STOP: u8 = 16;

/// One bare process: binds a free loopback port, tells `launcher` which (`id` as u16 and the
/// port), waits for the go with every peer's port, then makes `requests` entries under
/// Ricart-Agrawala with Lamport timestamps, and replies until the stop.
/// With `poll`, it waits the way a node does: a non-blocking socket in a mio `Poll`, read
/// until it would block (the event loop's own share of the pattern).
pub fn ra_floor_node(launcher: &str, id: usize, requests: usize, poll: bool) -> Result<(), CliError> {
    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| failed(format!("bind: {e}")))?;
    let port = sock.local_addr().map_err(|e| failed(e.to_string()))?.port();
    let launcher: SocketAddr = launcher
        .parse()
        .map_err(|e| failed(format!("--launcher {launcher}: not an address: {e}")))?;
    let mut hello = [0u8; 4];
    hello[..2].copy_from_slice(&(id as u16).to_le_bytes());
    hello[2..].copy_from_slice(&port.to_le_bytes());
    sock.send_to(&hello, launcher)
        .map_err(|e| failed(format!("send: {e}")))?;
    let mut buf = [0u8; 65_536];
    // A faster peer's first request may come before this process's go: kept for after it.
    let mut early: Vec<[u8; 11]> = Vec::new();
    let peers: Vec<SocketAddr> = loop {
        let n = sock.recv(&mut buf).map_err(|e| failed(format!("recv: {e}")))?;
        if n >= 1 && buf[0] == GO {
            break buf[1..n]
                .chunks_exact(2)
                .map(|p| SocketAddr::from(([127, 0, 0, 1], u16::from_le_bytes([p[0], p[1]]))))
                .collect();
        }
        if let Ok(d) = buf[..n].try_into() {
            early.push(d);
        }
    };
    let n = peers.len();
    let mut me = Bare::new(id, n, requests);
    let mut out: Vec<(usize, [u8; 11])> = Vec::with_capacity(n + 1);
    let mut batch = SendBatch::default();
    let fd = sock.as_raw_fd();
    let send = |batch: &mut SendBatch, out: &mut Vec<(usize, [u8; 11])>| {
        let datagrams: Vec<(usize, &[u8], SocketAddr)> = out
            .iter()
            .map(|(to, b)| (*to, &b[..], if *to == n { launcher } else { peers[*to] }))
            .collect();
        batch.send(fd, &datagrams, |_, _, _| {});
        out.clear();
    };
    if requests > 0 {
        me.request(n, &mut out);
    } else {
        out.push((n, [DONE; 11]));
    }
    for d in early {
        me.take(&d, n, &mut out);
    }
    send(&mut batch, &mut out);
    let mut waiting = match poll {
        true => Some(Waiting::new(&sock)?),
        false => None,
    };
    loop {
        if let Some(w) = waiting.as_mut() {
            w.wait()?;
        }
        loop {
            let got = match sock.recv(&mut buf) {
                Ok(got) => got,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(failed(format!("recv: {e}"))),
            };
            if got == 1 && buf[0] == STOP {
                return Ok(());
            }
            if let Ok(d) = buf[..got].try_into() {
                me.take(d, n, &mut out);
            }
            if waiting.is_none() {
                break;
            }
        }
        if !out.is_empty() {
            send(&mut batch, &mut out);
        }
    }
}

/// One bare process's Ricart-Agrawala state.
struct Bare {
    id: usize,
    clock: u64,
    /// The timestamp of the request outstanding.
    mine: Option<u64>,
    /// Replies still awaited for it.
    missing: usize,
    /// Requests deferred to the exit, by peer.
    deferred: Vec<bool>,
    made: usize,
    requests: usize,
}

impl Bare {
    /// Process `id` of `n`, to make `requests` entries.
    fn new(id: usize, n: usize, requests: usize) -> Bare {
        Bare {
            id,
            clock: 0,
            mine: None,
            missing: 0,
            deferred: vec![false; n],
            made: 0,
            requests,
        }
    }

    /// Takes one datagram from a peer: its reply, then its request (the order it sent them).
    fn take(&mut self, d: &[u8; 11], n: usize, out: &mut Vec<(usize, [u8; 11])>) {
        let from = u16::from_le_bytes([d[1], d[2]]) as usize;
        let ts = u64::from_le_bytes([d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10]]);
        if from >= n || from == self.id {
            return;
        }
        self.clock = self.clock.max(ts) + 1;
        if d[0] & REPLY != 0 {
            self.replied(n, out);
        }
        if d[0] & REQUEST != 0 {
            match self.mine {
                Some(mine) if (mine, self.id) < (ts, from) => self.deferred[from] = true,
                _ => out.push((from, self.datagram(REPLY))),
            }
        }
    }

    fn datagram(&self, kind: u8) -> [u8; 11] {
        let mut b = [0u8; 11];
        b[0] = kind;
        b[1..3].copy_from_slice(&(self.id as u16).to_le_bytes());
        b[3..].copy_from_slice(&self.clock.to_le_bytes());
        b
    }

    /// A new request to every peer (`n` peers, self included), each with the deferred reply
    /// it owes that peer.
    fn request(&mut self, n: usize, out: &mut Vec<(usize, [u8; 11])>) {
        self.clock += 1;
        self.mine = Some(self.clock);
        self.missing = n - 1;
        for to in (0..n).filter(|&p| p != self.id) {
            let owed = std::mem::take(&mut self.deferred[to]);
            out.push((to, self.datagram(REQUEST | if owed { REPLY } else { 0 })));
        }
    }

    /// A reply came; the last one awaited is the entry, and the exit at once (no holding).
    fn replied(&mut self, n: usize, out: &mut Vec<(usize, [u8; 11])>) {
        if self.mine.is_none() || self.missing == 0 {
            return;
        }
        self.missing -= 1;
        if self.missing > 0 {
            return;
        }
        self.made += 1;
        self.mine = None;
        if self.made < self.requests {
            self.request(n, out);
            return;
        }
        for to in 0..n {
            if std::mem::take(&mut self.deferred[to]) {
                out.push((to, self.datagram(REPLY)));
            }
        }
        out.push((n, [DONE; 11]));
    }
}

/// Runs `n` bare processes to `requests` entries each and returns the time from the go to
/// the last process's last entry, in ms (start-up and exit left out: the pattern alone).
pub fn ra_floor_ms(n: usize, requests: usize, poll: bool) -> Result<f64, CliError> {
    let me = UdpSocket::bind("127.0.0.1:0").map_err(|e| failed(format!("bind: {e}")))?;
    let addr = me.local_addr().map_err(|e| failed(e.to_string()))?.to_string();
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let mut children: Vec<Child> = Vec::new();
    let spawned = (0..n).try_for_each(|id| {
        let child = Command::new(&exe)
            .args(["bench-ra-floor", "--launcher", &addr, "--id", &id.to_string()])
            .args(["--requests", &requests.to_string()])
            .args(poll.then_some("--poll"))
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| failed(format!("cannot spawn a bare process: {e}")))?;
        children.push(child);
        Ok::<(), CliError>(())
    });
    let result = spawned.and_then(|_| run(&me, n));
    let ports: Vec<u16> = result.as_ref().map(|(p, _)| p.clone()).unwrap_or_default();
    for p in &ports {
        let _ = me.send_to(&[STOP], SocketAddr::from(([127, 0, 0, 1], *p)));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for mut c in children {
        while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
    result.map(|(_, ms)| ms)
}

/// Gathers the processes' ports, gives the go, and waits for every DONE: (ports, ms).
fn run(me: &UdpSocket, n: usize) -> Result<(Vec<u16>, f64), CliError> {
    me.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| failed(e.to_string()))?;
    let mut ports = vec![0u16; n];
    let mut buf = [0u8; 64];
    let mut heard = 0;
    while heard < n {
        let got = me
            .recv(&mut buf)
            .map_err(|e| failed(format!("a bare process did not start: {e}")))?;
        let id = u16::from_le_bytes([buf[0], buf[1]]) as usize;
        if got == 4 && id < n && ports[id] == 0 {
            ports[id] = u16::from_le_bytes([buf[2], buf[3]]);
            heard += 1;
        }
    }
    let mut go = vec![GO];
    go.extend(ports.iter().flat_map(|p| p.to_le_bytes()));
    let t0 = Instant::now();
    for p in &ports {
        let _ = me.send_to(&go, SocketAddr::from(([127, 0, 0, 1], *p)));
    }
    let mut done = 0;
    while done < n {
        let got = me
            .recv(&mut buf)
            .map_err(|e| failed(format!("the bare processes stalled: {e}")))?;
        if got == 11 && buf[0] == DONE {
            done += 1;
        }
    }
    Ok((ports, t0.elapsed().as_secs_f64() * 1000.0))
}

#[cfg(test)]
mod tests {
    use super::Bare;

    /// Three processes in one address space, datagrams delivered in order: every one makes
    /// all its entries (none is left waiting for a reply that never comes).
    #[test]
    fn bare_processes_make_every_entry() {
        let n = 3;
        let k = 4;
        let mut ps: Vec<Bare> = (0..n).map(|id| Bare::new(id, n, k)).collect();
        let mut queue: std::collections::VecDeque<(usize, usize, [u8; 11])> = Default::default();
        for (from, p) in ps.iter_mut().enumerate() {
            let mut out = Vec::new();
            p.request(n, &mut out);
            queue.extend(out.into_iter().map(|(to, b)| (from, to, b)));
        }
        let mut entries = Vec::new();
        while let Some((from, to, b)) = queue.pop_front() {
            let p = &mut ps[to];
            let before = p.made;
            assert_eq!(u16::from_le_bytes([b[1], b[2]]) as usize, from);
            let mut out = Vec::new();
            p.take(&b, n, &mut out);
            if p.made > before {
                entries.push(to);
            }
            queue.extend(out.into_iter().filter(|(t, _)| *t < n).map(|(t, b)| (to, t, b)));
        }
        assert_eq!(entries.len(), n * k, "{entries:?}");
        for id in 0..n {
            assert_eq!(entries.iter().filter(|&&e| e == id).count(), k);
        }
    }
}
