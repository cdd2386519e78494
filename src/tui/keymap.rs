//! Keys to actions, per mode, loaded from TOML.
//!
//! A keymap file has one table per [`Mode`]; each entry names an
//! [`Action`] and lists its keys: `next_pair = ["j", "down"]`. A key may be a
//! sequence written with spaces (`"g g"`, `"ctrl-x ctrl-s"`). The default
//! keymap is embedded from `keymaps/default.toml`. Loading rejects unknown
//! modes and actions, unparsable keys and a key bound twice in one mode, with
//! the file and line — there is never a silent fallback.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;
use toml::Spanned;

use super::action::Action;

/// The embedded default keymap.
pub const DEFAULT_KEYMAP: &str = include_str!("../../keymaps/default.toml");

/// Which part of the screen has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Keys that work in both the list and the detail.
    Global,
    List,
    Detail,
    Help,
    Problems,
    Note,
    Confirm,
}

impl Mode {
    /// Every mode, in the order help lists them.
    pub const ALL: [Mode; 7] = [
        Mode::Global,
        Mode::List,
        Mode::Detail,
        Mode::Help,
        Mode::Problems,
        Mode::Note,
        Mode::Confirm,
    ];

    /// The table name in keymap files.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Global => "global",
            Mode::List => "list",
            Mode::Detail => "detail",
            Mode::Help => "help",
            Mode::Problems => "problems",
            Mode::Note => "note",
            Mode::Confirm => "confirm",
        }
    }

    fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// One key press with its modifiers, normalised (no SHIFT on characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyChord {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl KeyChord {
    /// Normalise a terminal key event.
    pub fn from_event(ev: &KeyEvent) -> KeyChord {
        let mut mods =
            ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match ev.code {
            KeyCode::Char(c) => {
                // The character already carries the shift.
                mods.remove(KeyModifiers::SHIFT);
                if mods.contains(KeyModifiers::CONTROL) {
                    KeyCode::Char(c.to_ascii_lowercase())
                } else {
                    KeyCode::Char(c)
                }
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        KeyChord { code, mods }
    }

    /// A plain key without modifiers.
    pub fn plain(code: KeyCode) -> KeyChord {
        KeyChord {
            code,
            mods: KeyModifiers::NONE,
        }
    }

    /// Parse one chord such as `j`, `G`, `ctrl-r`, `shift-tab`, `pgdn`, `f1`.
    pub fn parse(s: &str) -> Option<KeyChord> {
        if s.chars().count() == 1 {
            let c = s.chars().next()?;
            return Some(KeyChord::plain(KeyCode::Char(c)));
        }
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if let Some(r) = lower
                .strip_prefix("ctrl-")
                .or_else(|| lower.strip_prefix("c-"))
            {
                mods |= KeyModifiers::CONTROL;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower
                .strip_prefix("alt-")
                .or_else(|| lower.strip_prefix("m-"))
            {
                mods |= KeyModifiers::ALT;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower.strip_prefix("shift-") {
                mods |= KeyModifiers::SHIFT;
                rest = &rest[rest.len() - r.len()..];
            } else {
                break;
            }
        }
        let code = if rest.chars().count() == 1 {
            let c = rest.chars().next()?;
            if mods.contains(KeyModifiers::SHIFT) && c.is_ascii_alphabetic() {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c.to_ascii_uppercase())
            } else if mods.contains(KeyModifiers::CONTROL) {
                KeyCode::Char(c.to_ascii_lowercase())
            } else {
                KeyCode::Char(c)
            }
        } else {
            match rest.to_ascii_lowercase().as_str() {
                "esc" | "escape" => KeyCode::Esc,
                "enter" | "return" | "ret" => KeyCode::Enter,
                "tab" if mods.contains(KeyModifiers::SHIFT) => {
                    mods.remove(KeyModifiers::SHIFT);
                    KeyCode::BackTab
                }
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "space" | "spc" => KeyCode::Char(' '),
                "backspace" | "bs" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                "insert" | "ins" => KeyCode::Insert,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" | "pgup" => KeyCode::PageUp,
                "pagedown" | "pgdn" | "pgdown" => KeyCode::PageDown,
                f if f.starts_with('f') => {
                    let n: u8 = f[1..].parse().ok()?;
                    if !(1..=24).contains(&n) {
                        return None;
                    }
                    KeyCode::F(n)
                }
                _ => return None,
            }
        };
        Some(KeyChord { code, mods })
    }
}

impl fmt::Display for KeyChord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::Insert => f.write_str("ins"),
            KeyCode::Up => f.write_str("up"),
            KeyCode::Down => f.write_str("down"),
            KeyCode::Left => f.write_str("left"),
            KeyCode::Right => f.write_str("right"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// A key sequence: one or more chords.
pub type KeySeq = Vec<KeyChord>;

/// Parse a space-separated sequence (`"g g"`, `"ctrl-x ctrl-s"`); a lone
/// space character is the space key.
pub fn parse_seq(s: &str) -> Option<KeySeq> {
    if s == " " {
        return Some(vec![KeyChord::plain(KeyCode::Char(' '))]);
    }
    let seq: Option<KeySeq> = s
        .split(' ')
        .filter(|p| !p.is_empty())
        .map(KeyChord::parse)
        .collect();
    seq.filter(|s| !s.is_empty())
}

/// Show a sequence the way keymap files write it.
pub fn seq_to_string(seq: &[KeyChord]) -> String {
    seq.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A keymap problem, with the file and line it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeymapError(pub String);

impl fmt::Display for KeymapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a key press means so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Action(Action),
    /// The keys so far start a longer sequence.
    Pending,
    Unbound,
}

/// The live bindings: per mode, key sequence → action.
#[derive(Debug, Clone, Default)]
pub struct Keymap {
    map: HashMap<Mode, HashMap<KeySeq, Action>>,
    /// Bindings in file order, for help and hints.
    order: Vec<(Mode, KeySeq, Action)>,
    /// The name of the keymap (preset name or path).
    pub name: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Keys {
    One(String),
    Many(Vec<String>),
}

impl Keymap {
    /// The embedded default keymap.
    pub fn default_keymap() -> Keymap {
        // The embedded file is checked by a unit test; an error here is a build bug.
        Keymap::from_toml(DEFAULT_KEYMAP, "keymaps/default.toml").unwrap_or_default()
    }

    /// Parse and validate a keymap file.
    pub fn from_toml(text: &str, file: &str) -> Result<Keymap, KeymapError> {
        type Tables = BTreeMap<String, BTreeMap<String, Spanned<Keys>>>;
        let tables: Tables = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
            KeymapError(format!("{file}:{line}: not valid TOML: {}", e.message()))
        })?;
        let mut km = Keymap {
            name: file.to_string(),
            ..Keymap::default()
        };
        // Sort entries by position so errors and help follow the file.
        let mut entries = Vec::new();
        for (mode_name, actions) in &tables {
            let mode = Mode::parse(mode_name).ok_or_else(|| {
                KeymapError(format!(
                    "{file}: unknown mode [{mode_name}]; modes are {}",
                    Mode::ALL.map(|m| m.name()).join(", ")
                ))
            })?;
            for (action_name, keys) in actions {
                entries.push((keys.span().start, mode, action_name, keys));
            }
        }
        entries.sort_by_key(|e| e.0);
        for (pos, mode, action_name, keys) in entries {
            let line = line_of(text, pos);
            let action: Action = serde_json::from_value(serde_json::Value::String(action_name.clone()))
                .map_err(|_| {
                    KeymapError(format!(
                        "{file}:{line}: unknown action `{action_name}` in [{}]; `triage keys` lists the actions",
                        mode.name()
                    ))
                })?;
            let list = match keys.get_ref() {
                Keys::One(s) => vec![s.clone()],
                Keys::Many(v) => v.clone(),
            };
            for k in list {
                let seq = parse_seq(&k).ok_or_else(|| {
                    KeymapError(format!(
                        "{file}:{line}: cannot parse key \"{k}\" for `{action_name}` (try \"j\", \"ctrl-r\", \"pgdn\", \"g g\")"
                    ))
                })?;
                km.bind(mode, seq, action).map_err(|other| {
                    KeymapError(format!(
                        "{file}:{line}: key \"{k}\" is bound twice in [{}]: to `{}` and to `{action_name}`",
                        mode.name(),
                        other.name()
                    ))
                })?;
            }
        }
        Ok(km)
    }

    /// Add a binding; on a clash returns the action the key already has.
    fn bind(&mut self, mode: Mode, seq: KeySeq, action: Action) -> Result<(), Action> {
        let m = self.map.entry(mode).or_default();
        if let Some(prev) = m.get(&seq) {
            if *prev != action {
                return Err(*prev);
            }
            return Ok(());
        }
        // A key that is both a whole binding and the start of a longer one is a clash too.
        for (other, a) in m.iter() {
            let shorter = other.len().min(seq.len());
            if other[..shorter] == seq[..shorter] && *a != action {
                return Err(*a);
            }
        }
        m.insert(seq.clone(), action);
        self.order.push((mode, seq, action));
        Ok(())
    }

    /// Look up the keys typed so far in one mode.
    pub fn lookup(&self, mode: Mode, keys: &[KeyChord]) -> Lookup {
        let Some(m) = self.map.get(&mode) else {
            return Lookup::Unbound;
        };
        if let Some(a) = m.get(keys) {
            return Lookup::Action(*a);
        }
        if m.keys()
            .any(|seq| seq.len() > keys.len() && seq[..keys.len()] == *keys)
        {
            return Lookup::Pending;
        }
        Lookup::Unbound
    }

    /// The keys bound to an action in a mode, in file order.
    pub fn keys_for(&self, mode: Mode, action: Action) -> Vec<&KeySeq> {
        self.order
            .iter()
            .filter(|(m, _, a)| *m == mode && *a == action)
            .map(|(_, k, _)| k)
            .collect()
    }

    /// The first key of an action in any of `modes`, for hints.
    pub fn hint(&self, modes: &[Mode], action: Action) -> Option<String> {
        modes
            .iter()
            .find_map(|m| self.keys_for(*m, action).first().map(|k| seq_to_string(k)))
    }

    /// Every binding, in file order.
    pub fn bindings(&self) -> &[(Mode, KeySeq, Action)] {
        &self.order
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keymap_parses() {
        let km = Keymap::from_toml(DEFAULT_KEYMAP, "default.toml").unwrap();
        assert_eq!(
            km.lookup(Mode::List, &[KeyChord::plain(KeyCode::Char('j'))]),
            Lookup::Action(Action::NextPair)
        );
        assert_eq!(
            km.lookup(Mode::Global, &[KeyChord::plain(KeyCode::Char('?'))]),
            Lookup::Action(Action::ToggleHelp)
        );
    }

    #[test]
    fn chords_round_trip() {
        for s in [
            "j",
            "G",
            "ctrl-r",
            "shift-tab",
            "pgdn",
            "f1",
            "space",
            "esc",
            "enter",
            "alt-x",
            "?",
        ] {
            let k = KeyChord::parse(s).unwrap();
            assert_eq!(KeyChord::parse(&k.to_string()), Some(k), "{s}");
        }
        assert_eq!(KeyChord::parse("shift-g"), KeyChord::parse("G"));
        assert_eq!(KeyChord::parse("ctrl-R"), KeyChord::parse("ctrl-r"));
        assert_eq!(KeyChord::parse("hyper-x"), None);
    }

    #[test]
    fn sequences_are_pending_then_bound() {
        let km = Keymap::from_toml("[list]\nfirst_pair = [\"g g\"]\n", "t.toml").unwrap();
        let g = KeyChord::plain(KeyCode::Char('g'));
        assert_eq!(km.lookup(Mode::List, &[g]), Lookup::Pending);
        assert_eq!(
            km.lookup(Mode::List, &[g, g]),
            Lookup::Action(Action::FirstPair)
        );
    }

    #[test]
    fn errors_name_file_line_and_both_actions() {
        let e = Keymap::from_toml(
            "[list]\nnext_pair = [\"j\"]\nprev_pair = [\"j\"]\n",
            "k.toml",
        )
        .unwrap_err();
        assert_eq!(
            e.0,
            "k.toml:3: key \"j\" is bound twice in [list]: to `next_pair` and to `prev_pair`"
        );
        let e = Keymap::from_toml("[list]\n\nnxt_pair = \"j\"\n", "k.toml").unwrap_err();
        assert_eq!(
            e.0,
            "k.toml:3: unknown action `nxt_pair` in [list]; `triage keys` lists the actions"
        );
        let e = Keymap::from_toml("[list]\nnext_pair = \"ctrl-hyper-j\"\n", "k.toml").unwrap_err();
        assert!(
            e.0.starts_with("k.toml:2: cannot parse key \"ctrl-hyper-j\""),
            "{e}"
        );
        let e = Keymap::from_toml("[list\nnext_pair = 1\n", "k.toml").unwrap_err();
        assert!(e.0.starts_with("k.toml:1: not valid TOML"), "{e}");
        let e = Keymap::from_toml("[lists]\nnext_pair = \"j\"\n", "k.toml").unwrap_err();
        assert!(e.0.starts_with("k.toml: unknown mode [lists]"), "{e}");
    }
}
