//! Render a ratatui [`Buffer`] as a standalone SVG "terminal screenshot".
//!
//! The output mimics a dark terminal window: a rounded frame with a small
//! title bar, followed by the buffer's cells laid out on a monospace grid
//! (cell width 8.4 px, line height 18 px, 14 px font).
//!
//! Cell backgrounds are drawn as `<rect>` runs and text as `<text>` runs
//! (`xml:space="preserve"`); adjacent cells with the same resolved style are
//! merged into one element. Every text run carries a `textLength` so the grid
//! stays aligned even when the viewer's monospace font is not exactly 0.6 em
//! wide, and each wide character (e.g. CJK) gets an element of its own, so it
//! stays on the grid even in renderers that ignore `textLength`.
//!
//! Box-drawing characters (light, heavy, double and rounded lines, U+2500–
//! U+257F except dashes and diagonals) and block elements (U+2580–U+259F) are
//! drawn as geometry rather than text, so borders and gauges join seamlessly
//! across rows whatever the font's line height.
//!
//! Supported styling: every [`Color`] variant (the 16 named colours use a
//! soft dark-theme palette, `Indexed` uses the xterm 256-colour palette,
//! `Rgb` is used verbatim, `Reset` is the window's default colour) and the
//! modifiers `BOLD`, `ITALIC`, `UNDERLINED`, `CROSSED_OUT`, `DIM` (reduced
//! opacity), `REVERSED` (foreground and background swapped) and `HIDDEN`
//! (text not drawn). Blink modifiers and underline colours are ignored.
//!
//! Wide characters occupy their cell plus the following placeholder cell(s);
//! the placeholders are never drawn. Cells marked to be skipped (covered by
//! something outside the buffer, such as an image) are rendered blank. Text is
//! XML-escaped and control characters become U+FFFD. The output is
//! deterministic: the same buffer always yields the same bytes.

use std::fmt::Write as _;

use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::style::{Color, Modifier};

/// Width of one terminal cell, in pixels.
const CELL_W: f64 = 8.4;
/// Height of one terminal row, in pixels.
const LINE_H: f64 = 18.0;
/// Font size of the terminal text, in pixels.
const FONT_SIZE: u32 = 14;
/// Distance from the top of a row to the text baseline, in pixels.
const BASELINE: f64 = 13.0;
/// Horizontal padding between the frame and the cell grid, in pixels.
const PAD_X: f64 = 12.0;
/// Padding below the cell grid, in pixels.
const PAD_BOTTOM: f64 = 12.0;
/// Height of the title bar, in pixels.
const TITLE_H: f64 = 30.0;
/// Gap between the title bar and the first row, in pixels.
const PAD_TOP: f64 = 8.0;
/// Corner radius of the window frame, in pixels.
const RADIUS: f64 = 8.0;
/// Stroke widths of light and heavy box-drawing lines, and of each line of a
/// double one, in pixels.
const LIGHT_W: f64 = 1.2;
const HEAVY_W: f64 = 2.6;
const DOUBLE_W: f64 = 1.0;
/// Distance of each line of a double box-drawing line from the cell centre.
const DOUBLE_GAP: f64 = 1.7;
/// Radius of the rounded box-drawing corners (`╭╮╯╰`).
const ARC_R: f64 = 4.2;
/// Opacity used for the `DIM` modifier, in percent.
const DIM_OPACITY: u8 = 55;

const FONT_FAMILY: &str =
    "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace";

/// Window (default background) colour.
const DEFAULT_BG: Rgb = Rgb(0x1e, 0x1e, 0x2e);
/// Default foreground colour.
const DEFAULT_FG: Rgb = Rgb(0xcd, 0xd6, 0xf4);
const TITLE_BAR_BG: &str = "#181825";
const TITLE_FG: &str = "#a6adc8";
const FRAME_STROKE: &str = "#45475a";

/// The 16 ANSI colours (indices 0–15), a soft palette for dark backgrounds.
const ANSI16: [Rgb; 16] = [
    Rgb(0x45, 0x47, 0x5a), // 0 black
    Rgb(0xf3, 0x8b, 0xa8), // 1 red
    Rgb(0xa6, 0xe3, 0xa1), // 2 green
    Rgb(0xf9, 0xe2, 0xaf), // 3 yellow
    Rgb(0x89, 0xb4, 0xfa), // 4 blue
    Rgb(0xcb, 0xa6, 0xf7), // 5 magenta
    Rgb(0x94, 0xe2, 0xd5), // 6 cyan
    Rgb(0xba, 0xc2, 0xde), // 7 white (ratatui `Gray`)
    Rgb(0x6c, 0x70, 0x86), // 8 bright black (ratatui `DarkGray`)
    Rgb(0xf7, 0xa8, 0xbf), // 9 bright red
    Rgb(0xbd, 0xf0, 0xb8), // 10 bright green
    Rgb(0xfb, 0xea, 0xc3), // 11 bright yellow
    Rgb(0xa5, 0xc8, 0xfc), // 12 bright blue
    Rgb(0xf5, 0xc2, 0xe7), // 13 bright magenta
    Rgb(0xae, 0xf0, 0xe6), // 14 bright cyan
    Rgb(0xee, 0xf1, 0xfb), // 15 bright white (ratatui `White`)
];

/// An opaque sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rgb(u8, u8, u8);

impl Rgb {
    fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// The xterm 256-colour palette (0–15 use [`ANSI16`]).
fn indexed(n: u8) -> Rgb {
    match n {
        0..=15 => ANSI16[usize::from(n)],
        16..=231 => {
            const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
            let i = n - 16;
            Rgb(
                LEVELS[usize::from(i / 36)],
                LEVELS[usize::from((i / 6) % 6)],
                LEVELS[usize::from(i % 6)],
            )
        }
        232..=255 => {
            let v = 8 + (n - 232) * 10;
            Rgb(v, v, v)
        }
    }
}

/// Resolves a colour; `None` means "the terminal default" (`Color::Reset`).
fn resolve(color: Color) -> Option<Rgb> {
    Some(match color {
        Color::Reset => return None,
        Color::Black => ANSI16[0],
        Color::Red => ANSI16[1],
        Color::Green => ANSI16[2],
        Color::Yellow => ANSI16[3],
        Color::Blue => ANSI16[4],
        Color::Magenta => ANSI16[5],
        Color::Cyan => ANSI16[6],
        Color::Gray => ANSI16[7],
        Color::DarkGray => ANSI16[8],
        Color::LightRed => ANSI16[9],
        Color::LightGreen => ANSI16[10],
        Color::LightYellow => ANSI16[11],
        Color::LightBlue => ANSI16[12],
        Color::LightMagenta => ANSI16[13],
        Color::LightCyan => ANSI16[14],
        Color::White => ANSI16[15],
        Color::Indexed(n) => indexed(n),
        Color::Rgb(r, g, b) => Rgb(r, g, b),
    })
}

/// Formats a coordinate with at most two decimals ("37.20" → "37.2").
fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// Left edge of grid column `col`.
fn col_x(col: u32) -> f64 {
    PAD_X + f64::from(col) * CELL_W
}

/// How a box-drawing character is drawn instead of using the font, so that
/// borders join seamlessly across rows whatever the line height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Line segments from the centre towards up, right, down, left; each
    /// 0 (none), 1 (light), 2 (heavy) or 3 (double).
    Lines([u8; 4]),
    /// A rounded light corner joining horizontal direction `.0` (+1 right,
    /// -1 left) and vertical direction `.1` (+1 down, -1 up).
    Arc(i8, i8),
    /// A filled block: left, top, right, bottom as fractions of the cell (in
    /// eighths), and an opacity in percent (for the shade characters).
    Block(u8, u8, u8, u8, u8),
    /// Filled quadrants, bits: 1 upper left, 2 upper right, 4 lower left,
    /// 8 lower right.
    Quadrants(u8),
}

/// Box drawing U+2500–U+254B as "up right down left" weights; "" for the
/// dashed lines, which are left to the font.
const BOX_LIGHT_HEAVY: [&str; 76] = [
    "0101", "0202", "1010", "2020", "", "", "", "", "", "", "", "", // ─━│┃ dashes
    "0110", "0210", "0120", "0220", "0011", "0012", "0021",
    "0022", // ┌┍┎┏┐┑┒┓
    "1100", "1200", "2100", "2200", "1001", "1002", "2001",
    "2002", // └┕┖┗┘┙┚┛
    "1110", "1210", "2110", "1120", "2120", "2210", "1220",
    "2220", // ├┝┞┟┠┡┢┣
    "1011", "1012", "2011", "1021", "2021", "2012", "1022",
    "2022", // ┤┥┦┧┨┩┪┫
    "0111", "0112", "0211", "0212", "0121", "0122", "0221",
    "0222", // ┬┭┮┯┰┱┲┳
    "1101", "1102", "1201", "1202", "2101", "2102", "2201",
    "2202", // ┴┵┶┷┸┹┺┻
    "1111", "1112", "1211", "1212", "2111", "1121", "2121",
    "2112", // ┼┽┾┿╀╁╂╃
    "2211", "1122", "1221", "2212", "1222", "2122", "2221",
    "2222", // ╄╅╆╇╈╉╊╋
];

/// Box drawing U+2550–U+256C (single and double lines).
const BOX_DOUBLE: [&str; 29] = [
    "0303", "3030", "0310", "0130", "0330", "0013", "0031",
    "0033", // ═║╒╓╔╕╖╗
    "1300", "3100", "3300", "1003", "3001", "3003", "1310",
    "3130", // ╘╙╚╛╜╝╞╟
    "3330", "1013", "3031", "3033", "0313", "0131", "0333",
    "1303", // ╠╡╢╣╤╥╦╧
    "3101", "3303", "1313", "3131", "3333", // ╨╩╪╫╬
];

/// Box drawing U+2574–U+257F (half lines).
const BOX_HALF: [&str; 12] = [
    "0001", "1000", "0100", "0010", "0002", "2000", "0200",
    "0020", // ╴╵╶╷╸╹╺╻
    "0201", "1020", "0102", "2010", // ╼╽╾╿
];

fn lines(code: &str) -> Option<Shape> {
    let b = code.as_bytes();
    (b.len() == 4).then(|| Shape::Lines([b[0] - b'0', b[1] - b'0', b[2] - b'0', b[3] - b'0']))
}

/// The geometric shape for a one-column symbol, if it is a supported box
/// drawing or block element character.
fn shape_of(symbol: &str) -> Option<Shape> {
    let mut chars = symbol.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return None;
    };
    let u = u32::from(c);
    // Index of `u` in the range starting at `base`.
    let at = |base: u32| usize::try_from(u - base).unwrap_or(usize::MAX);
    match u {
        0x2500..=0x254b => lines(BOX_LIGHT_HEAVY[at(0x2500)]),
        0x2550..=0x256c => lines(BOX_DOUBLE[at(0x2550)]),
        0x256d => Some(Shape::Arc(1, 1)),
        0x256e => Some(Shape::Arc(-1, 1)),
        0x256f => Some(Shape::Arc(-1, -1)),
        0x2570 => Some(Shape::Arc(1, -1)),
        0x2574..=0x257f => lines(BOX_HALF[at(0x2574)]),
        0x2580 => Some(Shape::Block(0, 0, 8, 4, 100)),
        // ▁▂▃▄▅▆▇█: lower n eighths.
        0x2581..=0x2588 => {
            let n = u8::try_from(u - 0x2580).unwrap_or(8);
            Some(Shape::Block(0, 8 - n, 8, 8, 100))
        }
        // ▉▊▋▌▍▎▏: left 7..1 eighths.
        0x2589..=0x258f => {
            let n = u8::try_from(0x2590 - u).unwrap_or(1);
            Some(Shape::Block(0, 0, n, 8, 100))
        }
        0x2590 => Some(Shape::Block(4, 0, 8, 8, 100)),
        0x2591 => Some(Shape::Block(0, 0, 8, 8, 25)),
        0x2592 => Some(Shape::Block(0, 0, 8, 8, 50)),
        0x2593 => Some(Shape::Block(0, 0, 8, 8, 75)),
        0x2594 => Some(Shape::Block(0, 0, 8, 1, 100)),
        0x2595 => Some(Shape::Block(7, 0, 8, 8, 100)),
        0x2596..=0x259f => {
            const Q: [u8; 10] = [
                4,
                8,
                1,
                1 | 4 | 8,
                1 | 8,
                1 | 2 | 4,
                1 | 2 | 8,
                2,
                2 | 4,
                2 | 4 | 8,
            ];
            Some(Shape::Quadrants(Q[at(0x2596)]))
        }
        _ => None,
    }
}

/// The fully resolved look of one cell's text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TextStyle {
    fill: Rgb,
    bold: bool,
    italic: bool,
    underline: bool,
    strike: bool,
    dim: bool,
}

impl TextStyle {
    /// Whether blank cells in this style still draw something (a line).
    fn decorated(&self) -> bool {
        self.underline || self.strike
    }
}

/// One laid-out cell: its grid column, width in columns, text and style.
struct Glyph {
    col: u32,
    width: u32,
    text: String,
    /// Background colour; `None` for the window background.
    bg: Option<Rgb>,
    /// Text style; `None` when no text is drawn (`HIDDEN`, or drawn as a
    /// shape).
    style: Option<TextStyle>,
    /// Geometry drawn instead of text, with its colour and opacity in
    /// percent.
    shape: Option<(Shape, Rgb, u8)>,
}

/// Replaces characters that XML 1.0 forbids (or that would be meaningless in
/// a screenshot: all control characters) with U+FFFD.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

/// Appends `s` to `out`, escaped for XML text and attribute values.
/// `s` must already be sanitized.
fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

/// Whether the cell is covered by something outside the buffer.
fn is_skipped(cell: &Cell) -> bool {
    #[allow(deprecated)]
    let legacy_skip = cell.skip;
    legacy_skip || cell.diff_option == CellDiffOption::Skip
}

/// Lays out one cell at `col`; returns the glyph (its `width` says how many
/// columns it covers, clamped to the `room` left in the row).
fn layout_cell(cell: &Cell, col: u32, room: u32) -> Glyph {
    if is_skipped(cell) {
        return Glyph {
            col,
            width: 1,
            text: " ".into(),
            bg: None,
            style: Some(TextStyle {
                fill: DEFAULT_FG,
                bold: false,
                italic: false,
                underline: false,
                strike: false,
                dim: false,
            }),
            shape: None,
        };
    }
    let text = sanitize(cell.symbol());
    // `CellWidth` for `str` must not see control characters, so measure the
    // sanitized text. Zero-width symbols still occupy their cell.
    let width = match cell.diff_option {
        CellDiffOption::ForcedWidth(w) => w.get(),
        _ => text.as_str().cell_width(),
    };
    let width = u32::from(width).clamp(1, room.max(1));
    let text = if text.is_empty() { " ".into() } else { text };

    let modifier = cell.modifier;
    let (mut fg, mut bg) = (resolve(cell.fg), resolve(cell.bg));
    if modifier.contains(Modifier::REVERSED) {
        (fg, bg) = (
            Some(bg.unwrap_or(DEFAULT_BG)),
            Some(fg.unwrap_or(DEFAULT_FG)),
        );
    }
    let fill = fg.unwrap_or(DEFAULT_FG);
    let dim = modifier.contains(Modifier::DIM);
    let hidden = modifier.contains(Modifier::HIDDEN);
    let shape = if width == 1 && !hidden {
        shape_of(&text).map(|s| (s, fill, if dim { DIM_OPACITY } else { 100 }))
    } else {
        None
    };
    let style = (!hidden && shape.is_none()).then(|| TextStyle {
        fill,
        bold: modifier.contains(Modifier::BOLD),
        italic: modifier.contains(Modifier::ITALIC),
        underline: modifier.contains(Modifier::UNDERLINED),
        strike: modifier.contains(Modifier::CROSSED_OUT),
        dim,
    });
    Glyph {
        col,
        width,
        text,
        bg,
        style,
        shape,
    }
}

/// Lays out one row of cells into glyphs, dropping the placeholder cells
/// hidden behind wide characters.
fn layout_row(row: &[Cell]) -> Vec<Glyph> {
    let len = u32::try_from(row.len()).unwrap_or(u32::MAX);
    let mut glyphs = Vec::with_capacity(row.len());
    let mut col = 0u32;
    for (i, cell) in (0u32..).zip(row) {
        if i < col {
            continue; // hidden behind the previous wide character
        }
        let glyph = layout_cell(cell, col, len - col);
        col += glyph.width;
        glyphs.push(glyph);
    }
    glyphs
}

/// Emits merged background rectangles for one row.
fn push_backgrounds(out: &mut String, glyphs: &[Glyph], y: f64) {
    let mut i = 0;
    while i < glyphs.len() {
        let Some(bg) = glyphs[i].bg else {
            i += 1;
            continue;
        };
        let start = glyphs[i].col;
        let mut end = start + glyphs[i].width;
        let mut j = i + 1;
        while j < glyphs.len() && glyphs[j].bg == Some(bg) {
            end = glyphs[j].col + glyphs[j].width;
            j += 1;
        }
        let _ = writeln!(
            out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
            num(col_x(start)),
            num(y),
            num(f64::from(end - start) * CELL_W),
            num(LINE_H),
            bg.hex()
        );
        i = j;
    }
}

/// Emits one `<text>` element for glyphs `run` (all sharing `style`).
fn push_text_run(out: &mut String, run: &[Glyph], style: &TextStyle, y: f64) {
    // Trim blank cells at both ends unless they draw a decoration line.
    let blank = |g: &Glyph| g.text.chars().all(|c| c == ' ');
    let (mut lo, mut hi) = (0, run.len());
    if !style.decorated() {
        while lo < hi && blank(&run[lo]) {
            lo += 1;
        }
        while hi > lo && blank(&run[hi - 1]) {
            hi -= 1;
        }
    }
    let run = &run[lo..hi];
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return;
    };
    let start = first.col;
    let end = last.col + last.width;
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" textLength="{}" lengthAdjust="spacing" fill="{}""#,
        num(col_x(start)),
        num(y + BASELINE),
        num(f64::from(end - start) * CELL_W),
        style.fill.hex()
    );
    if style.bold {
        out.push_str(r#" font-weight="bold""#);
    }
    if style.italic {
        out.push_str(r#" font-style="italic""#);
    }
    match (style.underline, style.strike) {
        (true, true) => out.push_str(r#" text-decoration="underline line-through""#),
        (true, false) => out.push_str(r#" text-decoration="underline""#),
        (false, true) => out.push_str(r#" text-decoration="line-through""#),
        (false, false) => {}
    }
    if style.dim {
        let _ = write!(out, r#" opacity="{}""#, percent(DIM_OPACITY));
    }
    out.push_str(r#" xml:space="preserve">"#);
    for g in run {
        push_escaped(out, &g.text);
    }
    out.push_str("</text>\n");
}

/// Emits text runs for one row: adjacent glyphs with the same style share one
/// `<text>`, except that each wide character gets its own element so it sits
/// on the grid even where the renderer ignores `textLength`.
fn push_texts(out: &mut String, glyphs: &[Glyph], y: f64) {
    let mut i = 0;
    while i < glyphs.len() {
        let Some(style) = &glyphs[i].style else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        if glyphs[i].width == 1 {
            while j < glyphs.len()
                && glyphs[j].width == 1
                && glyphs[j].style.as_ref() == Some(style)
            {
                j += 1;
            }
        }
        push_text_run(out, &glyphs[i..j], style, y);
        i = j;
    }
}

/// Formats an opacity given in percent ("55" → "0.55").
fn percent(p: u8) -> String {
    num(f64::from(p) / 100.0)
}

/// The kind of stroke a box-drawing segment uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stroke {
    Light,
    Heavy,
    /// One of the two lines of a double segment.
    Double,
}

impl Stroke {
    fn width(self) -> f64 {
        match self {
            Self::Light => LIGHT_W,
            Self::Heavy => HEAVY_W,
            Self::Double => DOUBLE_W,
        }
    }
}

/// Collects shape geometry for one row, grouped by paint so each group
/// becomes a single element.
#[derive(Default)]
struct ShapeSink {
    /// (colour, stroke, opacity in percent) → path data, in first-use order.
    strokes: Vec<((Rgb, Stroke, u8), String)>,
    /// Filled rectangles: x, y, width, height, colour, opacity in percent.
    rects: Vec<(f64, f64, f64, f64, Rgb, u8)>,
}

impl ShapeSink {
    fn stroke(&mut self, color: Rgb, stroke: Stroke, opacity: u8, d: &str) {
        let key = (color, stroke, opacity);
        if let Some((_, path)) = self.strokes.iter_mut().find(|(k, _)| *k == key) {
            path.push_str(d);
        } else {
            self.strokes.push((key, d.to_string()));
        }
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb, opacity: u8) {
        // Extend the previous rectangle when this one continues it.
        if let Some(last) = self.rects.last_mut()
            && num(last.1) == num(y)
            && num(last.3) == num(h)
            && last.4 == color
            && last.5 == opacity
            && num(last.0 + last.2) == num(x)
        {
            last.2 += w;
            return;
        }
        self.rects.push((x, y, w, h, color, opacity));
    }

    fn write_strokes(&self, out: &mut String) {
        for ((color, stroke, opacity), d) in &self.strokes {
            let _ = write!(
                out,
                r#"<path d="{d}" fill="none" stroke="{}" stroke-width="{}""#,
                color.hex(),
                num(stroke.width())
            );
            if *opacity < 100 {
                let _ = write!(out, r#" opacity="{}""#, percent(*opacity));
            }
            out.push_str("/>\n");
        }
    }

    fn write_rects(&self, out: &mut String) {
        for &(x, y, w, h, color, opacity) in &self.rects {
            let _ = write!(
                out,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}""#,
                num(x),
                num(y),
                num(w),
                num(h),
                color.hex()
            );
            if opacity < 100 {
                let _ = write!(out, r#" opacity="{}""#, percent(opacity));
            }
            out.push_str("/>\n");
        }
    }
}

/// Adds the geometry of one box-drawing or block glyph to `sink`.
fn push_shape(sink: &mut ShapeSink, shape: Shape, x0: f64, y0: f64, color: Rgb, opacity: u8) {
    let (cx, cy) = (x0 + CELL_W / 2.0, y0 + LINE_H / 2.0);
    match shape {
        Shape::Block(l, t, r, b, alpha) => {
            let (fx, fy) = (CELL_W / 8.0, LINE_H / 8.0);
            // Both are percentages, so the product fits after dividing.
            let o = u8::try_from(u16::from(alpha) * u16::from(opacity) / 100).unwrap_or(100);
            sink.rect(
                x0 + f64::from(l) * fx,
                y0 + f64::from(t) * fy,
                f64::from(r - l) * fx,
                f64::from(b - t) * fy,
                color,
                o,
            );
        }
        Shape::Quadrants(bits) => {
            let (hw, hh) = (CELL_W / 2.0, LINE_H / 2.0);
            for (bit, dx, dy) in [(1, 0.0, 0.0), (2, hw, 0.0), (4, 0.0, hh), (8, hw, hh)] {
                if bits & bit != 0 {
                    sink.rect(x0 + dx, y0 + dy, hw, hh, color, opacity);
                }
            }
        }
        Shape::Arc(h, v) => {
            let (h, v) = (f64::from(h), f64::from(v));
            let sweep = u8::from(h * v < 0.0);
            let d = format!(
                "M{} {}H{}A{r} {r} 0 0 {sweep} {} {}V{}",
                num(cx + h * CELL_W / 2.0),
                num(cy),
                num(cx + h * ARC_R),
                num(cx),
                num(cy + v * ARC_R),
                num(cy + v * LINE_H / 2.0),
                r = num(ARC_R),
            );
            sink.stroke(color, Stroke::Light, opacity, &d);
        }
        Shape::Lines(w) => push_lines(sink, w, cx, cy, color, opacity),
    }
}

/// Draws box-drawing line segments. `w` holds the weight towards up, right,
/// down and left; `(cx, cy)` is the cell centre.
fn push_lines(sink: &mut ShapeSink, w: [u8; 4], cx: f64, cy: f64, color: Rgb, opacity: u8) {
    // Unit vectors (screen coordinates) and half extents per direction.
    const DIRS: [(f64, f64); 4] = [(0.0, -1.0), (1.0, 0.0), (0.0, 1.0), (-1.0, 0.0)];
    let half = |d: usize| {
        if d.is_multiple_of(2) {
            LINE_H / 2.0
        } else {
            CELL_W / 2.0
        }
    };
    for d in 0..4 {
        let (dx, dy) = DIRS[d];
        let (left_side, right_side) = ((d + 3) % 4, (d + 1) % 4);
        let opposite = (d + 2) % 4;
        // A line parallel to direction `d`, offset by `off` towards
        // `right_side` (negative: towards `left_side`), starting at distance
        // `from` from the centre and running to the cell edge.
        let seg = |off: f64, from: f64| {
            let (px, py) = DIRS[right_side];
            let (sx, sy) = (cx + px * off + dx * from, cy + py * off + dy * from);
            let (ex, ey) = (cx + px * off + dx * half(d), cy + py * off + dy * half(d));
            format!("M{} {}L{} {}", num(sx), num(sy), num(ex), num(ey))
        };
        match w[d] {
            0 => {}
            3 => {
                // Each of the two lines stops where it meets the line(s) on
                // its side, or runs across the centre when that side is empty.
                // (Half a stroke further, so corners are closed.)
                let end = |side: usize| match w[side] {
                    0 => -DOUBLE_GAP - DOUBLE_W / 2.0,
                    3 => DOUBLE_GAP - DOUBLE_W / 2.0,
                    _ => 0.0,
                };
                let mut d = seg(-DOUBLE_GAP, end(left_side));
                d.push_str(&seg(DOUBLE_GAP, end(right_side)));
                sink.stroke(color, Stroke::Double, opacity, &d);
            }
            weight => {
                let stroke = if weight == 2 {
                    Stroke::Heavy
                } else {
                    Stroke::Light
                };
                let perpendicular_double = w[left_side] == 3 || w[right_side] == 3;
                let from = if w[opposite] == 0 && perpendicular_double {
                    DOUBLE_GAP // stop at the nearer line of the double one
                } else {
                    -stroke.width() / 2.0 // overlap the centre so corners are square
                };
                sink.stroke(color, stroke, opacity, &seg(0.0, from));
            }
        }
    }
}

/// Collects the box-drawing and block geometry of one row.
fn row_shapes(glyphs: &[Glyph], y: f64) -> ShapeSink {
    let mut sink = ShapeSink::default();
    for g in glyphs {
        if let Some((shape, color, opacity)) = g.shape {
            push_shape(&mut sink, shape, col_x(g.col), y, color, opacity);
        }
    }
    sink
}

/// Render a buffer as a standalone SVG "terminal screenshot".
///
/// The result is a complete SVG document: a dark, rounded terminal window
/// whose title bar shows `title`, containing every cell of `buf` with its
/// foreground/background colours and text modifiers. Adjacent cells with
/// identical style are merged into single `<rect>`/`<text>` elements, wide
/// characters take two columns, box-drawing and block characters are drawn
/// as geometry so borders join seamlessly, text is XML-escaped and control
/// characters are replaced with U+FFFD. The output is deterministic.
///
/// ```ignore
/// let svg = buffer_to_svg(terminal.backend().buffer(), "triage — run list");
/// std::fs::write("screenshot.svg", svg)?;
/// ```
#[must_use]
pub fn buffer_to_svg(buf: &Buffer, title: &str) -> String {
    let cols = u32::from(buf.area.width);
    let rows = u32::from(buf.area.height);
    let width = 2.0 * PAD_X + f64::from(cols) * CELL_W;
    let height = TITLE_H + PAD_TOP + f64::from(rows) * LINE_H + PAD_BOTTOM;
    let (w, h) = (num(width), num(height));

    let mut out = String::with_capacity(1024 + buf.content.len() * 16);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#
    );
    out.push_str("<style>text{white-space:pre}</style>\n");

    // Window frame and title bar (top corners rounded to match the frame).
    let _ = writeln!(
        out,
        r#"<rect x="0.5" y="0.5" width="{}" height="{}" rx="{r}" fill="{}" stroke="{FRAME_STROKE}"/>"#,
        num(width - 1.0),
        num(height - 1.0),
        DEFAULT_BG.hex(),
        r = num(RADIUS)
    );
    let _ = writeln!(
        out,
        r#"<path d="M0.5 {}a{r} {r} 0 0 1 {r} -{r}h{}a{r} {r} 0 0 1 {r} {r}v{}h-{}z" fill="{TITLE_BAR_BG}" stroke="{FRAME_STROKE}"/>"#,
        num(RADIUS + 0.5),
        num(width - 1.0 - 2.0 * RADIUS),
        num(TITLE_H - RADIUS),
        num(width - 1.0),
        r = num(RADIUS)
    );
    for (cx, color) in [(18, "#f38ba8"), (38, "#f9e2af"), (58, "#a6e3a1")] {
        let _ = writeln!(
            out,
            r#"<circle cx="{cx}" cy="{}" r="6" fill="{color}"/>"#,
            num(TITLE_H / 2.0)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-family="{FONT_FAMILY}" font-size="13px" fill="{TITLE_FG}" xml:space="preserve">"#,
        num(width / 2.0),
        num(TITLE_H / 2.0 + 4.5)
    );
    push_escaped(&mut out, &sanitize(title));
    out.push_str("</text>\n");

    // The cell grid: backgrounds and blocks, then lines, then text.
    if cols > 0 && rows > 0 {
        let top = TITLE_H + PAD_TOP;
        let row_y = |y: u32| top + f64::from(y) * LINE_H;
        let laid_out: Vec<Vec<Glyph>> = buf
            .content
            .chunks(usize::from(buf.area.width))
            .map(layout_row)
            .collect();
        let shapes: Vec<ShapeSink> = (0u32..)
            .zip(&laid_out)
            .map(|(y, glyphs)| row_shapes(glyphs, row_y(y)))
            .collect();
        // Backgrounds and block elements are pixel-snapped fills, so that
        // adjacent ones meet without seams.
        out.push_str("<g shape-rendering=\"crispEdges\">\n");
        for (y, glyphs) in (0u32..).zip(&laid_out) {
            push_backgrounds(&mut out, glyphs, row_y(y));
        }
        for sink in &shapes {
            sink.write_rects(&mut out);
        }
        out.push_str("</g>\n<g>\n");
        for sink in &shapes {
            sink.write_strokes(&mut out);
        }
        out.push_str("</g>\n");
        let _ = writeln!(
            out,
            r#"<g font-family="{FONT_FAMILY}" font-size="{FONT_SIZE}px">"#
        );
        for (y, glyphs) in (0u32..).zip(&laid_out) {
            push_texts(&mut out, glyphs, row_y(y));
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    use super::*;

    /// A minimal XML 1.0 well-formedness check, sufficient for the subset this
    /// module emits: elements, attributes, character data, entity and
    /// character references. Returns the root element's name.
    fn check_well_formed(xml: &str) -> Result<String, String> {
        fn is_name_char(c: char) -> bool {
            c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')
        }
        fn check_chars(s: &str) -> Result<(), String> {
            match s.chars().find(|&c| {
                let ok = matches!(c, '\t' | '\n' | '\r')
                    || ('\u{20}'..='\u{d7ff}').contains(&c)
                    || ('\u{e000}'..='\u{fffd}').contains(&c)
                    || c >= '\u{10000}';
                !ok
            }) {
                Some(c) => Err(format!("forbidden character {c:?}")),
                None => Ok(()),
            }
        }
        fn check_refs(s: &str) -> Result<(), String> {
            if s.contains('<') {
                return Err(format!("raw '<' in {s:?}"));
            }
            let mut rest = s;
            while let Some(i) = rest.find('&') {
                let after = &rest[i + 1..];
                let end = after.find(';').ok_or("unterminated reference")?;
                let name = &after[..end];
                let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
                    || name
                        .strip_prefix("#x")
                        .is_some_and(|h| u32::from_str_radix(h, 16).is_ok())
                    || name
                        .strip_prefix('#')
                        .is_some_and(|d| d.parse::<u32>().is_ok());
                if !ok {
                    return Err(format!("bad reference &{name};"));
                }
                rest = &after[end + 1..];
            }
            Ok(())
        }

        check_chars(xml)?;
        let mut stack: Vec<String> = Vec::new();
        let mut root = None;
        let mut rest = xml;
        loop {
            let Some(lt) = rest.find('<') else {
                if !rest.trim().is_empty() && stack.is_empty() {
                    return Err("text after root".into());
                }
                check_refs(rest)?;
                break;
            };
            let text = &rest[..lt];
            if stack.is_empty() && !text.trim().is_empty() {
                return Err(format!("text outside root: {text:?}"));
            }
            check_refs(text)?;
            rest = &rest[lt + 1..];
            let gt = rest.find('>').ok_or("unterminated tag")?;
            let tag = &rest[..gt];
            rest = &rest[gt + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack.pop().ok_or("close without open")?;
                if open != name.trim_end() {
                    return Err(format!("</{name}> closes <{open}>"));
                }
                continue;
            }
            let (tag, self_closing) = match tag.strip_suffix('/') {
                Some(t) => (t, true),
                None => (tag, false),
            };
            let name_end = tag.find(|c: char| !is_name_char(c)).unwrap_or(tag.len());
            let name = &tag[..name_end];
            if name.is_empty() {
                return Err(format!("bad tag <{tag}>"));
            }
            if stack.is_empty() {
                if root.is_some() {
                    return Err("second root element".into());
                }
                root = Some(name.to_string());
            }
            // Attributes: name="value" or name='value', names unique.
            let mut attrs = &tag[name_end..];
            let mut seen = Vec::new();
            loop {
                let trimmed = attrs.trim_start();
                if trimmed.is_empty() {
                    break;
                }
                if trimmed.len() == attrs.len() {
                    return Err(format!("missing whitespace in <{tag}>"));
                }
                let eq = trimmed.find('=').ok_or("attribute without value")?;
                let an = &trimmed[..eq];
                if an.is_empty() || !an.chars().all(is_name_char) {
                    return Err(format!("bad attribute name {an:?}"));
                }
                if seen.contains(&an) {
                    return Err(format!("duplicate attribute {an}"));
                }
                seen.push(an);
                let after = &trimmed[eq + 1..];
                let quote = after.chars().next().ok_or("missing value")?;
                if quote != '"' && quote != '\'' {
                    return Err("unquoted attribute".into());
                }
                let close = after[1..].find(quote).ok_or("unterminated value")?;
                check_refs(&after[1..=close])?;
                attrs = &after[close + 2..];
            }
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        if let Some(open) = stack.pop() {
            return Err(format!("unclosed <{open}>"));
        }
        root.ok_or_else(|| "no root element".into())
    }

    /// Extracts the character data of every `<text>` element.
    fn texts(svg: &str) -> Vec<String> {
        svg.match_indices("<text ")
            .map(|(i, _)| {
                let s = &svg[i..];
                let open_end = s.find('>').unwrap() + 1;
                let close = s.find("</text>").unwrap();
                s[open_end..close].to_string()
            })
            .collect()
    }

    /// The full opening tag of the `<text>` element whose content is `content`.
    fn text_tag<'a>(svg: &'a str, content: &str) -> &'a str {
        let needle = format!(">{content}</text>");
        let end = svg.find(&needle).expect("text element present");
        let start = svg[..end].rfind("<text ").unwrap();
        &svg[start..=end]
    }

    #[test]
    fn styled_text_renders_expected_elements() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 20, 3));
        buf.set_string(0, 0, "hello", Style::new().fg(Color::Red).bold());
        buf.set_string(6, 0, "world", Style::new().italic().underlined());
        buf.set_string(0, 1, "sel", Style::new().fg(Color::Black).bg(Color::Cyan));
        buf.set_string(4, 1, "rev", Style::new().reversed());
        buf.set_string(0, 2, "dim", Style::new().dim().fg(Color::Indexed(196)));
        buf.set_string(4, 2, "rgb", Style::new().fg(Color::Rgb(1, 2, 3)));
        let svg = buffer_to_svg(&buf, "demo");

        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains(">demo</text>"));
        assert!(svg.contains("'DejaVu Sans Mono'"));
        // Title plus one text element per styled run.
        assert_eq!(
            texts(&svg),
            ["demo", "hello", "world", "sel", "rev", "dim", "rgb"]
        );

        let hello = text_tag(&svg, "hello");
        assert!(hello.contains(r#"x="12" y="51""#), "{hello}");
        assert!(hello.contains(r#"textLength="42""#), "{hello}");
        assert!(hello.contains(r##"fill="#f38ba8""##), "{hello}");
        assert!(hello.contains(r#"font-weight="bold""#), "{hello}");
        assert!(hello.contains(r#"xml:space="preserve""#), "{hello}");

        let world = text_tag(&svg, "world");
        assert!(world.contains(r#"x="62.4""#), "{world}");
        assert!(world.contains(r#"font-style="italic""#), "{world}");
        assert!(world.contains(r#"text-decoration="underline""#), "{world}");
        assert!(!world.contains("font-weight"), "{world}");

        // Background run for "sel": cyan, three cells wide.
        assert!(
            svg.contains(r##"<rect x="12" y="56" width="25.2" height="18" fill="#94e2d5"/>"##),
            "{svg}"
        );
        assert!(text_tag(&svg, "sel").contains(r##"fill="#45475a""##));
        // Reversed default colours: text in the window colour on a light cell.
        assert!(text_tag(&svg, "rev").contains(r##"fill="#1e1e2e""##));
        assert!(
            svg.contains(r##"<rect x="45.6" y="56" width="25.2" height="18" fill="#cdd6f4"/>"##)
        );
        // Indexed(196) is xterm's pure red; DIM lowers opacity.
        let dim = text_tag(&svg, "dim");
        assert!(
            dim.contains(r##"fill="#ff0000""##) && dim.contains("opacity="),
            "{dim}"
        );
        assert!(text_tag(&svg, "rgb").contains(r##"fill="#010203""##));

        assert_eq!(check_well_formed(&svg), Ok("svg".to_string()));
    }

    #[test]
    fn same_style_cells_merge_into_one_run() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 12, 1));
        let style = Style::new().fg(Color::Green).bg(Color::Blue);
        buf.set_string(0, 0, "ab", style);
        buf.set_string(2, 0, "cd", style);
        buf.set_string(4, 0, "  e f", style);
        let svg = buffer_to_svg(&buf, "");
        assert_eq!(texts(&svg), ["", "abcd  e f"]);
        assert_eq!(svg.matches("<rect ").count(), 2, "frame + one run: {svg}");
        assert!(svg.contains(r#"width="75.6" height="18""#), "{svg}");
    }

    #[test]
    fn escapes_xml_and_replaces_control_characters() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 16, 2));
        buf.set_string(0, 0, r#"<a & "b" 'c'>"#, Style::new());
        buf[(0, 1)].set_symbol("\u{1b}");
        buf[(1, 1)].set_symbol("\u{0}");
        buf[(2, 1)].set_symbol("x");
        let svg = buffer_to_svg(&buf, "a<b>&\"c\" 'd'\u{7}");
        assert!(svg.contains(">&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;</text>"));
        assert!(svg.contains(">a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;\u{fffd}</text>"));
        assert!(svg.contains(">\u{fffd}\u{fffd}x</text>"));
        assert!(!svg.chars().any(|c| c.is_control() && c != '\n'));
        assert_eq!(check_well_formed(&svg), Ok("svg".to_string()));
    }

    #[test]
    fn wide_characters_take_two_cells_without_duplication() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 8, 1));
        buf.set_string(0, 0, "日本", Style::new().bg(Color::Red));
        buf.set_string(4, 0, "ab", Style::new().bg(Color::Red));
        // The placeholder cells hold a blank after `set_string`; put junk in
        // one to prove it is never drawn.
        buf[(1, 0)].set_symbol("X");
        let svg = buffer_to_svg(&buf, "t");
        // Each wide character is placed on the grid by itself.
        assert_eq!(texts(&svg), ["t", "日", "本", "ab"]);
        let tag = text_tag(&svg, "日");
        assert!(
            tag.contains(r#"x="12""#) && tag.contains(r#"textLength="16.8""#),
            "{tag}"
        );
        let tag = text_tag(&svg, "本");
        assert!(
            tag.contains(r#"x="28.8""#) && tag.contains(r#"textLength="16.8""#),
            "{tag}"
        );
        let tag = text_tag(&svg, "ab");
        assert!(
            tag.contains(r#"x="45.6""#) && tag.contains(r#"textLength="16.8""#),
            "{tag}"
        );
        // One background run covering 2 + 2 + 2 cells.
        assert!(
            svg.contains(r#"<rect x="12" y="38" width="50.4" height="18""#),
            "{svg}"
        );
        assert_eq!(svg.matches('日').count(), 1);
        assert_eq!(svg.matches('本').count(), 1);
        assert!(!svg.contains('X'));
        assert_eq!(check_well_formed(&svg), Ok("svg".to_string()));
    }

    #[test]
    fn box_drawing_and_blocks_are_drawn_as_geometry() {
        use ratatui::widgets::{Block, BorderType, Widget};
        let mut buf = Buffer::empty(Rect::new(0, 0, 10, 4));
        Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(Style::new().fg(Color::Cyan))
            .title("Hi")
            .render(Rect::new(0, 0, 6, 3), &mut buf);
        buf.set_string(0, 3, "██▀x", Style::new().fg(Color::Green).dim());
        buf.set_string(6, 0, "═╬", Style::new());
        let svg = buffer_to_svg(&buf, "");
        // No box or block character is left to the font.
        assert_eq!(texts(&svg), ["", "Hi", "x"]);
        assert!(!svg.contains(['╭', '─', '│', '█', '▀', '═', '╬']));
        // Rounded corners use arcs; the cyan border is one path per row.
        assert_eq!(svg.matches(" A4.2 4.2 0 0 ").count(), 0);
        assert_eq!(svg.matches("A4.2 4.2 0 0 ").count(), 4, "{svg}");
        assert_eq!(svg.matches(r##"stroke="#94e2d5""##).count(), 3, "{svg}");
        // The two full blocks merge into one rectangle; the half block is
        // separate. DIM lowers their opacity.
        assert!(
            svg.contains(
                r##"<rect x="12" y="92" width="16.8" height="18" fill="#a6e3a1" opacity="0.55"/>"##
            ),
            "{svg}"
        );
        assert!(
            svg.contains(
                r##"<rect x="28.8" y="92" width="8.4" height="9" fill="#a6e3a1" opacity="0.55"/>"##
            ),
            "{svg}"
        );
        // ═ is two lines, each drawn from both edges past the centre.
        assert!(
            svg.contains("M64.4 45.3L70.8 45.3M64.4 48.7L70.8 48.7"),
            "{svg}"
        );
        assert!(
            svg.contains("M68.8 48.7L62.4 48.7M68.8 45.3L62.4 45.3"),
            "{svg}"
        );
        assert_eq!(check_well_formed(&svg), Ok("svg".to_string()));
    }

    #[test]
    fn box_drawing_table_matches_the_unicode_names() {
        use Shape::{Arc, Lines};
        assert_eq!(shape_of("─"), Some(Lines([0, 1, 0, 1])));
        assert_eq!(shape_of("┃"), Some(Lines([2, 0, 2, 0])));
        assert_eq!(shape_of("┄"), None);
        assert_eq!(shape_of("┏"), Some(Lines([0, 2, 2, 0])));
        assert_eq!(shape_of("┘"), Some(Lines([1, 0, 0, 1])));
        assert_eq!(shape_of("┣"), Some(Lines([2, 2, 2, 0])));
        assert_eq!(shape_of("┤"), Some(Lines([1, 0, 1, 1])));
        assert_eq!(shape_of("┬"), Some(Lines([0, 1, 1, 1])));
        assert_eq!(shape_of("┻"), Some(Lines([2, 2, 0, 2])));
        assert_eq!(shape_of("┼"), Some(Lines([1, 1, 1, 1])));
        assert_eq!(shape_of("╋"), Some(Lines([2, 2, 2, 2])));
        assert_eq!(shape_of("╌"), None);
        assert_eq!(shape_of("╔"), Some(Lines([0, 3, 3, 0])));
        assert_eq!(shape_of("╝"), Some(Lines([3, 0, 0, 3])));
        assert_eq!(shape_of("╪"), Some(Lines([1, 3, 1, 3])));
        assert_eq!(shape_of("╬"), Some(Lines([3, 3, 3, 3])));
        assert_eq!(shape_of("╭"), Some(Arc(1, 1)));
        assert_eq!(shape_of("╯"), Some(Arc(-1, -1)));
        assert_eq!(shape_of("╱"), None);
        assert_eq!(shape_of("╴"), Some(Lines([0, 0, 0, 1])));
        assert_eq!(shape_of("╿"), Some(Lines([2, 0, 1, 0])));
        assert_eq!(shape_of("▁"), Some(Shape::Block(0, 7, 8, 8, 100)));
        assert_eq!(shape_of("▏"), Some(Shape::Block(0, 0, 1, 8, 100)));
        assert_eq!(shape_of("▉"), Some(Shape::Block(0, 0, 7, 8, 100)));
        assert_eq!(shape_of("▟"), Some(Shape::Quadrants(2 | 4 | 8)));
        assert_eq!(shape_of("▖"), Some(Shape::Quadrants(4)));
        assert_eq!(shape_of("a"), None);
        assert_eq!(shape_of("──"), None);
    }

    #[test]
    fn wide_character_at_row_end_and_skipped_cells() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 3, 2));
        // A wide char in the last column cannot spill into the next row.
        buf[(2, 0)].set_symbol("日");
        buf[(0, 1)].set_symbol("y");
        buf[(1, 1)]
            .set_symbol("z")
            .set_diff_option(CellDiffOption::Skip);
        let svg = buffer_to_svg(&buf, "");
        assert_eq!(texts(&svg), ["", "日", "y"]);
    }

    #[test]
    fn xterm_palette() {
        assert_eq!(indexed(16), Rgb(0, 0, 0));
        assert_eq!(indexed(21), Rgb(0, 0, 255));
        assert_eq!(indexed(196), Rgb(255, 0, 0));
        assert_eq!(indexed(231), Rgb(255, 255, 255));
        assert_eq!(indexed(232), Rgb(8, 8, 8));
        assert_eq!(indexed(255), Rgb(238, 238, 238));
        assert_eq!(resolve(Color::Indexed(1)), resolve(Color::Red));
        assert_eq!(resolve(Color::Reset), None);
    }

    #[test]
    fn output_is_deterministic_and_sized_to_the_grid() {
        let mut buf = Buffer::empty(Rect::new(5, 7, 10, 4));
        buf.set_string(5, 7, "x", Style::new().magenta());
        let a = buffer_to_svg(&buf, "t");
        assert_eq!(a, buffer_to_svg(&buf.clone(), "t"));
        // 2 * 12 + 10 * 8.4 = 108; 30 + 8 + 4 * 18 + 12 = 122.
        assert!(
            a.contains(r#"width="108" height="122" viewBox="0 0 108 122""#),
            "{a}"
        );
        assert_eq!(check_well_formed(&a), Ok("svg".to_string()));
    }

    #[test]
    fn empty_buffer_is_just_a_frame() {
        let svg = buffer_to_svg(&Buffer::empty(Rect::ZERO), "");
        assert_eq!(check_well_formed(&svg), Ok("svg".to_string()));
    }

    #[test]
    fn well_formedness_checker_rejects_bad_xml() {
        for bad in [
            "<a><b></a></b>",
            "<a>&</a>",
            "<a>&nope;</a>",
            "<a x=1/>",
            "<a x=\"1\" x=\"2\"/>",
            "<a>\u{1}</a>",
            "<a/><b/>",
            "<a>",
            "<a>x < y</a>",
        ] {
            assert!(check_well_formed(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_well_formed("<a k='v' j=\"&amp;&#x41;\"><b/>t&lt;</a>\n"),
            Ok("a".to_string())
        );
    }
}
