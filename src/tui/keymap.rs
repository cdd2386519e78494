//! Keys to actions, per mode, loaded from TOML.
//!
//! A keymap file has one table per [`Mode`]; each entry names an
//! [`Action`] and lists its keys: `next_pair = ["j", "down"]`. A key may be a
//! sequence written with spaces (`"g g"`, `"ctrl-x ctrl-s"`). The default
//! keymap is embedded from `keymaps/default.toml`. Loading rejects unknown
//! modes and actions, unparsable keys and a key bound twice in one mode, with
//! the file and line — there is never a silent fallback.

use std::collections::HashMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::core::taxonomy::Taxonomy;

use super::action::Action;

/// The embedded default keymap.
pub const DEFAULT_KEYMAP: &str = include_str!("../../keymaps/default.toml");

/// The presets, embedded: name and file text.
pub const PRESETS: [(&str, &str); 3] = [
    ("default", DEFAULT_KEYMAP),
    ("vim", include_str!("../../keymaps/vim.toml")),
    ("emacs", include_str!("../../keymaps/emacs.toml")),
];

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
    /// One-line inputs: the query bar and the fuzzy jump.
    Input,
}

impl Mode {
    /// Every mode, in the order help lists them.
    pub const ALL: [Mode; 8] = [
        Mode::Global,
        Mode::List,
        Mode::Detail,
        Mode::Help,
        Mode::Problems,
        Mode::Note,
        Mode::Confirm,
        Mode::Input,
    ];

    /// The table name in keymap files.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Global => "global",
            Mode::List => "list",
            Mode::Detail => "detail",
            Mode::Help => "panels",
            Mode::Problems => "problems",
            Mode::Note => "note",
            Mode::Confirm => "confirm",
            Mode::Input => "input",
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
            if mods.contains(KeyModifiers::CONTROL) {
                // As a terminal reports it (see `from_event`): ctrl-shift-d
                // arrives as ctrl-d.
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c.to_ascii_lowercase())
            } else if mods.contains(KeyModifiers::SHIFT) && c.is_ascii_alphabetic() {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c.to_ascii_uppercase())
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
    /// Whether digits typed before a motion repeat it (`5j`).
    pub counts: bool,
    /// With counts, how long a lone category digit waits for a motion
    /// before it classifies (`count_wait_ms`); zero: digits that are
    /// category keys classify at once and counts start with the others.
    pub count_wait: std::time::Duration,
}

/// How long a lone digit waits for a motion unless the keymap says
/// otherwise (`count_wait_ms`).
pub const COUNT_WAIT_DEFAULT: std::time::Duration = std::time::Duration::from_millis(500);

/// The longest wait a keymap may set.
const COUNT_WAIT_MAX_MS: i64 = 5000;

impl Keymap {
    /// What a single character that no mode binds means: the key of a
    /// taxonomy category classifies ([`Action::Classify`]). Category keys
    /// come from the taxonomy, not from keymap files, so a bound key wins;
    /// only the category picker asks this before its own bindings.
    pub fn category(&self, c: char, taxonomy: &Taxonomy) -> Option<Action> {
        taxonomy.by_key(c).map(|_| Action::Classify(c))
    }

    /// The embedded default keymap.
    pub fn default_keymap() -> Keymap {
        // The embedded file is checked by a unit test; an error here is a build bug.
        Keymap::from_toml(DEFAULT_KEYMAP, "keymaps/default.toml").unwrap_or_default()
    }

    /// A preset by name (`default`, `vim`, `emacs`) or a keymap file by path.
    pub fn load(spec: &str) -> Result<Keymap, KeymapError> {
        if let Some((name, text)) = PRESETS.iter().find(|(n, _)| *n == spec) {
            let mut km = Keymap::from_toml(text, &format!("keymaps/{name}.toml"))?;
            km.name = name.to_string();
            return Ok(km);
        }
        let path = std::path::Path::new(spec);
        if !path.exists() && !spec.contains('/') && !spec.ends_with(".toml") {
            return Err(KeymapError(format!(
                "unknown keymap `{spec}`; the presets are default, vim and emacs, or give a path to a keymap file"
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| KeymapError(format!("{spec}: cannot read the keymap: {e}")))?;
        Keymap::from_toml(&text, spec)
    }

    /// Parse and validate a keymap file.
    pub fn from_toml(text: &str, file: &str) -> Result<Keymap, KeymapError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
            KeymapError(format!(
                "{file}:{line}: not valid TOML: {}",
                e.message().trim()
            ))
        })?;
        let mut km = Keymap {
            name: file.to_string(),
            count_wait: COUNT_WAIT_DEFAULT,
            ..Keymap::default()
        };
        for (key, value) in &table {
            match (key.as_str(), value) {
                ("count_wait_ms", toml::Value::Integer(n))
                    if (0..=COUNT_WAIT_MAX_MS).contains(n) =>
                {
                    km.count_wait = std::time::Duration::from_millis(*n as u64);
                }
                ("count_wait_ms", _) => {
                    return Err(KeymapError(format!(
                        "{file}:{}: `count_wait_ms` must be a whole number of milliseconds from 0 to {COUNT_WAIT_MAX_MS}",
                        find_line(text, None, "count_wait_ms")
                    )));
                }
                ("counts", toml::Value::Boolean(b)) => km.counts = *b,
                ("counts", _) => {
                    return Err(KeymapError(format!(
                        "{file}:{}: `counts` must be true or false",
                        find_line(text, None, "counts")
                    )));
                }
                (_, toml::Value::Table(actions)) => {
                    let mode = Mode::parse(key).ok_or_else(|| {
                        KeymapError(format!(
                            "{file}:{}: unknown mode [{key}]; modes are {}",
                            find_section(text, key),
                            Mode::ALL.map(|m| m.name()).join(", ")
                        ))
                    })?;
                    km.bind_table(mode, actions, text, file, key, false)?;
                }
                _ => {
                    return Err(KeymapError(format!(
                        "{file}:{}: unknown setting `{key}`; a keymap has `counts`, `count_wait_ms` and one table per mode",
                        find_line(text, None, key)
                    )));
                }
            }
        }
        km.check_shadowing(file, text, "")?;
        Ok(km)
    }

    /// Apply `[keys.<mode>]` overrides from a config file: each listed action
    /// gets exactly the given keys in that mode.
    pub fn apply_overrides(
        &mut self,
        keys: &toml::Table,
        text: &str,
        file: &str,
    ) -> Result<(), KeymapError> {
        for (mode_name, actions) in keys {
            let section = format!("keys.{mode_name}");
            let mode = Mode::parse(mode_name).ok_or_else(|| {
                KeymapError(format!(
                    "{file}:{}: unknown mode [keys.{mode_name}]; modes are {}",
                    find_section(text, &section),
                    Mode::ALL.map(|m| m.name()).join(", ")
                ))
            })?;
            let toml::Value::Table(actions) = actions else {
                return Err(KeymapError(format!(
                    "{file}:{}: [keys.{mode_name}] must be a table of action = keys",
                    find_section(text, &section)
                )));
            };
            self.bind_table(mode, actions, text, file, &section, true)?;
        }
        self.check_shadowing(file, text, "keys.")
    }

    fn bind_table(
        &mut self,
        mode: Mode,
        actions: &toml::Table,
        text: &str,
        file: &str,
        section: &str,
        replace: bool,
    ) -> Result<(), KeymapError> {
        for (action_name, keys) in actions {
            let line = find_line(text, Some(section), action_name);
            let action: Action = serde_json::from_value(serde_json::Value::String(action_name.clone()))
                .map_err(|_| {
                    KeymapError(format!(
                        "{file}:{line}: unknown action `{action_name}` in [{section}]; `triage keys` lists the actions"
                    ))
                })?;
            let list: Vec<String> = match keys {
                toml::Value::String(s) => vec![s.clone()],
                toml::Value::Array(items) => items
                    .iter()
                    .map(|i| match i {
                        toml::Value::String(s) => Ok(s.clone()),
                        other => Err(KeymapError(format!(
                            "{file}:{line}: keys for `{action_name}` must be strings, found {}",
                            other.type_str()
                        ))),
                    })
                    .collect::<Result<_, _>>()?,
                other => {
                    return Err(KeymapError(format!(
                        "{file}:{line}: keys for `{action_name}` must be a string or a list of strings, found {}",
                        other.type_str()
                    )));
                }
            };
            if replace {
                self.unbind(mode, action);
            }
            for k in list {
                let seq = parse_seq(&k).ok_or_else(|| {
                    KeymapError(format!(
                        "{file}:{line}: cannot parse key \"{k}\" for `{action_name}` (try \"j\", \"ctrl-r\", \"pgdn\", \"g g\")"
                    ))
                })?;
                self.bind(mode, seq, action).map_err(|other| {
                    KeymapError(format!(
                        "{file}:{line}: key \"{k}\" is bound twice in [{section}]: to `{}` and to `{action_name}`",
                        other.name()
                    ))
                })?;
            }
        }
        Ok(())
    }

    fn unbind(&mut self, mode: Mode, action: Action) {
        if let Some(m) = self.map.get_mut(&mode) {
            m.retain(|_, a| *a != action);
        }
        self.order.retain(|(m, _, a)| !(*m == mode && *a == action));
    }

    /// A list or detail key that is also a global key would make help lie
    /// about one of them: refuse it.
    fn check_shadowing(&self, file: &str, text: &str, prefix: &str) -> Result<(), KeymapError> {
        let Some(global) = self.map.get(&Mode::Global) else {
            return Ok(());
        };
        for mode in [Mode::List, Mode::Detail] {
            let Some(m) = self.map.get(&mode) else {
                continue;
            };
            for (seq, action) in m {
                for (gseq, gaction) in global {
                    let n = seq.len().min(gseq.len());
                    if seq[..n] == gseq[..n] {
                        let at = match find_line(
                            text,
                            Some(&format!("{prefix}{}", mode.name())),
                            &action.name(),
                        ) {
                            0 => String::new(),
                            n => format!(":{n}"),
                        };
                        return Err(KeymapError(format!(
                            "{file}{at}: key \"{}\" is bound in [{}] to `{}` and in [global] to `{}`; give one of them another key",
                            seq_to_string(seq),
                            mode.name(),
                            action.name(),
                            gaction.name()
                        )));
                    }
                }
            }
        }
        Ok(())
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

/// The line of `key = ...` inside `[section]` (or at the top when `None`).
fn find_line(text: &str, section: Option<&str>, key: &str) -> usize {
    let mut current: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.trim().to_string());
            continue;
        }
        let here = match section {
            None => current.is_none(),
            Some(s) => current.as_deref() == Some(s),
        };
        if here {
            let k = line
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"');
            if k == key {
                return i + 1;
            }
        }
    }
    0
}

/// The line of a `[section]` header.
fn find_section(text: &str, section: &str) -> usize {
    text.lines()
        .position(|l| {
            l.trim()
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'))
                .map(str::trim)
                == Some(section)
        })
        .map(|i| i + 1)
        .unwrap_or(0)
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

    /// Found by the `config` fuzz target: `c-shift-d` parsed to ctrl-D,
    /// which no key event can match (a terminal reports ctrl-d), and printed
    /// as "ctrl-D", which parsed back as ctrl-d.
    #[test]
    fn ctrl_with_shift_is_the_ctrl_key_a_terminal_reports() {
        for s in ["c-shift-d", "ctrl-shift-d", "ctrl-D", "shift-ctrl-d"] {
            let chord = KeyChord::parse(s).expect(s);
            assert_eq!(Some(chord), KeyChord::parse("ctrl-d"), "{s}");
            assert_eq!(chord.to_string(), "ctrl-d", "{s}");
        }
        assert_eq!(
            KeyChord::parse("ctrl-shift-d"),
            Some(KeyChord::from_event(&KeyEvent::new(
                KeyCode::Char('D'),
                KeyModifiers::CONTROL | KeyModifiers::SHIFT
            )))
        );
        // Shift alone still makes the capital; alt keeps it.
        assert_eq!(
            KeyChord::parse("shift-d").map(|c| c.code),
            Some(KeyCode::Char('D'))
        );
        assert_eq!(
            KeyChord::parse("alt-shift-d").expect("a chord").to_string(),
            "alt-D"
        );
    }

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
    fn every_preset_parses_and_binds_every_action() {
        use crate::tui::action::Action;
        for (name, _) in PRESETS {
            let km = Keymap::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let all = Action::ALL.to_vec();
            for a in all {
                assert!(
                    km.bindings().iter().any(|(_, _, b)| *b == a),
                    "{name} does not bind {}",
                    a.name()
                );
            }
        }
        assert!(Keymap::load("vim").unwrap().counts);
        assert_eq!(Keymap::load("vim").unwrap().count_wait, COUNT_WAIT_DEFAULT);
        let km = Keymap::from_toml("counts = true\ncount_wait_ms = 0\n", "k.toml").unwrap();
        assert_eq!(km.count_wait, std::time::Duration::ZERO);
        for bad in [
            "count_wait_ms = -1",
            "count_wait_ms = 5001",
            "count_wait_ms = \"fast\"",
        ] {
            let e = Keymap::from_toml(&format!("counts = true\n{bad}\n"), "k.toml").unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("k.toml:2: `count_wait_ms` must be"),
                "{e}"
            );
        }
        assert!(!Keymap::load("default").unwrap().counts);
    }

    #[test]
    fn vim_sequences_and_emacs_chords() {
        let vim = Keymap::load("vim").unwrap();
        let g = KeyChord::plain(KeyCode::Char('g'));
        assert_eq!(vim.lookup(Mode::List, &[g]), Lookup::Pending);
        assert_eq!(
            vim.lookup(Mode::List, &[g, g]),
            Lookup::Action(Action::FirstPair)
        );
        let bracket = KeyChord::plain(KeyCode::Char(']'));
        let c = KeyChord::plain(KeyCode::Char('c'));
        assert_eq!(
            vim.lookup(Mode::Global, &[bracket, c]),
            Lookup::Action(Action::NextChange)
        );
        let emacs = Keymap::load("emacs").unwrap();
        let ctrl = |ch| KeyChord {
            code: KeyCode::Char(ch),
            mods: KeyModifiers::CONTROL,
        };
        assert_eq!(
            emacs.lookup(Mode::List, &[ctrl('n')]),
            Lookup::Action(Action::NextPair)
        );
        assert_eq!(
            emacs.lookup(Mode::Global, &[ctrl('x'), ctrl('c')]),
            Lookup::Action(Action::Quit)
        );
        assert_eq!(
            emacs.lookup(Mode::Note, &[ctrl('x'), ctrl('s')]),
            Lookup::Action(Action::NoteSave)
        );
    }

    #[test]
    fn overrides_replace_keys_and_report_lines() {
        let mut km = Keymap::default_keymap();
        let text = "reviewer = \"a\"\n[keys.list]\nnext_pair = [\"n\", \"down\"]\n";
        let table: toml::Table = toml::from_str(text).unwrap();
        let keys = table["keys"].as_table().unwrap().clone();
        // `n` is the global note key, so a list binding would shadow it.
        let e = km.apply_overrides(&keys, text, "config.toml").unwrap_err();
        assert_eq!(
            e.0,
            "config.toml:3: key \"n\" is bound in [list] to `next_pair` and in [global] to `edit_note`; give one of them another key"
        );
        let mut km = Keymap::default_keymap();
        let text = "[keys.list]\nnext_pair = \"ctrl-j\"\n\n[keys.list2]\n";
        let table: toml::Table = toml::from_str(text).unwrap();
        let keys = table["keys"].as_table().unwrap().clone();
        let e = km.apply_overrides(&keys, text, "config.toml").unwrap_err();
        assert_eq!(
            e.0,
            "config.toml:4: unknown mode [keys.list2]; modes are global, list, detail, panels, problems, note, confirm, input"
        );
        let mut km = Keymap::default_keymap();
        let text = "[keys.list]\nnext_pair = \"ctrl-j\"\n";
        let table: toml::Table = toml::from_str(text).unwrap();
        km.apply_overrides(table["keys"].as_table().unwrap(), text, "config.toml")
            .unwrap();
        let j = KeyChord::plain(KeyCode::Char('j'));
        let cj = KeyChord {
            code: KeyCode::Char('j'),
            mods: KeyModifiers::CONTROL,
        };
        assert_eq!(km.lookup(Mode::List, &[j]), Lookup::Unbound);
        assert_eq!(
            km.lookup(Mode::List, &[cj]),
            Lookup::Action(Action::NextPair)
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
        assert!(e.0.starts_with("k.toml:1: unknown mode [lists]"), "{e}");
    }
}
