//! What the launcher does with what it is told: console lines, connections on the control socket, and the commands they carry (see [`launcher`](super)).

use super::*;

impl Launcher {
    /// Reads what stdin has, without ever blocking: each read is preceded by a zero-timeout
    /// poll, because stdin stays in blocking mode (making a shared terminal non-blocking would
    /// change it for the shell too).
    pub(super) fn read_stdin(&mut self) -> Option<Ending> {
        let mut chunk = [0u8; 4096];
        let mut eof = false;
        while self.stdin_open {
            let stdin = io::stdin();
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            match nix::poll::poll(&mut fds, PollTimeout::ZERO) {
                Ok(0) => break,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => eof = true,
            }
            if eof {
                break;
            }
            match nix::unistd::read(stdin.as_fd(), &mut chunk) {
                Ok(0) => eof = true,
                Ok(k) => self.stdin_buf.extend_from_slice(&chunk[..k]),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(_) => eof = true,
            }
            if eof {
                break;
            }
        }
        let mut ending = None;
        while let Some(end) = self.stdin_buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.stdin_buf.drain(..=end).collect();
            ending = ending.or(self.console_line(&String::from_utf8_lossy(&line)));
        }
        if eof {
            self.stdin_open = false;
            let _ = self.poll.registry().deregister(&mut SourceFd(&stdin_fd()));
            let rest = std::mem::take(&mut self.stdin_buf);
            ending = ending.or(self.console_line(&String::from_utf8_lossy(&rest)));
            // Said only if the run goes on: not after a `quit` read just before the end.
            if self.goal.is_console() && ending.is_none() {
                say!("(stdin ended) {NO_CONSOLE}");
            }
        }
        ending
    }

    pub(super) fn console_line(&mut self, line: &str) -> Option<Ending> {
        let (reply, ending) = self.execute(line);
        if !reply.is_empty() {
            say!("{}", reply);
        }
        ending
    }

    pub(super) fn accept(&mut self) -> Option<Ending> {
        let mut ending = None;
        let mut next = self.next_conn;
        let accepted = self.server.accept(|| {
            next += 1;
            next
        });
        self.next_conn = next;
        for (k, fd) in accepted {
            if self
                .poll
                .registry()
                .register(&mut SourceFd(&fd), Token(k), Interest::READABLE)
                .is_err()
            {
                self.server
                    .answer(k, &format!("{ERROR_PREFIX}the launcher cannot take this connection"));
                continue;
            }
            // A command may already be waiting: edge-triggered readiness would not report it.
            ending = ending.or(self.on_connection(k));
        }
        ending
    }

    pub(super) fn on_connection(&mut self, k: usize) -> Option<Ending> {
        let Incoming::Line(line) = self.server.read(k) else {
            return None;
        };
        let (reply, ending) = self.execute(&line);
        let reply = if reply.is_empty() { "ok".to_string() } else { reply };
        self.server.answer(k, &reply);
        if let Ok(Some(cmd)) = console::parse(&line) {
            if !matches!(cmd, Command::Status | Command::Logs(..) | Command::Help) {
                say!("[control] {}: {}", line.trim(), reply);
            }
        }
        ending
    }

    /// Runs one console line; returns the answer and, for `quit`, how the run ends.
    pub(super) fn execute(&mut self, line: &str) -> (String, Option<Ending>) {
        let cmd = match console::parse(line) {
            Ok(None) => return (String::new(), None),
            Ok(Some(c)) => c,
            Err(e) => return (format!("{ERROR_PREFIX}{e}"), None),
        };
        let fleet = &mut self.fleet;
        let result = match cmd {
            Command::Pause(id) => fleet.pause(id),
            Command::Resume(id) => fleet.resume(id),
            Command::Kill(id) => fleet.kill(id),
            Command::Restart(id) => fleet.restart(id),
            Command::Status => {
                fleet.refresh();
                Ok(fleet.status())
            }
            Command::Logs(id, lines) => fleet.log_tail(id, lines),
            Command::Help => Ok(format!(
                "{}\n\"elected in N ms\": {}",
                HELP.trim_end(),
                crate::cluster::narrate::ELECTION_TIME
            )),
            Command::Quit => return ("stopping every node".into(), Some(self.goal.interrupted("quit"))),
            Command::Net(words) => {
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                self.net.execute(&words, fleet)
            }
        };
        match result {
            Ok(s) => (s, None),
            Err(e) => (format!("{ERROR_PREFIX}{e}"), None),
        }
    }
}
