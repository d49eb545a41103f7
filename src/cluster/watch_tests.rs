//! Tests of [`watch`](super).

use super::*;
use std::io::Write;

/// A fresh file `name` in the temp dir, a tail on it, and the file open for appending.
fn fresh(name: &str) -> (std::path::PathBuf, Tail, File) {
    let path = std::env::temp_dir().join(format!("coordlab-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let tail = Tail::new(path.clone());
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    (path, tail, f)
}

#[test]
fn only_complete_lines_are_read_and_each_once() {
    let (path, mut tail, mut f) = fresh("tail");
    assert!(tail.read_new().unwrap().is_empty());
    let line = r#"{"t":1,"node":2,"ev":"leader","leader":2,"term":1}"#;
    write!(f, "{line}\n{}", &line[..10]).unwrap();
    f.flush().unwrap();
    assert_eq!(tail.read_new().unwrap().len(), 1);
    assert!(tail.read_new().unwrap().is_empty());
    write!(f, "{}\nnot json\n", &line[10..]).unwrap();
    f.flush().unwrap();
    let recs = tail.read_new().unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(tail.records()[recs][0].node, Some(2));
    assert_eq!(tail.finish().unwrap().bad.len(), 1);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn what_a_tail_hands_over_is_what_reading_the_whole_file_finds() {
    let (path, mut tail, mut f) = fresh("tail-whole");
    let leader = r#"{"t":1,"node":2,"ev":"leader","leader":2,"term":1}"#;
    let send = r#"{"t":2,"node":2,"ev":"send","to":3,"msg":"X","bytes":1,"seq":1}"#;
    write!(f, "{leader}\n\n{}", &send[..7]).unwrap();
    f.flush().unwrap();
    tail.read_new().unwrap();
    write!(f, "{}\nnot json\n{{\"t\":3,\"ev\":\"future_kind\"}}\n", &send[7..]).unwrap();
    f.write_all(b"\xff\xfe\n").unwrap();
    tail.read_new().unwrap();
    // Killed in the middle of a line: no newline after it.
    write!(f, "{}", &leader[..20]).unwrap();
    f.flush().unwrap();
    let handed = tail.finish().unwrap();
    let whole = crate::trace::read_jsonl_file(&path).unwrap();
    assert_eq!(handed.records, whole.records);
    assert_eq!(handed.bad, whole.bad);
    assert_eq!(handed.unknown, whole.unknown);
    assert_eq!(handed.exists, whole.exists);
    assert_eq!(handed.cut, whole.cut);
    assert_eq!(handed.records.len(), 3);
    // The line cut by the kill is not a bad line: the file is marked cut.
    assert_eq!(handed.bad.len(), 2, "{:?}", handed.bad);
    assert!(handed.cut);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn deferred_message_lines_are_seen_at_once_and_parsed_in_order_at_the_end() {
    use crate::clock::VectorClock;
    use crate::trace::{Event, MappedTrace, Record};
    let (path, mut tail, f) = fresh("tail-deferred");
    drop(f);
    tail.defer_messages();
    // Every record carries its vector clock, written as changes after the first: the
    // deferred lines' changes must be taken in order at the end.
    let rec = |t: u64, event: Event| Record {
        t,
        node: Some(2),
        lamport: Some(t),
        pt: None,
        vc: Some(VectorClock::from_pairs((1..=8).map(|k| (k, t * 10 + k)))),
        hlc: None,
        event,
    };
    let send = |to, msg: &str| Event::Send {
        to,
        msg: msg.into(),
        bytes: 10,
        seq: 1,
        brief: "ELECTION(2, term=1)".into(),
    };
    let recv = |from, msg: &str| Event::Recv {
        from,
        msg: msg.into(),
        bytes: 10,
        seq: 1,
        brief: "with \"ev\":\"leader\" inside".into(),
    };
    let mut w = MappedTrace::append(&path).unwrap();
    w.write(&rec(1, Event::Leader { leader: 2, term: 1 })).unwrap();
    w.write(&rec(2, send(3, "ELECTION"))).unwrap();
    w.write(&rec(3, send(1, "RELEASE"))).unwrap();
    w.write(&rec(4, recv(1, "GRANT"))).unwrap();
    w.write(&rec(5, send(3, "RELEASE"))).unwrap();
    w.write(&rec(6, send(1, "ELECTION"))).unwrap();
    let new = tail.read_new().unwrap();
    let live: Vec<u64> = tail.records()[new].iter().map(|r| r.t).collect();
    assert_eq!(
        live,
        [1, 4, 5],
        "the leader line, the grant and what gives it back after it, at once"
    );
    assert_eq!(tail.take_last_deferred(), Some(("send", 6)));
    assert_eq!(tail.take_last_deferred(), None);
    // What the thread behind the run does with lines handed over: parse them, before the rest.
    tail.hand_behind().expect("lines to hand over").parse();
    w.write(&rec(7, Event::Leader { leader: 3, term: 2 })).unwrap();
    w.write_bytes(b"not json\n").unwrap();
    w.write(&rec(8, recv(3, "ELECTION"))).unwrap();
    let new = tail.read_new().unwrap();
    assert_eq!(tail.records()[new].iter().map(|r| r.t).collect::<Vec<_>>(), [7]);
    assert_eq!(tail.take_last_deferred(), Some(("recv", 8)));
    drop(w);
    let handed = tail.finish().unwrap();
    let whole = crate::trace::read_jsonl_file(&path).unwrap();
    // The file's own reading expands every clock; the launcher's keeps none, and is the same
    // reading otherwise.
    assert!(whole.records.iter().all(|r| r.vc.is_some()));
    assert_eq!(handed.records, without_vc(whole.records));
    assert_eq!(handed.bad, whole.bad);
    assert_eq!(handed.records.len(), 8);
    assert_eq!(handed.bad[0].line, 8);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_mapped_writers_zeros_are_not_read_and_lines_written_over_them_are() {
    use crate::trace::{Event, MappedTrace, Record};
    let (path, mut tail, f) = fresh("tail-mapped");
    drop(f);
    let rec = |t: u64| Record {
        t,
        node: Some(2),
        lamport: Some(t),
        pt: None,
        vc: None,
        hlc: None,
        event: Event::Leader { leader: 2, term: t },
    };
    let mut w = MappedTrace::append(&path).unwrap();
    w.write(&rec(1)).unwrap();
    assert!(
        std::fs::metadata(&path).unwrap().len() > w.len(),
        "zeros follow the line"
    );
    assert_eq!(tail.read_new().unwrap().len(), 1);
    assert!(tail.read_new().unwrap().is_empty(), "the zeros are no line");
    w.write(&rec(2)).unwrap();
    w.write_bytes(b"{\"t\":3,").unwrap();
    assert_eq!(tail.read_new().unwrap().len(), 1, "the line written over the zeros");
    // Killed: the window's zeros stay in the file.
    std::mem::forget(w);
    let handed = tail.finish().unwrap();
    let whole = crate::trace::read_jsonl_file(&path).unwrap();
    assert_eq!(handed.records, whole.records);
    assert_eq!(handed.records.iter().map(|r| r.t).collect::<Vec<_>>(), [1, 2]);
    assert!(handed.cut && whole.cut && handed.bad.is_empty() && whole.bad.is_empty());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn after_a_kill_mid_line_and_a_restart_the_tail_reads_the_new_boot_from_the_cut() {
    use crate::clock::VectorClock;
    use crate::trace::{Event, MappedTrace, Record};
    let (path, mut tail, f) = fresh("tail-restart");
    drop(f);
    let rec = |t: u64| Record {
        t,
        node: Some(2),
        lamport: Some(t),
        pt: None,
        vc: Some(VectorClock::from_pairs((1..=64).map(|k| (k, t + k)))),
        hlc: None,
        event: Event::Leader { leader: 2, term: t },
    };
    let mut w = MappedTrace::append(&path).unwrap();
    for t in 1..=3 {
        w.write(&rec(t)).unwrap();
    }
    w.write_bytes(b"{\"t\":4,\"node\":2,\"dvc\":{\"2\":9").unwrap();
    assert_eq!(tail.read_new().unwrap().len(), 3);
    std::mem::forget(w);
    tail.restarted();
    // The new boot cuts the unfinished line, maps a window as long as the old one, and
    // writes its own lines (the first with its whole clock) from where the cut was.
    let mut w = MappedTrace::append(&path).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > tail.offset);
    for t in 5..=6 {
        w.write(&rec(t)).unwrap();
    }
    assert_eq!(tail.read_new().unwrap().len(), 2);
    drop(w);
    let handed = tail.finish().unwrap();
    assert!(handed.bad.is_empty() && !handed.cut, "{:?}", handed.bad);
    assert_eq!(handed.records, without_vc([1, 2, 3, 5, 6].map(rec).into()));
    let whole = crate::trace::read_jsonl_file(&path).unwrap().records;
    assert_eq!(whole, [1, 2, 3, 5, 6].map(rec));
    assert_eq!(handed.records, without_vc(whole));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_poll_reads_lines_longer_than_its_first_piece_whole_and_tells_the_files_end_from_zeros() {
    let (path, _, mut f) = fresh("tail-pieces");
    // Lines several times the first read's size, then a writer's zeros.
    let long = format!(
        "{{\"t\":1,\"ev\":\"note\",\"text\":\"{}\"}}\n",
        "x".repeat(3 * FIRST_PIECE)
    );
    f.write_all(long.as_bytes()).unwrap();
    f.write_all(long.as_bytes()).unwrap();
    f.write_all(&[0u8; 100]).unwrap();
    f.flush().unwrap();
    let file = File::open(&path).unwrap();
    let (read, at_end) = read_written(&file, 0, FIRST_PIECE).unwrap();
    assert_eq!(read, format!("{long}{long}").as_bytes());
    assert!(!at_end);
    let (read, at_end) = read_written(&file, 2 * long.len() as u64, FIRST_PIECE).unwrap();
    assert!(read.is_empty() && !at_end, "zeros are a writer's window, not the end");
    let (read, at_end) = read_written(&file, 2 * long.len() as u64 + 100, FIRST_PIECE).unwrap();
    assert!(read.is_empty() && at_end, "nothing at all: the end of the file");
    let (read, at_end) = read_written(&file, 10_000, FIRST_PIECE).unwrap();
    assert!(read.is_empty() && at_end, "past the end (a file cut shorter)");
    // A first piece larger than what is there reads the same, stopping at the zeros.
    let (read, at_end) = read_written(&file, 0, 1 << 16).unwrap();
    assert_eq!(read, format!("{long}{long}").as_bytes());
    assert!(!at_end);
    assert_eq!(next_piece(0), FIRST_PIECE);
    assert_eq!(next_piece(10_000), 16_384);
    assert_eq!(next_piece(usize::MAX / 4), 1 << 20);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_flood_is_read_a_bounded_piece_a_call_and_whole_in_the_end() {
    let (path, mut tail, mut f) = fresh("tail-flood");
    let line = r#"{"t":1,"node":2,"ev":"send","to":3,"msg":"BEAT","bytes":9,"seq":1}"#;
    let count = 2 * MOST_A_READ / line.len() + 10;
    let mut text = String::with_capacity(count * (line.len() + 1));
    for _ in 0..count {
        text.push_str(line);
        text.push('\n');
    }
    f.write_all(text.as_bytes()).unwrap();
    f.flush().unwrap();
    // A call takes in at most MOST_A_READ bytes (a line over it waits for the next call).
    let first = tail.read_new().unwrap().len();
    assert!(first > 0 && first <= MOST_A_READ / line.len(), "{first}");
    let second = tail.read_new().unwrap().len();
    assert!(second > 0 && first + second < count, "{first} + {second} of {count}");
    let whole = tail.finish().unwrap();
    assert_eq!(whole.records.len(), count);
    assert!(whole.bad.is_empty());
    std::fs::remove_file(&path).unwrap();
}

/// `n` lines of a deferring tail's kinds: a `send` (left unparsed) and a `leader` (parsed at once)
/// in turns, from time `from`.
fn mixed_lines(from: u64, n: u64) -> String {
    (from..from + n)
        .map(|t| match t % 2 {
            0 => format!(
                "{{\"t\":{t},\"node\":2,\"ev\":\"send\",\"to\":3,\"msg\":\"REQUEST\",\"bytes\":9,\"seq\":{t}}}\n"
            ),
            _ => format!("{{\"t\":{t},\"node\":2,\"ev\":\"leader\",\"leader\":2,\"term\":{t}}}\n"),
        })
        .collect()
}

#[test]
fn lines_handed_behind_while_their_parsing_is_busy_wait_for_the_next_call() {
    let (path, mut tail, mut f) = fresh("tail-busy-behind");
    tail.defer_messages();
    f.write_all(mixed_lines(1, 4).as_bytes()).unwrap();
    f.write_all(b"not json\n").unwrap();
    f.flush().unwrap();
    tail.read_new().unwrap();
    let behind = tail.behind.clone().unwrap();
    let busy = behind.handed.lock().unwrap();
    assert!(
        tail.hand_behind().is_none(),
        "the launcher never waits for the parsing thread"
    );
    drop(busy);
    f.write_all(mixed_lines(5, 3).as_bytes()).unwrap();
    f.flush().unwrap();
    tail.read_new().unwrap();
    tail.hand_behind().expect("the lines kept, and the new ones").parse();
    f.write_all(mixed_lines(8, 2).as_bytes()).unwrap();
    f.flush().unwrap();
    let handed = tail.finish().unwrap();
    let whole = crate::trace::read_jsonl_file(&path).unwrap();
    assert_eq!(handed.records, whole.records);
    assert_eq!(handed.records.len(), 9);
    assert_eq!(handed.bad, whole.bad);
    assert_eq!(handed.bad[0].line, 5);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_deferring_tail_whose_file_is_cut_shorter_forgets_what_it_handed_behind() {
    let (path, mut tail, mut f) = fresh("tail-cut-behind");
    tail.defer_messages();
    f.write_all(mixed_lines(1, 6).as_bytes()).unwrap();
    f.flush().unwrap();
    tail.read_new().unwrap();
    tail.hand_behind().expect("lines to hand over").parse();
    // The file starts over, shorter than what was read: its old lines are no longer in it.
    f.set_len(0).unwrap();
    f.write_all(b"not json\n").unwrap();
    f.write_all(mixed_lines(20, 2).as_bytes()).unwrap();
    f.flush().unwrap();
    tail.read_new().unwrap();
    let handed = tail.finish().unwrap();
    let whole = crate::trace::read_jsonl_file(&path).unwrap();
    assert_eq!(handed.records, whole.records);
    assert_eq!(handed.records.iter().map(|r| r.t).collect::<Vec<_>>(), [20, 21]);
    assert_eq!(handed.bad, whole.bad);
    assert_eq!(handed.bad[0].line, 1, "lines are numbered from the file's new start");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_message_line_is_left_unparsed_with_its_kind_and_time_unless_the_view_needs_it() {
    let send = br#"{"t":1795871549900444,"node":1,"lamport":5,"dvc":{"1":3},"ev":"send","to":7,"msg":"REPLY","bytes":113,"seq":1}"#;
    assert_eq!(deferrable(send, false), Some(("send", 1_795_871_549_900_444)));
    let grant = br#"{"t":5,"node":1,"ev":"recv","from":2,"msg":"GRANT","bytes":9,"seq":1}"#;
    assert_eq!(deferrable(grant, false), None, "a grant changes the view at once");
    let release = br#"{"t":5,"node":1,"ev":"recv","from":2,"msg":"RELEASE","bytes":9,"seq":1}"#;
    assert_eq!(deferrable(release, false), Some(("recv", 5)));
    assert_eq!(deferrable(release, true), None, "a release after a grant gives it back");
    let note = br#"{"t":5,"node":1,"ev":"note","text":"\"ev\":\"send\""}"#;
    assert_eq!(deferrable(note, false), None);
    for t in ["", "x", "18446744073709551616"] {
        let line = format!(r#"{{"t":{t},"node":1,"ev":"send","to":2,"msg":"M","bytes":9,"seq":1}}"#);
        assert_eq!(deferrable(line.as_bytes(), false), None, "t = {t:?}");
    }
}

/// `records` as the launcher keeps them: without their vector clocks.
fn without_vc(mut records: Vec<crate::trace::Record>) -> Vec<crate::trace::Record> {
    for r in &mut records {
        r.vc = None;
    }
    records
}
