//! A small multi-line text editor for notes.
//!
//! Plain state and pure operations, so every key is testable without a
//! terminal: the cursor is a (line, char) position, word jumps skip runs of
//! whitespace then runs of word characters, and pasted text is inserted as is
//! (carriage returns dropped). The text is shown through the inert-text path
//! like any other string.

/// The note being edited, with its cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteEditor {
    pub lines: Vec<String>,
    /// Line index.
    pub row: usize,
    /// Char index within the line.
    pub col: usize,
    /// The row the view starts at.
    pub scroll: usize,
    /// The rows (pair indices) the note will be written to.
    pub targets: Vec<u32>,
    /// The text before editing, to tell whether anything changed.
    pub original: String,
    /// A cancel was asked for with changes typed: the next cancel discards them,
    /// any other key goes back to editing.
    pub discard_asked: bool,
}

impl NoteEditor {
    /// Start editing `text` for the given pairs, cursor at the end.
    pub fn new(text: &str, targets: Vec<u32>) -> NoteEditor {
        let lines: Vec<String> = if text.is_empty() {
            vec![String::new()]
        } else {
            text.split('\n').map(str::to_string).collect()
        };
        let row = lines.len() - 1;
        let col = lines[row].chars().count();
        NoteEditor {
            lines,
            row,
            col,
            scroll: 0,
            targets,
            original: text.to_string(),
            discard_asked: false,
        }
    }

    /// Whether the note differs from the one the editor opened with.
    pub fn changed(&self) -> bool {
        self.text() != self.original.trim_end()
    }

    /// The whole note; trailing blank lines are trimmed.
    pub fn text(&self) -> String {
        self.lines.join("\n").trim_end().to_string()
    }

    fn line_len(&self, row: usize) -> usize {
        self.lines.get(row).map(|l| l.chars().count()).unwrap_or(0)
    }

    fn byte_at(&self, row: usize, col: usize) -> usize {
        let line = &self.lines[row];
        line.char_indices()
            .nth(col)
            .map(|(b, _)| b)
            .unwrap_or(line.len())
    }

    /// Insert text at the cursor (newlines split lines).
    pub fn insert(&mut self, s: &str) {
        for (i, part) in s
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .split('\n')
            .enumerate()
        {
            if i > 0 {
                self.newline();
            }
            let b = self.byte_at(self.row, self.col);
            self.lines[self.row].insert_str(b, part);
            self.col += part.chars().count();
        }
    }

    /// Split the line at the cursor.
    pub fn newline(&mut self) {
        let b = self.byte_at(self.row, self.col);
        let rest = self.lines[self.row].split_off(b);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    /// Delete the char before the cursor, joining lines at the start.
    pub fn backspace(&mut self) {
        if self.col > 0 {
            let b = self.byte_at(self.row, self.col - 1);
            self.lines[self.row].remove(b);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.line_len(self.row);
            self.lines[self.row].push_str(&line);
        }
    }

    /// Delete the char at the cursor, joining lines at the end.
    pub fn delete(&mut self) {
        if self.col < self.line_len(self.row) {
            let b = self.byte_at(self.row, self.col);
            self.lines[self.row].remove(b);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Delete back to the start of the previous word.
    pub fn delete_word(&mut self) {
        let (row, col) = (self.row, self.col);
        self.word_left();
        if self.row != row {
            // Crossed a line boundary: just join like backspace would.
            self.row = row;
            self.col = col;
            self.backspace();
            return;
        }
        let start = self.byte_at(row, self.col);
        let end = self.byte_at(row, col);
        self.lines[row].replace_range(start..end, "");
    }

    /// Remove everything.
    pub fn clear(&mut self) {
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.scroll = 0;
    }

    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.line_len(self.row);
        }
    }

    pub fn right(&mut self) {
        if self.col < self.line_len(self.row) {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.line_len(self.row));
        }
    }

    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.line_len(self.row));
        }
    }

    pub fn home(&mut self) {
        self.col = 0;
    }

    pub fn end(&mut self) {
        self.col = self.line_len(self.row);
    }

    /// Move to the start of the previous word.
    pub fn word_left(&mut self) {
        if self.col == 0 {
            self.left();
            return;
        }
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut c = self.col;
        while c > 0 && !is_word(chars[c - 1]) {
            c -= 1;
        }
        while c > 0 && is_word(chars[c - 1]) {
            c -= 1;
        }
        self.col = c;
    }

    /// Move past the end of the next word.
    pub fn word_right(&mut self) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        if self.col >= chars.len() {
            self.right();
            return;
        }
        let mut c = self.col;
        while c < chars.len() && !is_word(chars[c]) {
            c += 1;
        }
        while c < chars.len() && is_word(chars[c]) {
            c += 1;
        }
        self.col = c;
    }

    /// Keep the cursor row inside a view of `height` rows.
    pub fn scroll_to_cursor(&mut self, height: usize) {
        let h = height.max(1);
        if self.row < self.scroll {
            self.scroll = self.row;
        } else if self.row >= self.scroll + h {
            self.scroll = self.row + 1 - h;
        }
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_newlines_and_backspace() {
        let mut e = NoteEditor::new("", vec![0]);
        e.insert("near the review threshold");
        e.newline();
        e.insert("rerun ×3");
        assert_eq!(e.text(), "near the review threshold\nrerun ×3");
        e.home();
        e.backspace();
        assert_eq!(e.lines.len(), 1);
        assert_eq!(e.col, "near the review threshold".len());
    }

    #[test]
    fn word_jumps_and_delete_word() {
        let mut e = NoteEditor::new("alpha beta  gamma", vec![0]);
        e.word_left();
        assert_eq!(e.col, 12);
        e.word_left();
        assert_eq!(e.col, 6);
        e.word_right();
        assert_eq!(e.col, 10);
        e.end();
        e.delete_word();
        assert_eq!(e.text(), "alpha beta");
    }

    #[test]
    fn paste_splits_lines_and_unicode_is_safe() {
        let mut e = NoteEditor::new("日本", vec![0]);
        e.left();
        e.insert("x\r\ny");
        assert_eq!(e.lines, vec!["日x".to_string(), "y本".to_string()]);
        e.delete();
        assert_eq!(e.text(), "日x\ny");
        e.clear();
        assert_eq!(e.text(), "");
    }
}
