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

/// Below the keys.
const NOTE: &str = "live knobs apply at once; numbered marks show them on the chart";

/// Width of the key column (" key " and a space).
const KEY_COLUMN: usize = 14;

pub fn render(frame: &mut Frame, area: Rect) {
    // As wide as the longest line (borders included) and no wider than the screen; what does
    // not fit the width wraps, and what does not fit the height is counted on the last line.
    let natural = KEYS
        .iter()
        .map(|(_, what)| KEY_COLUMN + what.chars().count())
        .chain([1 + NOTE.chars().count()])
        .max()
        .unwrap_or(0)
        + 1;
    let width = (natural as u16 + 2).min(area.width);
    let inner_width = width.saturating_sub(2) as usize;
    let mut lines = help_lines(inner_width);
    let room = area.height.saturating_sub(2) as usize;
    if lines.len() > room {
        let hidden = lines.len() + 1 - room;
        lines.truncate(room.saturating_sub(1));
        lines.push(fit(
            &format!(" … {hidden} more lines: enlarge the terminal"),
            inner_width,
        ));
    }
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line> = lines.into_iter().map(Line::from).collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(panel("Keys")), popup);
}

/// Every key and the note, wrapped to `width` columns: a key's description continues under
/// itself.
fn help_lines(width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for (key, what) in KEYS {
        if width > KEY_COLUMN + 8 {
            for (i, part) in wrap(what, width - KEY_COLUMN).into_iter().enumerate() {
                let key = if i == 0 { *key } else { "" };
                lines.push(format!(" {key:<12} {part}"));
            }
        } else {
            lines.extend(wrap(&format!(" {key:<12} {what}"), width));
        }
    }
    lines.push(String::new());
    lines.extend(
        wrap(NOTE, width.saturating_sub(1))
            .into_iter()
            .map(|l| format!(" {l}")),
    );
    lines
}

/// `text` in lines of at most `width` characters, broken at spaces (a word longer than a line
/// is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let (now, more) = (line.chars().count(), word.chars().count());
        if now > 0 && now + 1 + more > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > width {
            let rest: String = line.chars().skip(width).collect();
            line = line.chars().take(width).collect();
            lines.push(std::mem::replace(&mut line, rest));
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` cut to `width` characters.
fn fit(text: &str, width: usize) -> String {
    text.chars().take(width).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_keeps_every_word() {
        assert_eq!(
            wrap("take a canonical / native savepoint", 12),
            ["take a", "canonical /", "native", "savepoint"]
        );
        assert_eq!(wrap("short", 12), ["short"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }
}
