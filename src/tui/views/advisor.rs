//! The advisor's live findings for the focused side: the list, and the selected one's
//! diagnosis, evidence and fix, with the key that applies the fix to A's running profile.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, TableState, Wrap};

use super::panel;
use crate::advisor::{Change, Finding, Severity};
use crate::config::units::human_bytes;
use crate::tui::app::App;

fn severity(s: Severity) -> Span<'static> {
    match s {
        Severity::Critical => Span::from("critical").red().bold(),
        Severity::Warning => Span::from("warning").yellow(),
        Severity::Info => Span::from("info").dark_gray(),
    }
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let side = app.focused();
    let findings = &side.findings;
    let list_height = (findings.len() as u16 + 3).clamp(4, area.height / 3 + 1);
    let [list, detail] =
        Layout::vertical([Constraint::Length(list_height), Constraint::Min(3)]).areas(area);
    let title = format!(
        "Advisor {} — {} finding(s) · ↑↓ select · a apply the fix{}",
        app.side_label(app.focus),
        findings.len(),
        if app.b.is_some() { " (A only)" } else { "" }
    );
    if findings.is_empty() {
        frame.render_widget(
            Paragraph::new(vec![
                Line::from(""),
                match &side.judging {
                    // Right after a live change: the run before it is no evidence.
                    Some(judging) => Line::from(format!(" {judging}")).yellow(),
                    None => {
                        Line::from(" no finding: no rule fired on the snapshots so far").green()
                    }
                },
            ])
            .block(panel(&title)),
            area,
        );
        return;
    }
    let rows: Vec<Row> = findings
        .iter()
        .map(|f| {
            Row::new(vec![
                severity(f.severity),
                Span::from(f.id),
                Span::from(format!("{:.0}-{:.0} s", f.from_secs, f.to_secs)).dark_gray(),
                Span::from(fix_line(f)),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(9),
            Constraint::Length(20),
            Constraint::Length(11),
            Constraint::Min(10),
        ],
    )
    .header(Row::new(vec!["severity", "finding", "seen", "fix"]).dark_gray())
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(panel(&title));
    let selected = app.editor.finding.min(findings.len() - 1);
    let mut state = TableState::default().with_selected(Some(selected));
    frame.render_stateful_widget(table, list, &mut state);

    let f = &findings[selected];
    let mut lines = vec![Line::from(f.diagnosis.clone()), Line::from("")];
    for e in &f.evidence {
        lines.push(Line::from(vec![
            Span::from(format!(" {}: ", e.metric)).dark_gray(),
            Span::from(e.value.clone()).bold(),
            Span::from(format!("  (threshold {})", e.threshold)).dark_gray(),
        ]));
    }
    if let Some(cost) = &f.cost {
        lines.push(Line::from(vec![
            Span::from(" cost to the job: ").dark_gray(),
            Span::from(cost.clone()),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(vec![
        Span::from(" fix: ").fg(Color::Green),
        Span::from(fix_line(f)),
    ]));
    if let Some(effect) = &f.effect {
        lines.push(Line::from(format!("   predicted: {effect}")).dark_gray());
    }
    // The other fixes, in the order to try them (what costs no memory first).
    for alt in &f.alternatives {
        let what = if alt.changes.is_empty() {
            "in the job".to_string()
        } else {
            Change::list(&alt.changes, ": ")
        };
        let cost = if alt.memory_cost > 0 {
            format!(" (+{} memory)", human_bytes(alt.memory_cost as f64))
        } else {
            String::new()
        };
        lines.push(Line::from(vec![
            Span::from(" or: ").fg(Color::Green),
            Span::from(format!("{what}{cost}")),
        ]));
        lines.push(Line::from(format!("   predicted: {}", alt.effect)).dark_gray());
    }
    // What another finding's value for the same knob overruled (one answer per knob).
    for o in &f.overruled {
        lines.push(Line::from(vec![
            Span::from(" overruled: ").fg(Color::Yellow),
            Span::from(format!("{}: {}", Change::list(&o.changes, ": "), o.reason)),
        ]));
    }
    if let Some(note) = &f.note {
        lines.push(Line::from(format!(" note: {note}")).dark_gray());
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(panel(&format!("{} — evidence", f.id))),
        detail,
    );
}

/// The fix in one line: profile keys with the memory they cost, or the job change.
fn fix_line(f: &Finding) -> String {
    let join = |changes: &[Change]| Change::list(changes, ": ");
    if !f.recommendation.is_empty() {
        let cost = if f.memory_cost > 0 {
            format!(" (+{} memory)", human_bytes(f.memory_cost as f64))
        } else {
            String::new()
        };
        format!("{}{cost}", join(&f.recommendation))
    } else if !f.job_changes.is_empty() {
        format!("in the job: {}", join(&f.job_changes))
    } else {
        "none in the profile".to_string()
    }
}
