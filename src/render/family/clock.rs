//! The clock view: each node's offset from true time, with its corrections and their bounds.

use super::*;

/// Each node's offset from true time (its physical clock minus the host's true time, from
/// every event's `pt`), with each correction: the offset before it, where it aims (before plus
/// the correction), and the bound it claims round that aim.
pub(super) fn clock(run: &RunDir, f: &Frame<'_>) -> Result<String, CliError> {
    let mut series: BTreeMap<NodeId, Vec<(u64, f64)>> = BTreeMap::new();
    let mut fixes: Vec<(NodeId, u64, f64, f64, f64, bool)> = Vec::new();
    for r in &run.node_events {
        let (Some(n), Some(pt)) = (r.node, r.pt) else { continue };
        let off = (pt as f64 - r.t as f64) / 1000.0;
        series.entry(n).or_default().push((r.t, off));
        if let Event::ClockAdjust {
            offset_us,
            bound_us,
            step,
            ..
        } = &r.event
        {
            fixes.push((
                n,
                r.t,
                off,
                off + *offset_us as f64 / 1000.0,
                *bound_us as f64 / 1000.0,
                *step,
            ));
        }
    }
    if series.is_empty() {
        return Err(usage(
            "--view clock: this run's events carry no physical clock reading (pt)",
        ));
    }
    let (t0, t1) = (f.story.t0, f.story.t1);
    let inside = |t: u64| t >= t0 && t <= t1;
    let mut lo = f64::MAX;
    let mut hi = f64::MIN;
    for pts in series.values() {
        for &(t, o) in pts.iter().filter(|p| inside(p.0)) {
            let _ = t;
            lo = lo.min(o);
            hi = hi.max(o);
        }
    }
    for &(_, _, a, b, e, _) in fixes.iter().filter(|x| inside(x.1)) {
        lo = lo.min(a).min(b - e);
        hi = hi.max(a).max(b + e);
    }
    if lo > hi {
        (lo, hi) = (-1.0, 1.0);
    }
    lo = lo.min(0.0);
    hi = hi.max(0.0);
    let pad = ((hi - lo) * 0.08).max(0.01);
    let (lo, hi) = (lo - pad, hi + pad);
    let (top, plot_h) = (80.0, 420.0);
    let yv = |o: f64| top + (hi - o) / (hi - lo) * plot_h;
    let height = top + plot_h + 60.0;
    let mut s = String::new();
    draw::open(&mut s, Some("clock-view"), WIDTH, height, 11.0);
    header(
        &mut s,
        &format!("{}: each clock's offset from true time", f.story.algo),
        &[
            format!(
                "{} corrections: a hollow circle where the clock stood before, an arrow to where it aims, the bar its claimed bound",
                fixes.len()
            ),
            "the line: the clock's offset at each of its events (slewed corrections bend it gradually); 0 is true time"
                .to_string(),
        ],
    );
    // The value axis, with true time at 0.
    let step = draw::nice_step((hi - lo) / 8.0);
    let mut v = (lo / step).ceil() * step;
    while v <= hi {
        let yy = yv(v);
        let (stroke, width) = if v.abs() < step / 2.0 {
            ("#000", 1.2)
        } else {
            ("#e3e3e3", 0.6)
        };
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="{stroke}" stroke-width="{width}"/>"#,
            WIDTH - RIGHT
        );
        let label = if v.abs() < step / 2.0 {
            "0 (true time)".to_string()
        } else {
            format!("{v:+} ms")
        };
        draw::text(&mut s, LEFT - 6.0, yy + 4.0, Anchor::End, "", &label);
        v += step;
    }
    for (k, (n, pts)) in series.iter().enumerate() {
        let colour = draw::colour(k);
        let mut d = String::new();
        let mut last_x = f64::MIN;
        for &(t, o) in pts.iter().filter(|p| inside(p.0)) {
            let x = f.x(t);
            // One point per pixel column is all a line can show.
            if x - last_x < 0.5 {
                continue;
            }
            let _ = write!(d, "{}{x:.1},{:.1}", if d.is_empty() { "M" } else { "L" }, yv(o));
            last_x = x;
        }
        let _ = writeln!(
            s,
            r#"<path class="offset" d="{d}" fill="none" stroke="{colour}" stroke-width="1.6"><title>node {n}'s clock offset from true time</title></path>"#
        );
        let legend_x = LEFT + 10.0 + 90.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<g class="legend"><line x1="{legend_x}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"/><text x="{}" y="{}">node {n}</text></g>"#,
            legend_x + 16.0,
            legend_x + 20.0,
            height - 8.0,
            ly = height - 12.0
        );
    }
    for &(n, t, before, aim, bound, step) in fixes.iter().filter(|x| inside(x.1)) {
        let k = series.keys().position(|&m| m == n).unwrap_or(0);
        let colour = draw::colour(k);
        let x = f.x(t);
        let info = format!(
            "node {n} at +{:.1} ms: offset {before:+.3} ms, corrected by {:+.3} ms ({}) toward {aim:+.3} ms, claimed bound ±{bound:.3} ms",
            f.story.ms(t),
            aim - before,
            if step { "stepped" } else { "slewed" }
        );
        let _ = writeln!(
            s,
            r##"<g class="correction" data-info="{i}"><title>{i}</title><circle cx="{x:.1}" cy="{yb:.1}" r="4" fill="#fff" stroke="{colour}" stroke-width="2"/><line x1="{x:.1}" y1="{yb:.1}" x2="{x:.1}" y2="{ya:.1}" stroke="{colour}" stroke-dasharray="3,2"/><line x1="{x0:.1}" y1="{ylo:.1}" x2="{x0:.1}" y2="{yhi:.1}" stroke="{colour}" stroke-width="3"/><line x1="{xa:.1}" y1="{ya:.1}" x2="{xb:.1}" y2="{ya:.1}" stroke="{colour}" stroke-width="2"/></g>"##,
            i = esc(&info),
            yb = yv(before),
            ya = yv(aim),
            x0 = x + 3.0,
            ylo = yv(aim - bound).max(yv(aim) + 1.5),
            yhi = yv(aim + bound).min(yv(aim) - 1.5),
            xa = x - 4.0,
            xb = x + 6.0
        );
    }
    f.axis(&mut s, top + plot_h + 10.0);
    s.push_str("</svg>\n");
    Ok(s)
}
