//! The floor: the round trip of a plain blocking UDP ping-pong between two processes.

use crate::error::{failed, CliError};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
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
