//! The floor: the round trip of a plain blocking UDP ping-pong between two processes.

use crate::error::{failed, CliError};
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Round-trip statistics in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct Floor {
    /// Median round trip.
    pub median_us: f64,
    /// 99th percentile round trip.
    pub p99_us: f64,
}

/// Answers every datagram on `listen` with the same bytes, until a datagram `stop` arrives.
pub fn echo_server(listen: &str) -> Result<(), CliError> {
    let sock = UdpSocket::bind(listen).map_err(|e| failed(format!("cannot bind {listen}: {e}")))?;
    let mut buf = [0u8; 2048];
    loop {
        let (n, from) = sock.recv_from(&mut buf).map_err(|e| failed(format!("recv: {e}")))?;
        if &buf[..n] == b"stop" {
            return Ok(());
        }
        let _ = sock.send_to(&buf[..n], from);
    }
}

/// Forwards every datagram on `listen` to `next`, until a datagram `stop` arrives (passed on too).
/// Prints the address it is bound to first (so `listen` may be port 0). With `poll`, it waits
/// the way a node does (a non-blocking socket in a mio `Poll`, read until it would block)
/// instead of in a blocking `recv_from`: the event loop's own share of a hop, with no engine.
pub fn relay(listen: &str, next: &str, poll: bool) -> Result<(), CliError> {
    let sock = UdpSocket::bind(listen).map_err(|e| failed(format!("cannot bind {listen}: {e}")))?;
    let bound = sock.local_addr().map_err(|e| failed(e.to_string()))?;
    let next: std::net::SocketAddr = next
        .parse()
        .map_err(|e| failed(format!("--next {next}: not an address: {e}")))?;
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{bound}")
            .and_then(|_| out.flush())
            .map_err(|e| failed(e.to_string()))?;
    }
    let mut buf = [0u8; 2048];
    // Forwards one datagram; true once it was `stop`.
    let forward = |sock: &UdpSocket, datagram: &[u8]| {
        let _ = sock.send_to(datagram, next);
        datagram == b"stop"
    };
    if !poll {
        loop {
            let (n, _) = sock.recv_from(&mut buf).map_err(|e| failed(format!("recv: {e}")))?;
            if forward(&sock, &buf[..n]) {
                return Ok(());
            }
        }
    }
    let mut waiting = Waiting::new(&sock)?;
    loop {
        waiting.wait()?;
        loop {
            match sock.recv_from(&mut buf) {
                Ok((n, _)) => {
                    if forward(&sock, &buf[..n]) {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(failed(format!("recv: {e}"))),
            }
        }
    }
}

/// A non-blocking socket's wait in a mio `Poll`, as a node waits.
pub(super) struct Waiting {
    poll: mio::Poll,
    events: mio::Events,
}

impl Waiting {
    pub(super) fn new(sock: &UdpSocket) -> Result<Waiting, CliError> {
        sock.set_nonblocking(true).map_err(|e| failed(e.to_string()))?;
        let poll = mio::Poll::new().map_err(|e| failed(format!("cannot create a poll: {e}")))?;
        poll.registry()
            .register(
                &mut mio::unix::SourceFd(&sock.as_raw_fd()),
                mio::Token(0),
                mio::Interest::READABLE,
            )
            .map_err(|e| failed(format!("cannot register with the poll: {e}")))?;
        Ok(Waiting {
            poll,
            events: mio::Events::with_capacity(8),
        })
    }

    pub(super) fn wait(&mut self) -> Result<(), CliError> {
        match self.poll.poll(&mut self.events, None) {
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => Err(failed(format!("poll: {e}"))),
            _ => Ok(()),
        }
    }
}

/// Waits for `children` until `deadline`, then kills whichever are left (a relay whose
/// predecessor died never sees `stop`).
fn reap(children: Vec<Child>, deadline: Instant) {
    for mut c in children {
        while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The plain ring floor: one token around `n` processes (this one and n-1 relays) for `laps`
/// laps; returns the median time of one hop, in microseconds, over the laps. With `poll`, the
/// relays wait in a mio `Poll` like a node (see [`relay`]).
pub(crate) fn ring_floor(n: usize, laps: usize, poll: bool) -> Result<f64, CliError> {
    let me = UdpSocket::bind("127.0.0.1:0").map_err(|e| failed(format!("bind: {e}")))?;
    let my_addr = me.local_addr().map_err(|e| failed(e.to_string()))?.to_string();
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let mut children = Vec::new();
    // Spawned from the last relay back to the first: each binds a free port itself and says
    // which, and that is where the one before it forwards (no port picked here and raced for).
    let mut next = my_addr;
    for _ in 1..n {
        let mut cmd = Command::new(&exe);
        cmd.args(["bench-relay", "--listen", "127.0.0.1:0", "--next", &next]);
        if poll {
            cmd.arg("--poll");
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("cannot spawn a relay: {e}")))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        children.push(child);
        if line.trim().is_empty() {
            reap(children, Instant::now());
            return Err(failed("a relay of the ring floor did not start"));
        }
        next = line.trim().to_string();
    }
    let first = next;
    me.set_read_timeout(Some(Duration::from_millis(500)))
        .map_err(|e| failed(e.to_string()))?;
    let mut buf = [0u8; 2048];
    let mut laps_us = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut warm = 0;
    while laps_us.len() < laps && Instant::now() < deadline {
        let t = Instant::now();
        let _ = me.send_to(&[7u8; 64], &first);
        if me.recv_from(&mut buf).is_ok() {
            // The first laps find relays still starting, or cold.
            warm += 1;
            if warm > 10 {
                laps_us.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
            }
        }
    }
    let _ = me.send_to(b"stop", &first);
    reap(children, Instant::now() + Duration::from_secs(5));
    if laps_us.is_empty() {
        return Err(failed("the relay ring never carried the token round"));
    }
    laps_us.sort_by(f64::total_cmp);
    Ok(laps_us[laps_us.len() / 2])
}

/// Measures `rounds` ping-pongs against a child echo process.
pub fn floor(rounds: usize) -> Result<Floor, CliError> {
    let probe = UdpSocket::bind("127.0.0.1:0").map_err(|e| failed(format!("bind: {e}")))?;
    let port = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| failed(e.to_string()))?
        .port();
    let server = format!("127.0.0.1:{port}");
    let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
    let mut child = Command::new(exe)
        .args(["bench-echo", "--listen", &server])
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot spawn the echo process: {e}")))?;
    probe
        .set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| failed(e.to_string()))?;
    let msg = [7u8; 64];
    let mut buf = [0u8; 2048];
    let mut rtts = Vec::with_capacity(rounds);
    let deadline = Instant::now() + Duration::from_secs(30);
    // Warm up until the echo process answers (it may still be starting).
    while Instant::now() < deadline {
        let _ = probe.send_to(&msg, &server);
        if probe.recv_from(&mut buf).is_ok() {
            break;
        }
    }
    while rtts.len() < rounds && Instant::now() < deadline {
        let t = Instant::now();
        let _ = probe.send_to(&msg, &server);
        if probe.recv_from(&mut buf).is_ok() {
            rtts.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let _ = probe.send_to(b"stop", &server);
    let _ = child.wait();
    if rtts.is_empty() {
        return Err(failed("the echo process never answered"));
    }
    rtts.sort_by(f64::total_cmp);
    let at = |q: f64| rtts[((rtts.len() - 1) as f64 * q) as usize];
    Ok(Floor {
        median_us: at(0.5),
        p99_us: at(0.99),
    })
}
