//! One-line text inputs: the query bar, the fuzzy jump and the export prompt.
//!
//! [`LineInput`] is the editable text with a cursor; [`Jump`] ranks cases
//! and pairs with nucleo's fuzzy matcher as the reviewer types.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

use crate::core::index::RunIndex;

/// Editable single-line text with a cursor (a char index).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineInput {
    pub text: String,
    pub cursor: usize,
}

impl LineInput {
    /// An input holding `text`, cursor at the end.
    pub fn with(text: &str) -> LineInput {
        LineInput {
            text: text.to_string(),
            cursor: text.chars().count(),
        }
    }

    fn byte(&self, c: usize) -> usize {
        self.text
            .char_indices()
            .nth(c)
            .map(|(b, _)| b)
            .unwrap_or(self.text.len())
    }

    /// Insert text at the cursor; line breaks become spaces.
    pub fn insert(&mut self, s: &str) {
        let clean: String = s
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        let b = self.byte(self.cursor);
        self.text.insert_str(b, &clean);
        self.cursor += clean.chars().count();
    }

    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            let b = self.byte(self.cursor - 1);
            self.text.remove(b);
            self.cursor -= 1;
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.chars().count() {
            let b = self.byte(self.cursor);
            self.text.remove(b);
        }
    }

    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.text.chars().count());
    }

    pub fn home(&mut self) {
        self.cursor = 0;
    }

    pub fn end(&mut self) {
        self.cursor = self.text.chars().count();
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
    }

    /// Delete the word before the cursor.
    pub fn delete_word(&mut self) {
        let chars: Vec<char> = self.text.chars().collect();
        let mut c = self.cursor;
        while c > 0 && chars[c - 1] == ' ' {
            c -= 1;
        }
        while c > 0 && chars[c - 1] != ' ' {
            c -= 1;
        }
        let (a, b) = (self.byte(c), self.byte(self.cursor));
        self.text.replace_range(a..b, "");
        self.cursor = c;
    }
}

/// Where a jump target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JumpTarget {
    /// A case: jump to its first pair in view.
    Case(u32),
    /// A pair, by row index.
    Pair(u32),
}

/// One ranked candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpHit {
    pub label: String,
    pub target: JumpTarget,
    pub score: u32,
}

/// The fuzzy jump: the typed pattern and the best matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Jump {
    pub input: LineInput,
    pub hits: Vec<JumpHit>,
    pub selected: usize,
}

/// How many matches the jump list keeps.
pub const JUMP_HITS: usize = 50;

impl Jump {
    /// Rank the cases and pairs among `rows` against the pattern.
    pub fn refresh(&mut self, index: &RunIndex, rows: &[u32]) {
        self.selected = 0;
        self.hits.clear();
        let mut seen_case = std::collections::HashSet::new();
        let mut candidates: Vec<(String, JumpTarget)> = Vec::new();
        for &r in rows {
            let row = &index.rows[r as usize];
            if seen_case.insert(row.case) {
                candidates.push((
                    crate::core::text::inert_line(index.str(row.case)),
                    JumpTarget::Case(r),
                ));
            }
            candidates.push((
                format!(
                    "{} / {}",
                    crate::core::text::inert_line(index.str(row.case)),
                    crate::core::text::inert_line(index.str(row.variant))
                ),
                JumpTarget::Pair(r),
            ));
        }
        if self.input.text.trim().is_empty() {
            self.hits = candidates
                .into_iter()
                .filter(|(_, t)| matches!(t, JumpTarget::Case(_)))
                .take(JUMP_HITS)
                .map(|(label, target)| JumpHit {
                    label,
                    target,
                    score: 0,
                })
                .collect();
            return;
        }
        let mut matcher = Matcher::new(Config::DEFAULT);
        let pattern = Pattern::parse(&self.input.text, CaseMatching::Ignore, Normalization::Smart);
        let mut scored: Vec<(u32, usize)> = Vec::new();
        let mut buf = Vec::new();
        for (i, (label, _)) in candidates.iter().enumerate() {
            let hay = nucleo_matcher::Utf32Str::new(label, &mut buf);
            if let Some(score) = pattern.score(hay, &mut matcher) {
                scored.push((score, i));
            }
        }
        // Best first; ties keep file order (cases before their pairs).
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        self.hits = scored
            .into_iter()
            .take(JUMP_HITS)
            .map(|(score, i)| JumpHit {
                label: candidates[i].0.clone(),
                target: candidates[i].1,
                score,
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_keeps_the_cursor_on_chars() {
        let mut i = LineInput::with("family:état");
        i.left();
        i.backspace();
        assert_eq!(i.text, "family:étt");
        i.home();
        i.insert("-");
        assert_eq!(i.text, "-family:étt");
        i.end();
        i.delete_word();
        assert_eq!(i.text, "");
    }
}
