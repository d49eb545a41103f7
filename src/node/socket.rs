//! The node's one UDP socket: built with socket2 (large buffers, non-blocking), used through mio.
//! The launcher binds it and hands it down as an inherited descriptor ([`adopt_udp`]); a node
//! started by hand binds its own ([`bind_udp`]).

use crate::error::{failed, usage, CliError};
use nix::fcntl::FcntlArg;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, FromRawFd, RawFd};

/// Socket buffer size asked for; the kernel may cap it (net.core.rmem_max).
const BUFFER_BYTES: usize = 4 << 20;

/// Binds a UDP socket at `addr` with large send and receive buffers, blocking mode unchanged
/// (the launcher binds it; the node that inherits it makes it non-blocking).
pub(crate) fn bind_std(addr: SocketAddr) -> Result<std::net::UdpSocket, CliError> {
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| failed(format!("cannot create a UDP socket: {e}")))?;
    // Smaller buffers still work; only a flood would show the difference.
    let _ = sock.set_recv_buffer_size(BUFFER_BYTES);
    let _ = sock.set_send_buffer_size(BUFFER_BYTES);
    sock.bind(&addr.into()).map_err(|e| bind_error(addr, e))?;
    Ok(sock.into())
}

/// Binds a non-blocking UDP socket at `addr`, with large send and receive buffers.
pub(crate) fn bind_udp(addr: SocketAddr) -> Result<mio::net::UdpSocket, CliError> {
    nonblocking(bind_std(addr)?)
}

/// Takes over the UDP socket the launcher bound at `listen` and left open as descriptor `fd`
/// (`--fd`): it must be open, a datagram socket, and bound to exactly `listen`.
pub(crate) fn adopt_udp(fd: RawFd, listen: SocketAddr) -> Result<mio::net::UdpSocket, CliError> {
    // SAFETY: the borrow lives only for this one fcntl, which fails cleanly on a closed fd.
    let open = fd >= 3 && nix::fcntl::fcntl(unsafe { BorrowedFd::borrow_raw(fd) }, FcntlArg::F_GETFD).is_ok();
    if !open {
        return Err(usage(format!(
            "--fd {fd}: no such open descriptor (the launcher passes it)"
        )));
    }
    // SAFETY: the descriptor is open (checked above) and nothing else in this process owns it:
    // it was inherited across exec for this purpose only.
    let sock = unsafe { Socket::from_raw_fd(fd) };
    match sock.r#type() {
        Ok(t) if t == Type::DGRAM => {}
        Ok(_) => return Err(usage(format!("--fd {fd}: not a datagram socket"))),
        Err(e) => return Err(usage(format!("--fd {fd}: not a socket ({e})"))),
    }
    let bound = sock
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .ok_or_else(|| usage(format!("--fd {fd}: the socket is not bound to an address")))?;
    if bound != listen {
        return Err(usage(format!(
            "--fd {fd}: the socket is bound to {bound}, not to --listen {listen}"
        )));
    }
    nonblocking(sock.into())
}

fn nonblocking(sock: std::net::UdpSocket) -> Result<mio::net::UdpSocket, CliError> {
    sock.set_nonblocking(true)
        .map_err(|e| failed(format!("cannot make the socket non-blocking: {e}")))?;
    Ok(mio::net::UdpSocket::from_std(sock))
}

fn bind_error(addr: SocketAddr, e: io::Error) -> CliError {
    match e.kind() {
        io::ErrorKind::AddrInUse => failed(format!("port {} is already in use ({addr})", addr.port())),
        io::ErrorKind::AddrNotAvailable => usage(format!("address {addr} is not on this machine")),
        _ => failed(format!("cannot bind {addr}: {e}")),
    }
}
