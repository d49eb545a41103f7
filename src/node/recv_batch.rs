//! Datagrams read a batch at a time: one `recvmmsg` returns whatever is waiting, up to
//! [`SLOTS`] datagrams.
//!
//! The loop's socket is edge-triggered (mio), so it must be read until empty. With
//! `recv_from` that is one call per datagram and one more that fails with `EAGAIN`: on a ring,
//! where a wake-up brings one datagram, half of the receive calls were that empty one. A
//! non-blocking `recvmmsg` that returns fewer datagrams than it had room for found the queue
//! empty, so a wake-up that brings one datagram costs one receive call.

use super::recv_buf::{RecvBuf, RECV_BUF_LEN};
use nix::libc;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Datagrams a call can return.
pub(crate) const SLOTS: usize = 8;

/// The buffers, headers and source addresses of one batch.
pub(crate) struct RecvBatch {
    /// [`SLOTS`] buffers of [`RECV_BUF_LEN`], one mapping: a page is resident only once a
    /// datagram was written to it (on a ring, only the first slot's first page).
    buf: RecvBuf,
    hdrs: [libc::mmsghdr; SLOTS],
    iovs: [libc::iovec; SLOTS],
    addrs: [libc::sockaddr_storage; SLOTS],
    /// Room for each datagram's ancillary data: its arrival time, when the socket was asked
    /// for it ([`timestamps`]). u64s, for the alignment `cmsghdr` needs.
    ctrl: [[u64; CTRL_WORDS]; SLOTS],
}

/// A slot's room for ancillary data: a `cmsghdr` and a `timespec` (32 bytes on 64-bit Linux).
const CTRL_WORDS: usize = 8;

/// Asks the kernel to stamp every datagram `fd` receives with its arrival time (or stops it):
/// the user-space network delays a datagram from its arrival ([`RecvBatch::arrived`]). Off,
/// a datagram costs nothing more.
pub(crate) fn timestamps(fd: RawFd, on: bool) -> io::Result<()> {
    let v: libc::c_int = on.into();
    // SAFETY: the option value is a live c_int of the size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    match r {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

impl RecvBatch {
    /// Empty buffers.
    pub fn new() -> Self {
        // SAFETY: all-zero bytes are a valid value of these plain C structures.
        let zeroed = unsafe {
            std::mem::zeroed::<(
                [libc::mmsghdr; SLOTS],
                [libc::iovec; SLOTS],
                [libc::sockaddr_storage; SLOTS],
            )>()
        };
        RecvBatch {
            buf: RecvBuf::with_len(SLOTS * RECV_BUF_LEN),
            hdrs: zeroed.0,
            iovs: zeroed.1,
            addrs: zeroed.2,
            ctrl: [[0; CTRL_WORDS]; SLOTS],
        }
    }

    /// The first slot, for the warm-up to touch.
    pub fn first_slot(&mut self) -> &mut [u8] {
        &mut self.buf[..RECV_BUF_LEN]
    }

    /// Reads what is waiting on `fd` (non-blocking): how many datagrams, 0 if none. Fewer than
    /// [`SLOTS`] means the socket was found empty. `stamped`: the socket stamps arrivals
    /// ([`timestamps`]), so each datagram gets room for its stamp ([`RecvBatch::arrived`]).
    pub fn recv(&mut self, fd: RawFd, stamped: bool) -> io::Result<usize> {
        let ctrl_len = if stamped {
            std::mem::size_of::<[u64; CTRL_WORDS]>()
        } else {
            0
        };
        // The headers point into this value, which may have moved since the last call: set
        // afresh each time (eight iterations of stores).
        let base = self.buf.as_mut_ptr();
        for i in 0..SLOTS {
            self.iovs[i] = libc::iovec {
                // SAFETY: slot i lies inside the mapping of SLOTS * RECV_BUF_LEN bytes.
                iov_base: unsafe { base.add(i * RECV_BUF_LEN) }.cast(),
                iov_len: RECV_BUF_LEN,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i].as_mut_ptr().cast();
            h.msg_controllen = ctrl_len as _;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        // SAFETY: every header points at a live buffer and address of this value, which is
        // borrowed mutably for the call; the kernel writes no more than the lengths given.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                SLOTS as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => Ok(0),
            _ => Err(e),
        }
    }

    /// Datagram `i` of the last call and where it came from. A datagram longer than a slot
    /// arrives cut to the slot's length, which is still refused as too large, never misread.
    pub fn get(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        let len = (self.hdrs[i].msg_len as usize).min(RECV_BUF_LEN);
        let start = i * RECV_BUF_LEN;
        (&self.buf[start..start + len], socket_addr(&self.addrs[i]))
    }

    /// When datagram `i` of the last call reached the socket, if the kernel stamped it
    /// ([`timestamps`] on): its age by the wall clock, taken from the monotonic now.
    pub fn arrived(&self, i: usize) -> Option<Instant> {
        let h = &self.hdrs[i].msg_hdr;
        // SAFETY: the header's control pointer and length are what the kernel filled in, inside
        // this slot's buffer; CMSG_FIRSTHDR/NXTHDR stay within msg_controllen.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(h) };
        while !c.is_null() {
            // SAFETY: c points at a whole cmsghdr inside the control buffer (CMSG_FIRSTHDR/NXTHDR).
            let hdr = unsafe { &*c };
            if hdr.cmsg_level == libc::SOL_SOCKET && hdr.cmsg_type == libc::SCM_TIMESTAMPNS {
                // SAFETY: an SCM_TIMESTAMPNS message carries a timespec, possibly unaligned.
                let ts = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>()) };
                let stamp = Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
                // The monotonic clock first: a preemption between the readings makes the
                // datagram look older, never younger, so it is never held past its due time.
                let mono = Instant::now();
                let wall = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
                return mono.checked_sub(wall.saturating_sub(stamp));
            }
            // SAFETY: as above.
            c = unsafe { libc::CMSG_NXTHDR(h, c) };
        }
        None
    }
}

/// The address the kernel wrote into `s`, if of an IP family.
fn socket_addr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in, which it is large and
            // aligned enough for.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_batch_returns_what_waits_in_order_with_senders_and_then_nothing() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut b = RecvBatch::new();
        assert_eq!(b.recv(rx.as_raw_fd(), false).unwrap(), 0);
        // More than a batch: the first call fills every slot, the second takes the rest.
        let sent: Vec<Vec<u8>> = (0..SLOTS + 3).map(|i| vec![i as u8; 10 + i]).collect();
        for d in &sent {
            tx.send_to(d, rx.local_addr().unwrap()).unwrap();
        }
        let mut got = Vec::new();
        loop {
            let n = b.recv(rx.as_raw_fd(), false).unwrap();
            for i in 0..n {
                let (d, from) = b.get(i);
                assert_eq!(from, Some(tx.local_addr().unwrap()));
                got.push(d.to_vec());
            }
            if n < SLOTS {
                break;
            }
        }
        assert_eq!(got, sent);
        assert_eq!(b.recv(rx.as_raw_fd(), false).unwrap(), 0);
    }

    #[test]
    fn a_stamped_datagram_arrived_when_it_was_sent_not_when_it_was_read() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut b = RecvBatch::new();
        tx.send_to(b"unstamped", rx.local_addr().unwrap()).unwrap();
        assert_eq!(b.recv(rx.as_raw_fd(), true).unwrap(), 1);
        assert_eq!(b.arrived(0), None);
        timestamps(rx.as_raw_fd(), true).unwrap();
        // The kernel turns its stamping on in deferred work when the first socket asks: until
        // then a datagram is stamped when read.
        std::thread::sleep(Duration::from_millis(100));
        let sent = Instant::now();
        tx.send_to(b"stamped", rx.local_addr().unwrap()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let read = Instant::now();
        assert_eq!(b.recv(rx.as_raw_fd(), true).unwrap(), 1);
        let arrived = b.arrived(0).expect("stamped");
        // Taken in when it was sent, 300 ms before it was read (the margins are for a
        // preempted test thread, not figures).
        assert!(read.duration_since(arrived) >= Duration::from_millis(250));
        assert!(
            arrived + Duration::from_millis(100) >= sent,
            "{:?} before the send",
            sent - arrived
        );
        timestamps(rx.as_raw_fd(), false).unwrap();
        tx.send_to(b"unstamped again", rx.local_addr().unwrap()).unwrap();
        assert_eq!(b.recv(rx.as_raw_fd(), true).unwrap(), 1);
        assert_eq!(b.arrived(0), None);
    }

    #[test]
    fn the_largest_datagram_arrives_whole() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // The largest UDP datagram over IPv4 fits a slot.
        let big = vec![5u8; 65_507];
        tx.send_to(&big, rx.local_addr().unwrap()).unwrap();
        let mut b = RecvBatch::new();
        assert_eq!(b.recv(rx.as_raw_fd(), false).unwrap(), 1);
        assert_eq!(b.get(0).0, &big[..]);
    }
}
