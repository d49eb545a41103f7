//! The console on a terminal: a `coordlab>` prompt with line editing (rustyline), whose typed
//! line is never broken by the story printed meanwhile (printed above the prompt instead).
//! Ctrl-D or Ctrl-C at the prompt stops the run like `quit`.
//!
//! The editor blocks in its own thread and hands each line to the launcher's poll through a
//! channel and a mio waker. Everything the launcher says goes through [`say`], which prints
//! above the prompt while one is shown. When stdin is not a terminal (a pipe, a test) none of
//! this is used: the launcher reads stdin itself.

use rustyline::ExternalPrinter as _;
use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};

type Printer = Box<dyn FnMut(String) -> bool + Send>;

/// While a prompt is shown: how to print above it.
static PRINTER: Mutex<Option<Printer>> = Mutex::new(None);

/// Prints one line for the user: above the prompt while one is shown, else to stdout. A closed
/// stdout must not kill the launcher mid-run, so errors are ignored.
pub(crate) fn say(line: String) {
    let mut printer = PRINTER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = printer.as_mut() {
        if p(line.clone()) {
            return;
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The prompt's side of the launcher: lines typed, and the terminal's settings to put back.
pub(crate) struct Prompt {
    /// Lines typed at the prompt (`quit` once Ctrl-D or Ctrl-C is pressed).
    pub lines: Receiver<String>,
    saved: Option<nix::sys::termios::Termios>,
    /// Kept here too: a waker dropped by the editor thread would take its pending wakeup along.
    _wake: Arc<mio::Waker>,
}

impl Prompt {
    /// Starts the prompt when stdin and stdout are terminals; `wake` is called after each line.
    pub fn start(wake: Arc<mio::Waker>) -> Option<Prompt> {
        if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
            return None;
        }
        let saved = nix::sys::termios::tcgetattr(std::io::stdin().as_fd()).ok();
        let mut editor = rustyline::DefaultEditor::new().ok()?;
        let mut printer = editor.create_external_printer().ok()?;
        *PRINTER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(move |line| printer.print(line).is_ok()));
        let (tx, rx) = channel();
        let keep = wake.clone();
        std::thread::spawn(move || loop {
            let line = match editor.readline("coordlab> ") {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    line
                }
                // Ctrl-D (end of input) and Ctrl-C (the terminal is raw: no SIGINT) stop the run.
                Err(_) => "quit".to_string(),
            };
            let last = matches!(line.trim(), "quit" | "exit");
            if last {
                // No prompt any more: print straight to stdout from now on (the editor's printer
                // would wait for a prompt that never comes).
                PRINTER.lock().unwrap_or_else(|e| e.into_inner()).take();
            }
            if tx.send(line).is_err() || wake.wake().is_err() || last {
                return;
            }
        });
        Some(Prompt {
            lines: rx,
            saved,
            _wake: keep,
        })
    }

    /// Takes the prompt down (the run is ending): output goes straight to stdout again, and
    /// the terminal gets its settings back even though the editor thread is still waiting.
    pub(crate) fn close(&mut self) {
        PRINTER.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.saved.take() {
            let _ = nix::sys::termios::tcsetattr(std::io::stdin().as_fd(), nix::sys::termios::SetArg::TCSANOW, &t);
            println!();
        }
    }
}
