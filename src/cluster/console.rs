//! The console's commands, the same at the launcher's stdin and over its control socket.

/// One console command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// SIGSTOP a node.
    Pause(u64),
    /// SIGCONT a node.
    Resume(u64),
    /// SIGKILL a node.
    Kill(u64),
    /// Start a dead node again.
    Restart(u64),
    /// The status table.
    Status,
    /// The tail of a node's human log: node, lines.
    Logs(u64, usize),
    /// The list of commands.
    Help,
    /// Stop every node cleanly and exit.
    Quit,
    /// `net VERB ...`: the words after `net`, checked by the launcher against the members.
    Net(Vec<String>),
}

/// The answer to `help`.
pub(crate) const HELP: &str = "\
commands:
  pause N        SIGSTOP node N (slow, not dead)
  resume N       SIGCONT node N
  kill N         SIGKILL node N (dead)
  restart N      start a dead node N again
  status         who runs, who is paused or dead, whom each node believes leads
  logs N [K]     the last K lines (default 10) of node N's log
  net cut A B [--one-way]       cut the link A-B (both ways, or only A to B)
  net partition 1,2,3 4,5 ...  split into sides (a node not named is alone)
  net heal [A B]               lift every network rule, or make the link A-B perfect
  net loss PCT [A B]           lose PCT% of datagrams on every link, or on A-B
  net delay MS[:JITTER] [A B]  hold datagrams MS +- JITTER ms (reorders them)
  net status                   the network rules in force
  help           this list
  quit           stop every node cleanly and exit";

/// How many log lines `logs N` shows without a count, and at most.
const LOG_LINES: usize = 10;
const MAX_LOG_LINES: usize = 1000;

/// Parses one line; `Ok(None)` for a blank line. An error is one line naming the problem.
pub fn parse(line: &str) -> Result<Option<Command>, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&verb, args)) = words.split_first() else {
        return Ok(None);
    };
    let node = |what: &str| -> Result<u64, String> {
        match args.first() {
            None => Err(format!("{what} needs a node id, e.g. `{what} 3`")),
            Some(a) => a
                .parse()
                .map_err(|_| format!("{what}: '{a}' is not a node id (a whole number)")),
        }
    };
    if verb == "net" {
        return Ok(Some(Command::Net(args.iter().map(|s| s.to_string()).collect())));
    }
    let max_args = match verb {
        "logs" => 2,
        "pause" | "resume" | "kill" | "restart" => 1,
        "status" | "help" | "?" | "quit" | "exit" => 0,
        other => return Err(unknown(other)),
    };
    if args.len() > max_args {
        return Err(format!("{verb}: too many arguments (type help)"));
    }
    let cmd = match verb {
        "pause" => Command::Pause(node(verb)?),
        "resume" => Command::Resume(node(verb)?),
        "kill" => Command::Kill(node(verb)?),
        "restart" => Command::Restart(node(verb)?),
        "status" => Command::Status,
        "help" | "?" => Command::Help,
        "quit" | "exit" => Command::Quit,
        "logs" => {
            let lines = match args.get(1) {
                None => LOG_LINES,
                Some(k) => match k.parse::<usize>() {
                    Ok(k) if (1..=MAX_LOG_LINES).contains(&k) => k,
                    _ => return Err(format!("logs: '{k}' is not a line count from 1 to {MAX_LOG_LINES}")),
                },
            };
            Command::Logs(node(verb)?, lines)
        }
        other => return Err(unknown(other)),
    };
    Ok(Some(cmd))
}

fn unknown(verb: &str) -> String {
    format!("unknown command '{verb}' (type help)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_nonsense_is_named() {
        assert_eq!(parse("  pause 8 ").unwrap(), Some(Command::Pause(8)));
        assert_eq!(parse("logs 3").unwrap(), Some(Command::Logs(3, 10)));
        assert_eq!(parse("logs 3 50").unwrap(), Some(Command::Logs(3, 50)));
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("quit").unwrap(), Some(Command::Quit));
        assert!(parse("dance").unwrap_err().contains("unknown command 'dance'"));
        assert!(parse("fly 3").unwrap_err().contains("unknown command 'fly'"));
        assert!(parse("kill").unwrap_err().contains("needs a node id"));
        assert!(parse("kill x").unwrap_err().contains("'x' is not a node id"));
        assert!(parse("kill 1 2").unwrap_err().contains("too many"));
        assert!(parse("logs 1 0").unwrap_err().contains("line count"));
    }

    #[test]
    fn net_lines_go_to_the_launcher_whole_and_help_lists_every_verb() {
        assert_eq!(
            parse("net cut 2 10 --one-way").unwrap(),
            Some(Command::Net(vec![
                "cut".into(),
                "2".into(),
                "10".into(),
                "--one-way".into()
            ]))
        );
        assert_eq!(parse("net").unwrap(), Some(Command::Net(vec![])));
        for verb in ["cut", "partition", "heal", "loss", "delay", "status"] {
            assert!(HELP.contains(&format!("net {verb}")), "{verb}");
        }
    }
}
