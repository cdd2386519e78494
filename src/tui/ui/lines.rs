//! Lines drawn straight into the buffer.
//!
//! [`draw`] puts into each cell what `Paragraph::new(lines)` puts there (no
//! wrapping, no scrolling, left-aligned lines cut at the area's edge), but
//! does not split plain ASCII into graphemes one by one: a printable ASCII
//! byte followed by ASCII is one grapheme of one cell. The rest (wide or
//! combining characters, controls) is segmented with ratatui's rules: a
//! control grapheme is dropped, a grapheme wider than the area is skipped,
//! one that no longer fits ends the line, and a zero-width one takes no
//! cell. A line aligned otherwise than left is drawn by `Paragraph` itself.
//! The list and the detail pane fill most of the screen with such lines on
//! every frame.
//!
//! Segmenting a span in pieces gives the same graphemes as segmenting it
//! whole when each cut is a boundary whatever comes before: between two
//! ASCII characters other than CR LF, as no rule joins them and none looks
//! back past an ASCII character.

use ratatui::buffer::{Buffer, CellWidth};
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use unicode_segmentation::UnicodeSegmentation;

/// Draw `lines` from the top of `area`, one per row, as many as fit.
pub fn draw(buf: &mut Buffer, area: Rect, lines: &[Line<'_>]) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    for (dy, line) in lines.iter().take(usize::from(area.height)).enumerate() {
        let y = area.y + dy as u16;
        if matches!(line.alignment, None | Some(Alignment::Left)) {
            draw_line(buf, area.x, y, area.width, line);
        } else {
            let row = Rect {
                y,
                height: 1,
                ..area
            };
            Paragraph::new(line.clone()).render(row, buf);
        }
    }
}

/// One left-aligned line at `(x0, y)`, at most `width` cells.
fn draw_line(buf: &mut Buffer, x0: u16, y: u16, width: u16, line: &Line<'_>) {
    let max = usize::from(width);
    let row = buf.index_of(x0, y);
    let cells = &mut buf.content[row..row + max];
    let base = Style::default().patch(line.style);
    let mut x = 0usize;
    for span in &line.spans {
        let style = base.patch(span.style);
        let s: &str = &span.content;
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if (0x20..0x7f).contains(&b[i]) && b.get(i + 1).is_none_or(|&n| n < 0x80) {
                // A printable ASCII byte between two grapheme boundaries.
                if x == max {
                    return;
                }
                cells[x].set_char(char::from(b[i])).set_style(style);
                x += 1;
                i += 1;
                continue;
            }
            // Anything else is segmented up to the next sure boundary.
            let mut j = i + 1;
            while j < b.len() && !boundary(b[j - 1], b[j]) {
                j += 1;
            }
            for g in s[i..j].graphemes(true) {
                if g.contains(char::is_control) {
                    continue;
                }
                let w = usize::from(g.cell_width());
                if w > max {
                    continue;
                }
                if x + w > max {
                    return;
                }
                if w == 0 {
                    continue;
                }
                cells[x].set_symbol(g).set_style(style);
                x += w;
            }
            i = j;
        }
    }
}

/// Whether there is always a grapheme boundary between the bytes `a` and
/// `b`: between two ASCII characters, but for CR LF.
fn boundary(a: u8, b: u8) -> bool {
    a < 0x80 && b < 0x80 && !(a == b'\r' && b == b'\n')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use ratatui::style::{Color, Modifier};
    use ratatui::text::Span;

    use super::*;

    /// What `Paragraph` draws, for comparison.
    fn by_paragraph(area: Rect, lines: &[Line<'static>]) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, area.right() + 2, area.bottom() + 1));
        Paragraph::new(lines.to_vec()).render(area, &mut buf);
        buf
    }

    fn by_draw(area: Rect, lines: &[Line<'static>]) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, area.right() + 2, area.bottom() + 1));
        draw(&mut buf, area, lines);
        buf
    }

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~]{0,12}",
            "[ -~]{0,3}",
            Just("\u{600}".to_string()),
            Just("\r".to_string()),
            Just("\n".to_string()),
            Just("🇫🇷🇩".to_string()),
            Just("\u{200d}❤".to_string()),
            Just("#\u{fe0f}\u{20e3}".to_string()),
            Just("界".to_string()),
            Just("e\u{301}".to_string()),
            Just("\u{301}".to_string()),
            Just("👍🏽".to_string()),
            Just("\u{200b}".to_string()),
            Just("\t".to_string()),
            Just("\u{1b}[31m".to_string()),
            Just("\u{7f}".to_string()),
            Just("\r\n".to_string()),
            Just("—…→".to_string()),
            Just("\u{ff9e}".to_string()),
        ]
    }

    fn style() -> impl Strategy<Value = Style> {
        prop_oneof![
            Just(Style::default()),
            Just(Style::default().fg(Color::Red)),
            Just(
                Style::default()
                    .bg(Color::Blue)
                    .add_modifier(Modifier::BOLD)
            ),
            Just(Style::default().remove_modifier(Modifier::BOLD)),
        ]
    }

    fn line() -> impl Strategy<Value = Line<'static>> {
        (
            prop::collection::vec((prop::collection::vec(piece(), 0..4), style()), 0..5),
            style(),
            0..4u8,
        )
            .prop_map(|(spans, st, align)| {
                let spans: Vec<Span<'static>> = spans
                    .into_iter()
                    .map(|(p, s)| Span::styled(p.concat(), s))
                    .collect();
                let l = Line::from(spans).style(st);
                match align {
                    1 => l.centered(),
                    2 => l.right_aligned(),
                    3 => l.left_aligned(),
                    _ => l,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn draws_what_a_paragraph_draws(
            lines in prop::collection::vec(line(), 0..6),
            x in 0u16..3,
            y in 0u16..2,
            w in 0u16..30,
            h in 0u16..5,
        ) {
            let area = Rect::new(x, y, w, h);
            prop_assert_eq!(by_draw(area, &lines), by_paragraph(area, &lines));
        }
    }

    #[test]
    fn a_line_is_cut_at_the_edge_and_padding_keeps_its_style() {
        let lines = vec![Line::from(vec![
            Span::styled("abcdef", Style::default().fg(Color::Red)),
            Span::raw("界g"),
        ])];
        let area = Rect::new(1, 0, 7, 1);
        let buf = by_draw(area, &lines);
        assert_eq!(buf, by_paragraph(area, &lines));
        // `界` takes two cells and does not fit after six: the line ends there.
        assert_eq!(buf[(7, 0)].symbol(), " ");
        assert_eq!(buf[(1, 0)].fg, Color::Red);
    }
}
