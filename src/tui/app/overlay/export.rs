//! The export prompt: write the pairs in view as a Markdown report, CSV,
//! JSON or replay fixtures, to a path suggested beside the run.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::text;
use crate::tui::action::Action;
use crate::tui::app::{App, Effect, MessageKind, Overlay};
use crate::tui::input::LineInput;
use crate::tui::keymap::{Keymap, Mode};
use crate::tui::popup::{centered, frame, key_of};
use crate::tui::style::Theme;

use super::edit_line;

/// The export prompt: which format, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPrompt {
    pub format: crate::core::export::Format,
    pub path: LineInput,
    /// Whether the path still is the suggested one (it follows the format).
    pub suggested: bool,
}

impl ExportPrompt {
    /// The suggested path for a format, beside the run.
    pub fn suggest(run: &str, format: crate::core::export::Format) -> String {
        let base = std::path::Path::new(run);
        let stem = base
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .trim_end_matches(".gz")
                    .trim_end_matches(".jsonl")
                    .trim_end_matches(".json")
                    .trim_end_matches(".eval")
                    .to_string()
            })
            .filter(|s| !s.is_empty() && run != "stdin")
            .unwrap_or_else(|| "triage".to_string());
        let name = match format {
            crate::core::export::Format::Markdown => format!("{stem}.report.md"),
            crate::core::export::Format::Fixtures => format!("{stem}.fixtures.jsonl"),
            f => format!("{stem}.triage.{}", f.extension()),
        };
        match base
            .parent()
            .filter(|p| !p.as_os_str().is_empty() && run != "stdin")
        {
            Some(dir) => dir.join(name).to_string_lossy().to_string(),
            None => name,
        }
    }
}

/// Apply an action while the prompt is open: cycle the format, edit the
/// path, export, cancel.
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    let Overlay::Export(p) = &mut app.overlay else {
        return vec![];
    };
    match action {
        Action::CycleFormat => {
            let all = crate::core::export::Format::ALL;
            let i = all.iter().position(|f| *f == p.format).unwrap_or(0);
            p.format = all[(i + 1) % all.len()];
            if p.suggested {
                let run = app
                    .index
                    .files
                    .first()
                    .map(|f| f.display.clone())
                    .unwrap_or_default();
                p.path = LineInput::with(&ExportPrompt::suggest(&run, p.format));
            }
        }
        Action::InputSubmit => {
            let path = p.path.text.trim().to_string();
            if path.is_empty() {
                app.say("give a path to export to", MessageKind::Info);
                return vec![];
            }
            let format = p.format;
            app.overlay = Overlay::None;
            // The runner refuses the run, the journals and their files, and
            // asks before it replaces an existing file.
            return vec![Effect::Export {
                format,
                path,
                rows: app.view.clone(),
                overwrite: false,
            }];
        }
        Action::InputCancel | Action::Close | Action::Cancel => {
            app.overlay = Overlay::None;
            app.say("export cancelled", MessageKind::Info);
        }
        other => {
            if edit_line(&mut p.path, other) {
                p.suggested = false;
            }
        }
    }
    vec![]
}

/// Text typed into the path (a character or a paste).
pub fn type_text(p: &mut ExportPrompt, text: &str) {
    p.path.insert(text);
    p.suggested = false;
}

/// The export prompt: the format (Tab cycles) and the path.
pub fn draw(
    f: &mut Frame,
    area: Rect,
    app: &App,
    p: &crate::tui::app::ExportPrompt,
    km: &Keymap,
    t: &Theme,
) {
    let r = centered(area, 76, 8);
    f.render_widget(Clear, r);
    let block = frame("export", t);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut formats = vec![Span::styled("format  ", t.dim)];
    for fmt in crate::core::export::Format::ALL {
        let style = if fmt == p.format { t.selected } else { t.dim };
        formats.push(Span::styled(format!(" {} ", fmt.name()), style));
        formats.push(Span::styled(" ", t.base));
    }
    let lines = vec![
        Line::from(Span::styled(
            format!(
                "{} {} in view{}",
                app.view.len(),
                if app.view.len() == 1 { "pair" } else { "pairs" },
                app.query
                    .as_ref()
                    .map(|q| format!(" (/{})", text::inert_line(&q.to_string())))
                    .unwrap_or_default()
            ),
            t.base,
        )),
        Line::default(),
        Line::from(formats),
        Line::from(vec![
            Span::styled("path    ", t.dim),
            Span::styled(text::inert_line(&p.path.text), t.title),
        ]),
        Line::default(),
        Line::from(vec![
            Span::styled(key_of(km, Mode::Input, Action::CycleFormat), t.key),
            Span::styled(" next format   ", t.dim),
            Span::styled(key_of(km, Mode::Input, Action::InputSubmit), t.key),
            Span::styled(" export   ", t.dim),
            Span::styled(key_of(km, Mode::Input, Action::InputCancel), t.key),
            Span::styled(" cancel", t.dim),
        ]),
    ];
    f.render_widget(Paragraph::new(lines), inner);
    let before: String = p.path.text.chars().take(p.path.cursor).collect();
    let x = inner.x + 8 + text::width(&text::inert_line(&before)) as u16;
    f.set_cursor_position(Position {
        x: x.min(inner.right().saturating_sub(1)),
        y: inner.y + 3,
    });
}
