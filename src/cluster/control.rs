//! The control socket: a Unix stream socket in the run directory through which another
//! terminal gives console commands (`coordlab pause 8`). One command per connection: the client
//! sends a line, the launcher answers and closes. An answer that starts with `error: ` is a
//! refusal.

use crate::error::{failed, usage, CliError};
use crate::trace::RunInfo;
use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The prefix of a refusal.
pub const ERROR_PREFIX: &str = "error: ";

/// The socket's file name inside the run directory.
pub const SOCKET_NAME: &str = "control.sock";

/// Longest command line accepted.
const MAX_LINE: usize = 4096;

/// How long an answer may take to reach the client before it is given up.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// The launcher's end: a listener and the connections still sending their command.
pub struct Server {
    path: PathBuf,
    listener: UnixListener,
    pending: HashMap<usize, (UnixStream, Vec<u8>)>,
}

/// What a connection produced when it became readable.
pub enum Incoming {
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
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(Server {
            path: path.to_path_buf(),
            listener,
            pending: HashMap::new(),
        })
    }

    /// The listening descriptor, to register with the poll.
    pub fn listener(&self) -> &UnixListener {
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
                    let k = key();
                    out.push((k, stream.as_raw_fd()));
                    self.pending.insert(k, (stream, Vec::new()));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return out,
            }
        }
    }

    /// Reads what connection `k` sent so far.
    pub fn read(&mut self, k: usize) -> Incoming {
        let Some((stream, buf)) = self.pending.get_mut(&k) else {
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
    pub fn answer(&mut self, k: usize, reply: &str) {
        let Some((stream, _)) = self.pending.remove(&k) else {
            return;
        };
        let _ = stream
            .set_nonblocking(false)
            .and_then(|_| stream.set_write_timeout(Some(WRITE_TIMEOUT)))
            .and_then(|_| (&stream).write_all(format!("{reply}\n").as_bytes()));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The client's end: sends `command` to the launcher of the run in `run_dir` and returns its
/// answer. A refusal is a usage error (exit 2); no launcher listening is a failure (exit 1).
pub fn send(run_dir: &Path, command: &str) -> Result<String, CliError> {
    let info_path = run_dir.join("run.json");
    let text = std::fs::read_to_string(&info_path).map_err(|e| {
        failed(format!(
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
    let mut stream = UnixStream::connect(&sock).map_err(|e| match e.kind() {
        ErrorKind::NotFound | ErrorKind::ConnectionRefused => failed(format!(
            "no launcher is running for {} (nothing listens on {}): the run has ended",
            run_dir.display(),
            sock.display()
        )),
        _ => failed(format!("cannot reach the launcher at {}: {e}", sock.display())),
    })?;
    let talk = |stream: &mut UnixStream| -> io::Result<String> {
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.write_all(format!("{}\n", command.trim()).as_bytes())?;
        stream.shutdown(std::net::Shutdown::Write)?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok(reply)
    };
    let reply = talk(&mut stream).map_err(|e| failed(format!("talking to the launcher at {}: {e}", sock.display())))?;
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
