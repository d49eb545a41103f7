//! The node's one UDP socket: built with socket2 (large buffers, non-blocking), used through mio.

use crate::error::{failed, CliError};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;

/// Socket buffer size asked for; the kernel may cap it (net.core.rmem_max).
const BUFFER_BYTES: usize = 4 << 20;

/// Binds a non-blocking UDP socket at `addr`, with large send and receive buffers.
pub fn bind_udp(addr: SocketAddr) -> Result<mio::net::UdpSocket, CliError> {
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| failed(format!("cannot create a UDP socket: {e}")))?;
    // Smaller buffers still work; only a flood would show the difference.
    let _ = sock.set_recv_buffer_size(BUFFER_BYTES);
    let _ = sock.set_send_buffer_size(BUFFER_BYTES);
    sock.set_nonblocking(true)
        .map_err(|e| failed(format!("cannot make the socket non-blocking: {e}")))?;
    sock.bind(&addr.into()).map_err(|e| bind_error(addr, e))?;
    Ok(mio::net::UdpSocket::from_std(sock.into()))
}

fn bind_error(addr: SocketAddr, e: io::Error) -> CliError {
    match e.kind() {
        io::ErrorKind::AddrInUse => crate::error::usage(format!("port {} is already in use ({addr})", addr.port())),
        io::ErrorKind::AddrNotAvailable => crate::error::usage(format!("address {addr} is not on this machine")),
        _ => failed(format!("cannot bind {addr}: {e}")),
    }
}
