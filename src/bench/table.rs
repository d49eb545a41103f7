//! The elections table as `scripts/bench.sh` prints it: one row per launch, its first count
//! beside it and the rest below.

use super::elections::ElectionRow;

const WIDTHS: [usize; 10] = [13, 18, 25, 4, 9, 20, 9, 22, 9, 10];

fn line(cells: [&str; 10]) {
    let mut s = String::new();
    for (i, (c, w)) in cells.iter().zip(WIDTHS).enumerate() {
        // Numbers right-aligned, words left.
        if matches!(i, 3 | 4 | 6 | 8) {
            s.push_str(&format!("{c:>w$}  "));
        } else {
            s.push_str(&format!("{c:<w$}  "));
        }
    }
    println!("{}", s.trim_end());
}

/// Prints the column names.
pub(super) fn print_header() {
    line([
        "algorithm",
        "graph",
        "case",
        "n",
        "elect ms",
        "messages",
        "measured",
        "formula",
        "expected",
        "verdict",
    ]);
}

/// Prints one row: its first count beside the launch, the rest below it.
pub(super) fn print_row(r: &ElectionRow) {
    let n = r.n.to_string();
    let ms = r.election_ms.map(|m| format!("{m:.1}")).unwrap_or_else(|| "-".into());
    match &r.counts {
        Err(e) => {
            line([r.algo, &r.graph, &r.case, &n, "-", "", "", "", "", ""]);
            println!("    not measured: {e}");
        }
        Ok(counts) => {
            for (i, c) in counts.iter().enumerate() {
                let head: [&str; 5] = if i == 0 {
                    [r.algo, &r.graph, &r.case, &n, &ms]
                } else {
                    ["", "", "", "", ""]
                };
                line([
                    head[0],
                    head[1],
                    head[2],
                    head[3],
                    head[4],
                    &c.messages,
                    &c.measured.to_string(),
                    &c.formula,
                    &c.claim.expected(),
                    &c.claim.verdict(c.measured),
                ]);
            }
        }
    }
    for note in &r.notes {
        println!("    note: {note}");
    }
}
