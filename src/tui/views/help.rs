//! The `?` overlay: every key.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use super::panel;

pub const KEYS: &[(&str, &str)] = &[
    ("1 .. 6", "dashboard, LSM, profile, A/B, advisor, CPU"),
    ("Tab / ← →", "next / previous view"),
    ("p", "pause / resume the run"),
    ("b", "A/B: show side A or B in dashboard, LSM, profile"),
    ("F", "fail the job: restart from the last checkpoint"),
    ("S / N", "take a canonical / native savepoint"),
    ("q, Ctrl-C", "quit: stop, close RocksDB, print the summary"),
    ("?", "this help (any key closes it)"),
    ("↑ ↓ / j k", "profile: select a knob"),
    ("Enter / e", "profile: edit the selected knob"),
    ("Enter, Esc", "while editing: apply, cancel"),
    ("y", "confirm a restart for a knob that needs one"),
    ("↑ ↓, a", "advisor: select a finding, apply its fix to A"),
    (
        "s y/f/o",
        "profile: save A as YAML, Flink config or OPTIONS",
    ),
];

pub fn render(frame: &mut Frame, area: Rect) {
    let width = 64.min(area.width);
    let height = (KEYS.len() as u16 + 4).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| Line::from(format!(" {k:<12} {what}")))
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(
        " live knobs apply at once; numbered marks show them on the chart",
    ));
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(panel("Keys")), popup);
}
