//! The control socket: a Unix stream socket in the run directory through which another
//! terminal gives console commands (`coordlab pause 8`). One command per connection: the client
//! sends a line, the launcher answers and closes. An answer that starts with `error: ` is a
//! refusal.
//!
//! A client that connects and sends nothing must not cost the launcher its descriptors: a
//! connection without a whole command within [`IDLE_TIMEOUT`] is closed with an error line, and
//! at most [`MAX_PENDING`] are held; when that many wait, the one waiting longest is closed to
//! make room (a real client sends its command at once, so it is never the oldest for long).

use crate::error::{failed, usage, CliError};
use crate::trace::RunInfo;
use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The prefix of a refusal.
pub(crate) const ERROR_PREFIX: &str = "error: ";

/// The socket's file name inside the run directory.
pub(crate) const SOCKET_NAME: &str = "control.sock";

/// Longest command line accepted.
const MAX_LINE: usize = 4096;

/// How long a connection may wait to send a whole command line.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(2);

/// How many connections may wait for their command at once.
pub(crate) const MAX_PENDING: usize = 64;

/// How long a client waits to connect and for the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The launcher's end: a listener and the connections still sending their command.
pub(crate) struct Server {
    path: PathBuf,
    listener: UnixListener,
    pending: HashMap<usize, Pending>,
}

/// A connection still sending its command.
struct Pending {
    stream: UnixStream,
    buf: Vec<u8>,
    since: Instant,
}

/// What a connection produced when it became readable.
pub(crate) enum Incoming {
    /// Not a whole line yet.
    Waiting,
    /// A command line to answer with [`Server::answer`].
    Line(String),
    /// The connection closed or failed without a command.
    Gone,
}

impl Server {
    /// Listens on `path` (a stale socket left by a killed launcher is replaced).
    pub fn bind(path: &Path) -> io::Result<Self> {
        if path.exists() {
            std::fs::remove_file(path)?;
        }
        let (short, _dir) = reachable(path)?;
        let listener = UnixListener::bind(short)?;
        listener.set_nonblocking(true)?;
        Ok(Server {
            path: path.to_path_buf(),
            listener,
            pending: HashMap::new(),
        })
    }

    /// The listening descriptor, to register with the poll.
    pub(crate) fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// Accepts every waiting connection; `key` gives each a number, and the caller registers
    /// the returned streams with the poll under those numbers.
    pub fn accept(&mut self, mut key: impl FnMut() -> usize) -> Vec<(usize, std::os::fd::RawFd)> {
        use std::os::fd::AsRawFd;
        let mut out = Vec::new();
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if self.pending.len() >= MAX_PENDING {
                        self.evict_oldest();
                    }
                    let k = key();
                    out.push((k, stream.as_raw_fd()));
                    self.pending.insert(
                        k,
                        Pending {
                            stream,
                            buf: Vec::new(),
                            since: Instant::now(),
                        },
                    );
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        // A connection evicted within this batch is closed, and its descriptor number may
        // already belong to a later one: only those still held may be registered.
        out.retain(|(k, _)| self.pending.contains_key(k));
        out
    }

    fn evict_oldest(&mut self) {
        if let Some(&k) = self.pending.iter().min_by_key(|(_, p)| p.since).map(|(k, _)| k) {
            let msg = format!("{ERROR_PREFIX}closed: {MAX_PENDING} connections were waiting to send a command");
            self.answer(k, &msg);
        }
    }

    /// How many connections wait for their command.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Closes, with an error line, every connection that has not sent a whole command within
    /// [`IDLE_TIMEOUT`] of connecting; returns how many.
    pub(crate) fn expire(&mut self, now: Instant) -> usize {
        let stale: Vec<usize> = self
            .pending
            .iter()
            .filter(|(_, p)| now.duration_since(p.since) >= IDLE_TIMEOUT)
            .map(|(&k, _)| k)
            .collect();
        let msg = format!(
            "{ERROR_PREFIX}no whole command line within {} s",
            IDLE_TIMEOUT.as_secs()
        );
        for &k in &stale {
            self.answer(k, &msg);
        }
        stale.len()
    }

    /// Reads what connection `k` sent so far.
    pub fn read(&mut self, k: usize) -> Incoming {
        let Some(Pending { stream, buf, .. }) = self.pending.get_mut(&k) else {
            return Incoming::Gone;
        };
        let mut chunk = [0u8; 1024];
        let eof = loop {
            match stream.read(&mut chunk) {
                Ok(0) => break true,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.pending.remove(&k);
                    return Incoming::Gone;
                }
            }
            if buf.len() > MAX_LINE {
                self.answer(k, &format!("{ERROR_PREFIX}command longer than {MAX_LINE} bytes"));
                return Incoming::Gone;
            }
        };
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            return Incoming::Line(String::from_utf8_lossy(&buf[..end]).into_owned());
        }
        if eof {
            if buf.is_empty() {
                self.pending.remove(&k);
                return Incoming::Gone;
            }
            return Incoming::Line(String::from_utf8_lossy(buf).into_owned());
        }
        Incoming::Waiting
    }

    /// Sends `reply` on connection `k` and closes it (the poll forgets a closed descriptor).
    /// The write never blocks: an answer fits the socket buffer, and a client that does not
    /// read must not stall the launcher (what does not fit is lost with the connection).
    pub fn answer(&mut self, k: usize, reply: &str) {
        let Some(p) = self.pending.remove(&k) else {
            return;
        };
        let _ = (&p.stream).write_all(format!("{reply}\n").as_bytes());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The client's end: sends `command` to the launcher of the run in `run_dir` and returns its
/// answer. A refusal, or a run with no launcher listening (it has ended), is a usage error (exit 2).
pub fn send(run_dir: &Path, command: &str) -> Result<String, CliError> {
    let info_path = run_dir.join("run.json");
    let text = std::fs::read_to_string(&info_path).map_err(|e| {
        usage(format!(
            "no run at {} ({}: {e}); start one with scripts/ring.sh N",
            run_dir.display(),
            info_path.display()
        ))
    })?;
    let info: RunInfo =
        serde_json::from_str(&text).map_err(|e| failed(format!("{} is not a run.json: {e}", info_path.display())))?;
    let sock = match info.control {
        Some(p) if Path::new(&p).is_absolute() => PathBuf::from(p),
        Some(p) => run_dir.join(p),
        None => {
            return Err(failed(format!(
                "the run in {} has no control socket",
                run_dir.display()
            )))
        }
    };
    let secs = CLIENT_TIMEOUT.as_secs();
    let mut stream = connect(&sock).map_err(|e| match e.kind() {
        ErrorKind::NotFound | ErrorKind::ConnectionRefused => usage(format!(
            "no launcher is running for {} (nothing listens on {}): the run has ended",
            run_dir.display(),
            sock.display()
        )),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => failed(format!(
            "the launcher did not accept the connection within {secs} s ({})",
            sock.display()
        )),
        _ => failed(format!("cannot reach the launcher at {}: {e}", sock.display())),
    })?;
    let talk = |stream: &mut UnixStream| -> io::Result<String> {
        stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
        stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
        stream.write_all(format!("{}\n", command.trim()).as_bytes())?;
        stream.shutdown(std::net::Shutdown::Write)?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok(reply)
    };
    let reply = talk(&mut stream).map_err(|e| match e.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => failed(format!(
            "the launcher did not answer within {secs} s ({})",
            sock.display()
        )),
        _ => failed(format!("talking to the launcher at {}: {e}", sock.display())),
    })?;
    let reply = reply.trim_end().to_string();
    if reply.is_empty() {
        return Err(failed(
            "the launcher closed the connection without an answer (is it stopping?)",
        ));
    }
    match reply.strip_prefix(ERROR_PREFIX) {
        Some(msg) => Err(usage(msg.to_string())),
        None => Ok(reply),
    }
}

/// Connects to the control socket, giving up after [`CLIENT_TIMEOUT`] (a launcher whose
/// backlog is full would otherwise keep the client waiting forever).
fn connect(sock: &Path) -> io::Result<UnixStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let (short, _dir) = reachable(sock)?;
    let addr = SockAddr::unix(short)?;
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    loop {
        let s = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        match s.connect_timeout(&addr, CLIENT_TIMEOUT) {
            Ok(()) => {
                s.set_nonblocking(false)?;
                return Ok(UnixStream::from(std::os::fd::OwnedFd::from(s)));
            }
            // A full backlog refuses a non-blocking connect at once: try again until the deadline.
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A Unix socket's path as the kernel takes it (at most 107 bytes): a longer one (a deep
/// `--logs`) is reached through a descriptor of its directory, `/proc/self/fd/N/NAME`, which
/// must stay open until the bind or connect is done.
fn reachable(path: &Path) -> io::Result<(PathBuf, Option<std::fs::File>)> {
    use std::os::fd::AsRawFd;
    if path.as_os_str().len() < 100 {
        return Ok((path.to_path_buf(), None));
    }
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "a socket path needs a file name"))?;
    let dir = std::fs::File::open(path.parent().unwrap_or(Path::new(".")))?;
    let short = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
    Ok((short, Some(dir)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_deeper_than_the_kernels_limit_still_binds_and_answers() {
        let mut dir = std::env::temp_dir().join(format!("coordlab-deep-{}", std::process::id()));
        while dir.as_os_str().len() < 120 {
            dir = dir.join("a-rather-long-directory-name");
        }
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(SOCKET_NAME);
        assert!(path.as_os_str().len() > 108);
        let server = Server::bind(&path).unwrap();
        assert!(path.exists(), "the socket is made where it was asked for");
        let client = connect(&path);
        assert!(client.is_ok(), "{client:?}");
        drop(server);
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("coordlab-deep-{}", std::process::id())));
    }

    #[test]
    fn idle_connections_are_capped_and_expire_with_an_error_line() {
        let dir = std::env::temp_dir().join(format!("coordlab-control-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(SOCKET_NAME);
        let mut server = Server::bind(&path).unwrap();
        let clients: Vec<UnixStream> = (0..MAX_PENDING + 10)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let mut next = 0;
        let held = server.accept(|| {
            next += 1;
            next
        });
        assert_eq!(server.pending(), MAX_PENDING);
        assert_eq!(
            held.len(),
            MAX_PENDING,
            "evicted ones are not handed out for registration"
        );
        let answer = |mut s: &UnixStream| {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut a = String::new();
            let _ = s.read_to_string(&mut a);
            a
        };
        assert!(answer(&clients[0]).contains("connections were waiting"));
        assert_eq!(server.expire(Instant::now()), 0);
        assert_eq!(server.expire(Instant::now() + IDLE_TIMEOUT), MAX_PENDING);
        assert!(answer(&clients[MAX_PENDING + 9]).contains("no whole command line within 2 s"));
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_client_says_what_happened() {
        let dir = std::env::temp_dir().join(format!("coordlab-client-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(SOCKET_NAME);
        let info = serde_json::json!({
            "algo": "chang-roberts", "topology": "ring", "nodes": [], "start_us": 0,
            "options": {}, "control": path.display().to_string(),
        });
        std::fs::write(dir.join("run.json"), info.to_string()).unwrap();
        let e = send(&dir, "status").unwrap_err().to_string();
        assert!(e.contains("no launcher is running for"), "{e}");
        // A launcher that accepts but never answers (a hung one).
        let listener = UnixListener::bind(&path).unwrap();
        let e = send(&dir, "status").unwrap_err().to_string();
        assert!(e.contains("the launcher did not answer within 2 s"), "{e}");
        drop(listener);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
