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
    let [list, edit] = Layout::vertical([Constraint::Min(3), Constraint::Length(5)]).areas(area);
    let side = app.focused();
    // The knob column as wide as the longest key, so the description gets the rest; one that
    // does not fit ends in … and is shown whole under the list for the selected knob.
    let key_width = KNOBS.iter().map(|k| k.key.len()).max().unwrap_or(20) as u16;
    let doc_width = (list.width as usize).saturating_sub(key_width as usize + 12 + 7 + 5);
    let fit = |doc: &str| {
        if doc.chars().count() <= doc_width {
            doc.to_string()
        } else {
            let cut: String = doc.chars().take(doc_width.saturating_sub(1)).collect();
            format!("{cut}…")
        }
    };
    let rows: Vec<Row> = KNOBS
        .iter()
        .map(|knob| {
            let live = is_live(knob.key);
            Row::new(vec![
                Span::from(knob.key),
                Span::from(side.knob_value(knob.key)).bold(),
                if live {
                    Span::from("live").green()
                } else {
                    Span::from("restart").yellow()
                },
                Span::from(fit(knob.doc)).dark_gray(),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(key_width),
            Constraint::Length(12),
            Constraint::Length(7),
            Constraint::Min(10),
        ],
    )
    .header(Row::new(vec!["knob", "value", "applies", "what it does"]).dark_gray())
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(panel(&if app.b.is_some() {
        format!(
            "Profile {} — ↑↓ select, Enter edit (A only), s save",
            app.side_label(app.focus)
        )
    } else {
        format!(
            "Profile '{}' — ↑↓ select, Enter edit, s save",
            side.profile.name
        )
    }));
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
                    "live: a change applies at once to the open database (no state lost)"
                } else {
                    "needs a reopen: the run restarts on the new profile after you confirm"
                }
            ))
            .dark_gray(),
        ),
    };
    let doc = Line::from(KNOBS[app.editor.selected.min(KNOBS.len() - 1)].doc).dark_gray();
    frame.render_widget(
        Paragraph::new(vec![line, doc])
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(panel("Edit")),
        edit,
    );
}
