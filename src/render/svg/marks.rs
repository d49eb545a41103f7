//! The marks on the nodes' lines, with their labels, and the time axis.

use super::super::draw::nice_step;
use super::*;

/// The label written beside a mark (empty: none, its hover text says it).
pub(crate) fn mark_label(m: &Mark) -> String {
    match &m.kind {
        MarkKind::Suspect { target, right: true } => format!("suspects {target}"),
        MarkKind::Suspect { target, right: false } => format!("suspects {target} (false)"),
        MarkKind::Leader { leader, term } => format!("{leader} leads t{term}"),
        MarkKind::StepDown => "steps down".to_string(),
        MarkKind::ClockAdjust => "clock".to_string(),
        MarkKind::Violation => "VIOLATION".to_string(),
        MarkKind::Stale => "stale token".to_string(),
        MarkKind::ElectionStart | MarkKind::Unsuspect | MarkKind::Note => String::new(),
    }
}

pub(super) fn marks(s: &mut String, geo: &mut Geo<'_>) {
    let story = geo.story;
    // Narrow lanes draw their marks smaller and leave the labels to the hover text.
    let scale = (geo.row / 24.0).min(1.0);
    for m in &story.marks {
        let Some(y) = geo.y(m.node) else { continue };
        let x = geo.x(m.t);
        let class = m.kind.class();
        let label = if scale < 1.0 { String::new() } else { mark_label(m) };
        let info = esc(&format!("node {} at +{:.3} ms: {}", m.node, story.ms(m.t), m.text));
        // Above the line, else below it, else only on hover.
        let place = [-9.0, 17.0]
            .into_iter()
            .find(|dy| !label.is_empty() && geo.labels.claim(x + 6.0, y + dy, &label, 10.0));
        let label = match place {
            Some(dy) => format!(r#"<text x="6" y="{dy}" font-size="10">{}</text>"#, esc(&label)),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            r#"<g class="mark {class}" transform="translate({x:.1},{y:.1}) scale({scale:.2})" data-info="{info}"><title>{info}</title>{shape}{label}</g>"#,
            shape = mark_shape(class)
        );
    }
}

pub(super) fn axis(s: &mut String, geo: &Geo<'_>, height: f64) {
    let story = geo.story;
    let y = height - BOTTOM + 10.0;
    let span_ms = (story.t1 - story.t0) as f64 / 1000.0;
    let step = nice_step(span_ms / 10.0);
    let first = (story.ms(story.t0) / step).ceil() * step;
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{y}" x2="{x2}" y2="{y}" stroke="#333"/>"##,
        x2 = WIDTH - RIGHT
    );
    let mut ms = first;
    while ms <= story.ms(story.t1) + 1e-9 {
        let t = story.start_us as f64 + ms * 1000.0;
        let x = geo.x(t.max(0.0) as u64);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#ccc" stroke-width="0.5"/><text x="{x:.1}" y="{ty}" text-anchor="middle">+{ms} ms</text>"##,
            y0 = TOP - 5.0,
            y1 = y + 4.0,
            ty = y + 16.0,
            ms = fmt_ms(ms)
        );
        ms += step;
    }
}

pub(super) fn fmt_ms(ms: f64) -> String {
    if (ms - ms.round()).abs() < 1e-6 {
        format!("{}", ms.round() as i64)
    } else {
        format!("{ms:.2}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn axis_steps_are_round() {
        assert_eq!(super::nice_step(312.0), 500.0);
        assert_eq!(super::nice_step(0.07), 0.1);
        assert_eq!(super::fmt_ms(1500.0), "1500");
    }
}
