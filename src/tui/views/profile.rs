//! The effective profile as an editable list: live knobs apply at once, the others restart.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, TableState};

use super::panel;
use crate::config::profile::{KNOBS, is_live};
use crate::tui::app::App;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [list, edit] = Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(area);
    let rows: Vec<Row> = KNOBS
        .iter()
        .map(|knob| {
            let live = is_live(knob.key);
            Row::new(vec![
                Span::from(knob.key),
                Span::from(app.knob_value(knob.key)).bold(),
                if live {
                    Span::from("live").green()
                } else {
                    Span::from("restart").yellow()
                },
                Span::from(knob.doc).dark_gray(),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(47),
            Constraint::Length(14),
            Constraint::Length(8),
            Constraint::Min(10),
        ],
    )
    .header(Row::new(vec!["knob", "value", "applies", "what it does"]).dark_gray())
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(panel(&format!(
        "Profile '{}' — ↑↓ select, Enter edit, s save",
        app.a.profile.name
    )));
    let mut state = TableState::default().with_selected(Some(app.editor.selected));
    frame.render_stateful_widget(table, list, &mut state);

    let key = KNOBS[app.editor.selected.min(KNOBS.len() - 1)].key;
    let line = match (&app.editor.input, &app.editor.confirm) {
        (_, Some((_, label))) => Line::from(vec![
            Span::from(format!("restart on {label}? ")).bold(),
            Span::from("y").fg(Color::Green).bold(),
            Span::from(" / any other key keeps the running profile"),
        ]),
        (Some(input), None) => Line::from(vec![
            Span::from(format!("{key} = ")),
            Span::from(format!("{input}█")).bold(),
            Span::from("   Enter apply, Esc cancel").dark_gray(),
        ]),
        (None, None) => Line::from(
            Span::from(format!(
                "{key}: {}",
                if is_live(key) {
                    "applied live to the open database (no state lost)"
                } else {
                    "needs a reopen: the run restarts on the new profile after you confirm"
                }
            ))
            .dark_gray(),
        ),
    };
    frame.render_widget(Paragraph::new(line).block(panel("Edit")), edit);
}
