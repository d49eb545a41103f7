//! The datagrams of one step sent with one `sendmmsg`.
//!
//! A step of a broadcasting algorithm sends many datagrams at once: a Ricart-Agrawala or
//! Lamport REQUEST goes to every peer, a release answers every deferred request. One
//! `sendto` each was one system call's entry and exit per datagram; `sendmmsg` hands the
//! kernel the whole step in one call. Each datagram is still its own send: one refused (a
//! full socket buffer, an unreachable address) is lost and told, and the rest still go.

use nix::libc;
use socket2::SockAddr;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// The headers of one batch, kept between steps so a step allocates nothing once warm.
#[derive(Default)]
pub(crate) struct SendBatch {
    names: Vec<SockAddr>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl SendBatch {
    /// Sends each of `datagrams` (a tag of the caller's, the bytes, the address) on `fd`;
    /// `lost(tag, address, error)` for each that the kernel refused.
    pub fn send<T>(
        &mut self,
        fd: RawFd,
        datagrams: &[(T, &[u8], SocketAddr)],
        mut lost: impl FnMut(&T, SocketAddr, io::Error),
    ) {
        if datagrams.is_empty() {
            return;
        }
        self.names.clear();
        self.names.extend(datagrams.iter().map(|&(_, _, a)| SockAddr::from(a)));
        self.iovs.clear();
        self.iovs.extend(datagrams.iter().map(|&(_, b, _)| libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        }));
        self.hdrs.clear();
        for i in 0..datagrams.len() {
            // SAFETY: all-zero bytes are a valid mmsghdr (null pointers, zero lengths).
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_name = self.names[i].as_ptr() as *mut libc::c_void;
            h.msg_hdr.msg_namelen = self.names[i].len();
            h.msg_hdr.msg_iov = &mut self.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            self.hdrs.push(h);
        }
        let mut at = 0;
        while at < self.hdrs.len() {
            let left = (self.hdrs.len() - at).min(libc::UIO_MAXIOV as usize);
            // SAFETY: headers `at..at + left` point at addresses and buffers that live until
            // this function returns (`self.names`, `self.iovs`, the caller's `datagrams`); the
            // kernel only reads them and writes each header's `msg_len`.
            let n = unsafe {
                libc::sendmmsg(
                    fd,
                    self.hdrs.as_mut_ptr().add(at),
                    left as libc::c_uint,
                    libc::MSG_NOSIGNAL,
                )
            };
            if n > 0 {
                at += n as usize;
            } else {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // The first datagram left is the one refused: it is lost, the rest still go.
                let (tag, _, addr) = &datagrams[at];
                lost(tag, *addr, e);
                at += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn every_datagram_of_a_batch_arrives_whole_at_its_own_address() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx: Vec<UdpSocket> = (0..3).map(|_| UdpSocket::bind("127.0.0.1:0").unwrap()).collect();
        for r in &rx {
            r.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        }
        let big = vec![9u8; 60_000];
        let payloads: [&[u8]; 4] = [b"one", b"two", &big, b"four"];
        let to = [0, 1, 2, 0];
        let batch: Vec<(usize, &[u8], SocketAddr)> = payloads
            .iter()
            .zip(to)
            .enumerate()
            .map(|(i, (p, k))| (i, *p, rx[k].local_addr().unwrap()))
            .collect();
        let mut lost = Vec::new();
        SendBatch::default().send(tx.as_raw_fd(), &batch, |&i, _, e| lost.push((i, e.kind())));
        assert!(lost.is_empty(), "{lost:?}");
        let mut buf = vec![0u8; 65_536];
        let mut got = |k: usize| {
            let (n, from) = rx[k].recv_from(&mut buf).unwrap();
            assert_eq!(from, tx.local_addr().unwrap());
            buf[..n].to_vec()
        };
        assert_eq!(got(0), b"one");
        assert_eq!(got(0), b"four");
        assert_eq!(got(1), b"two");
        assert_eq!(got(2), big);
    }

    #[test]
    fn a_refused_datagram_is_told_and_the_others_still_go() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let too_big = vec![0u8; 70_000];
        let to = rx.local_addr().unwrap();
        let batch: Vec<(usize, &[u8], SocketAddr)> = vec![(0, b"a", to), (1, &too_big, to), (2, b"c", to)];
        let mut lost = Vec::new();
        SendBatch::default().send(tx.as_raw_fd(), &batch, |&i, _, _| lost.push(i));
        assert_eq!(lost, vec![1]);
        let mut buf = [0u8; 16];
        for want in [b"a", b"c"] {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], want);
        }
    }
}
