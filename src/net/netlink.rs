//! Whether the kernel's nftables answers this process: the question `nft list tables` asks (a
//! dump of the tables over netlink), asked in-process. Running `nft list tables` to choose the
//! backend cost every launch as root 3-4 ms (its fork, exec and start-up) before any node
//! started, about a thirtieth of a Ricart-Agrawala run of 20 x 20; the same question over a
//! netlink socket takes tens of microseconds, and fails alike where the kernel refuses nftables
//! (no `CAP_NET_ADMIN` in this network namespace, no nf_tables in the kernel).

use nix::libc;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

/// nfnetlink's subsystem of nf_tables, and its request for the tables.
const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFT_MSG_GETTABLE: u16 = 1;

/// Ok when nf_tables lists its tables to this process; Err: the kernel's refusal.
pub(crate) fn nftables_answers() -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_NETFILTER,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&sock);
    // A kernel that never answers must not hang the launch.
    let wait = libc::timeval { tv_sec: 2, tv_usec: 0 };
    // SAFETY: setsockopt reads `wait`, of the size given.
    unsafe {
        libc::setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&wait as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    // nlmsghdr (length, type, flags, sequence, port) and nfgenmsg (family, version, resource).
    let mut request = [0u8; 20];
    request[0..4].copy_from_slice(&20u32.to_ne_bytes());
    request[4..6].copy_from_slice(&((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE).to_ne_bytes());
    request[6..8].copy_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    request[8..12].copy_from_slice(&1u32.to_ne_bytes());
    // SAFETY: sockaddr_nl is plain data; all zeros but the family is the kernel's address.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: sendto reads `request` and `kernel`, of the sizes given.
    let sent = unsafe {
        libc::sendto(
            raw,
            request.as_ptr().cast(),
            request.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 << 10];
    loop {
        // SAFETY: recv writes at most `buf.len()` bytes into `buf`.
        let got = unsafe { libc::recv(raw, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(answer) = dump_end(&buf[..got as usize]) {
            return answer;
        }
    }
}

/// The end of a dump found in one datagram of netlink messages: Ok at `NLMSG_DONE`, the error of
/// an `NLMSG_ERROR` (an error of 0 is an acknowledgement); None while tables keep coming.
fn dump_end(mut msgs: &[u8]) -> Option<io::Result<()>> {
    while msgs.len() >= 16 {
        let len = u32::from_ne_bytes(msgs[0..4].try_into().expect("4 bytes")) as usize;
        let kind = u16::from_ne_bytes(msgs[4..6].try_into().expect("2 bytes"));
        match kind as i32 {
            libc::NLMSG_DONE => return Some(Ok(())),
            libc::NLMSG_ERROR if msgs.len() >= 20 => {
                let code = i32::from_ne_bytes(msgs[16..20].try_into().expect("4 bytes"));
                return Some(match code {
                    0 => Ok(()),
                    c => Err(io::Error::from_raw_os_error(-c)),
                });
            }
            _ => {}
        }
        // Messages are aligned to 4 bytes; a length that does not move on ends the datagram.
        let step = (len + 3) & !3;
        if len < 16 || step > msgs.len() {
            break;
        }
        msgs = &msgs[step..];
    }
    None
}

/// Where `program` is on `PATH` as an executable file, as a shell would find it.
pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// The in-process question gets the answer `nft list tables` gets, wherever the test runs
    /// (as root with nftables: both work; otherwise both fail, or nft is not there).
    #[test]
    fn the_kernel_answers_this_process_as_it_answers_nft() {
        let nft = Command::new("nft")
            .args(["list", "tables"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        match nft {
            Ok(status) => assert_eq!(nftables_answers().is_ok(), status.success(), "{:?}", nftables_answers()),
            Err(_) => assert!(on_path("nft").is_none()),
        }
    }

    #[test]
    fn a_dump_ends_at_done_or_at_an_error() {
        let msg = |kind: i32, extra: &[u8]| {
            let mut m = Vec::new();
            m.extend_from_slice(&((16 + extra.len()) as u32).to_ne_bytes());
            m.extend_from_slice(&(kind as u16).to_ne_bytes());
            m.extend_from_slice(&[0; 10]);
            m.extend_from_slice(extra);
            m
        };
        let table = msg(0x0a00, &[1, 2, 3, 4, 5, 6]);
        let mut two = table.clone();
        two.extend_from_slice(&[0, 0]);
        two.extend(msg(libc::NLMSG_DONE, &[0; 4]));
        assert!(matches!(dump_end(&two), Some(Ok(()))));
        assert!(dump_end(&table).is_none());
        let refused = msg(libc::NLMSG_ERROR, &(-libc::EPERM).to_ne_bytes());
        let err = dump_end(&refused).expect("an end").expect_err("an error");
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
        assert!(matches!(
            dump_end(&msg(libc::NLMSG_ERROR, &0i32.to_ne_bytes())),
            Some(Ok(()))
        ));
        assert!(dump_end(&[1, 2, 3]).is_none());
    }

    #[test]
    fn a_program_is_found_on_path_only_if_it_is_there() {
        assert!(on_path("sh").is_some());
        assert!(on_path("no-such-program-coordlab").is_none());
    }
}
