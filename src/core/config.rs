//! The user's config file: reviewer name, taxonomy and theme.
//!
//! `config.toml` lives in the platform config directory (`triage config
//! path` prints it) or wherever `--config` points. Unknown keys, broken TOML
//! and a bad taxonomy are refused with the file and line — there is never a
//! silent fallback to defaults when a file exists but cannot be used.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::taxonomy::{Category, Taxonomy, TaxonomyError};

/// Which colours to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ThemeName {
    #[default]
    Dark,
    Light,
    None,
}

/// How configured categories combine with the default taxonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TaxonomyMode {
    /// Add to (or, by id, redefine) the defaults.
    #[default]
    Extend,
    /// Use only the configured categories.
    Replace,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TaxonomyFile {
    #[serde(default)]
    mode: TaxonomyMode,
    #[serde(default)]
    categories: Vec<CategoryFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CategoryFile {
    id: String,
    name: Option<String>,
    key: Option<String>,
    description: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    reviewer: Option<String>,
    theme: Option<ThemeName>,
    keymap: Option<String>,
    keys: Option<toml::Table>,
    mouse: Option<bool>,
    max_line_bytes: Option<u64>,
    taxonomy: Option<TaxonomyFile>,
}

/// The settings in effect.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub reviewer: Option<String>,
    pub theme: ThemeName,
    pub taxonomy: Taxonomy,
    /// A keymap preset name or a path to a keymap file.
    pub keymap: Option<String>,
    /// `[keys.<mode>]` overrides, checked when the keymap is built.
    pub keys: Option<toml::Table>,
    /// Whether the mouse is used (default true).
    pub mouse: bool,
    /// Lines longer than this are reported instead of parsed (`None`: the
    /// built-in limit; `--max-line-bytes` wins over both).
    pub max_line_bytes: Option<usize>,
    /// The file the settings came from, if one was read.
    pub source: Option<PathBuf>,
    /// The file's text, so key overrides can name their lines.
    pub text: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            reviewer: None,
            theme: ThemeName::Dark,
            taxonomy: Taxonomy::default(),
            keymap: None,
            keys: None,
            mouse: true,
            max_line_bytes: None,
            source: None,
            text: String::new(),
        }
    }
}

/// Where the config file is looked for when `--config` is not given.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "triage").map(|d| d.config_dir().join("config.toml"))
}

/// Load the config: an explicit path must exist; the default path may not.
pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match default_path() {
            Some(p) if p.exists() => p,
            _ => return Ok(Config::default()),
        },
    };
    let shown = super::text::inert_line(&path.display().to_string());
    let text = std::fs::read_to_string(&path).map_err(|error| ConfigError::Read {
        file: shown.clone(),
        error,
    })?;
    parse(&text, &shown).map(|mut c| {
        c.source = Some(path);
        c
    })
}

/// The commented example `triage config init` writes: every setting, each
/// commented out, so the file changes nothing until a line is uncommented.
pub const EXAMPLE: &str = r#"# triage's config file. Every setting is commented out; uncomment a line
# to use it. An unknown setting is refused with its line.

# The name recorded with each decision (else --reviewer, $USER, $LOGNAME,
# the account name, then git config user.name).
# reviewer = "ana"

# "dark", "light" or "none"; NO_COLOR always means none.
# theme = "dark"

# "default", "vim", "emacs" or the path to a keymap file.
# keymap = "vim"

# The mouse scrolls and clicks (true) or is left to the terminal (false).
# mouse = true

# Lines longer than this many bytes are reported, not parsed.
# max_line_bytes = 16777216

# Key overrides per mode (triage keys lists the actions):
# [keys.list]
# next_pair = ["j", "down", "ctrl-j"]

# Categories of your own, beside the built-in ones ("extend") or instead
# of them ("replace"):
# [taxonomy]
# mode = "extend"
# [[taxonomy.categories]]
# id = "prompt-leak"
# name = "Prompt leakage"
# key = "8"
# description = "the variant leaked instructions into the state"
"#;

/// Parse config text; errors name `file` and the line.
pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
    let raw: ConfigFile = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(0);
        // One line per error: TOML's own messages may span several.
        let message = e.message().trim().replace('\n', "; ");
        ConfigError::Toml {
            file: file.to_string(),
            line,
            message,
        }
    })?;
    let mut cfg = Config {
        reviewer: raw.reviewer.filter(|r| !r.trim().is_empty()),
        theme: raw.theme.unwrap_or_default(),
        keymap: raw.keymap,
        keys: raw.keys,
        mouse: raw.mouse.unwrap_or(true),
        max_line_bytes: match raw.max_line_bytes {
            None => None,
            Some(n) if n >= 1 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(n) => {
                return Err(ConfigError::LineLimit {
                    file: file.to_string(),
                    line: top_level_line(text, "max_line_bytes"),
                    value: n,
                });
            }
        },
        text: text.to_string(),
        ..Config::default()
    };
    if let Some(t) = raw.taxonomy {
        let mut cats = match t.mode {
            TaxonomyMode::Extend => Taxonomy::default().categories,
            TaxonomyMode::Replace => Vec::new(),
        };
        for c in t.categories {
            let key = match c.key.as_deref() {
                None | Some("") => None,
                Some(k) if k.chars().count() == 1 => k.chars().next(),
                Some(k) => {
                    return Err(ConfigError::CategoryKey {
                        file: file.to_string(),
                        line: category_line(text, &c.id),
                        id: c.id,
                        key: k.to_string(),
                    });
                }
            };
            match cats.iter_mut().find(|x| x.id == c.id) {
                Some(existing) => {
                    if let Some(n) = c.name {
                        existing.name = n;
                    }
                    if key.is_some() {
                        existing.key = key;
                    }
                    if let Some(d) = c.description {
                        existing.description = d;
                    }
                }
                None => cats.push(Category {
                    name: c.name.unwrap_or_else(|| c.id.clone()),
                    id: c.id,
                    key,
                    description: c.description.unwrap_or_default(),
                }),
            }
        }
        cfg.taxonomy = Taxonomy::new(cats).map_err(|error| ConfigError::Taxonomy {
            file: file.to_string(),
            error,
        })?;
    }
    Ok(cfg)
}

/// Why [`load`] or [`parse`] refused a config file. Each names the file
/// (as shown to the user) and, where it can, the line.
#[derive(Debug)]
pub enum ConfigError {
    /// The file could not be read.
    Read { file: String, error: io::Error },
    /// Broken TOML, an unknown key or a value of the wrong type; `message`
    /// is TOML's own, on one line.
    Toml {
        file: String,
        line: usize,
        message: String,
    },
    /// `max_line_bytes` is below 1.
    LineLimit {
        file: String,
        line: usize,
        value: u64,
    },
    /// A category's key is longer than one character.
    CategoryKey {
        file: String,
        line: usize,
        id: String,
        key: String,
    },
    /// The categories do not make a taxonomy.
    Taxonomy { file: String, error: TaxonomyError },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { file, error } => {
                write!(f, "triage: cannot read the config file {file}: {error}")
            }
            ConfigError::Toml {
                file,
                line,
                message,
            } => write!(f, "triage: {file}:{line}: {message}"),
            ConfigError::LineLimit { file, line, value } => write!(
                f,
                "triage: {file}:{line}: max_line_bytes = {value}; the line limit is at least 1 byte"
            ),
            ConfigError::CategoryKey {
                file,
                line,
                id,
                key,
            } => write!(
                f,
                "triage: {file}:{line}: category `{id}` has key \"{key}\"; a category key is one character"
            ),
            ConfigError::Taxonomy { file, error } => {
                write!(f, "triage: {file}: taxonomy: {error}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// The line of a top-level `key = ...` (0 when absent).
pub fn top_level_line(text: &str, key: &str) -> usize {
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            break;
        }
        if t.split('=').next().map(str::trim) == Some(key) {
            return i + 1;
        }
    }
    0
}

/// The line of the `key = ...` inside the category with this id (0 when absent).
pub fn category_line(text: &str, id: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines.iter().position(|l| {
        let t = l.trim();
        t.starts_with("id") && t.contains(&format!("\"{id}\""))
    }) else {
        return 0;
    };
    for (i, l) in lines.iter().enumerate().skip(start.saturating_sub(4)) {
        let t = l.trim();
        if i > start && t.starts_with('[') {
            break;
        }
        if t.split('=').next().map(str::trim) == Some("key") && i + 8 > start {
            return i + 1;
        }
    }
    start + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_is_default() {
        assert_eq!(parse("", "c.toml").unwrap(), Config::default());
        let c = parse(
            "keymap = \"vim\"\nmouse = false\n[keys.list]\nnext_pair = \"n\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.keymap.as_deref(), Some("vim"));
        assert!(!c.mouse);
        assert!(c.keys.is_some());
    }

    #[test]
    fn extend_and_replace() {
        let c = parse(
            "reviewer = \"ana\"\ntheme = \"light\"\n[taxonomy]\n[[taxonomy.categories]]\nid = \"prompt-leak\"\nname = \"Prompt leakage\"\nkey = \"8\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.reviewer.as_deref(), Some("ana"));
        assert_eq!(c.theme, ThemeName::Light);
        assert_eq!(c.taxonomy.categories.len(), 8);
        assert_eq!(c.taxonomy.by_key('8').unwrap().id, "prompt-leak");
        let c = parse(
            "[taxonomy]\nmode = \"replace\"\n[[taxonomy.categories]]\nid = \"flaky\"\nkey = \"f\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.taxonomy.categories.len(), 1);
        assert_eq!(c.taxonomy.categories[0].name, "flaky");
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("reviewer = \"a\"\ncolour = \"red\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("triage: c.toml:2: unknown field `colour`"),
            "{e}"
        );
        let e = parse(
            "[taxonomy]\n[[taxonomy.categories]]\nid = \"x\"\nkey = \"1\"\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("key `1` is given to both `ambiguous-contract` and `x`"),
            "{e}"
        );
        let e = parse("theme = \"neon\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("triage: c.toml:1:"), "{e}");
        let e = parse("[taxonomy\n", "c.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("triage: c.toml:1:") && !e.contains('\n'),
            "{e}"
        );
    }

    #[test]
    fn errors_read_as_before() {
        let msg = |text: &str| parse(text, "c.toml").unwrap_err().to_string();
        assert_eq!(
            msg("reviewer = \"a\"\nmax_line_bytes = 0\n"),
            "triage: c.toml:2: max_line_bytes = 0; the line limit is at least 1 byte"
        );
        assert_eq!(
            msg("[taxonomy]\n[[taxonomy.categories]]\nid = \"x\"\nkey = \"ab\"\n"),
            "triage: c.toml:4: category `x` has key \"ab\"; a category key is one character"
        );
        assert_eq!(
            msg("[taxonomy]\n[[taxonomy.categories]]\nid = \"x\"\nkey = \"1\"\n"),
            "triage: c.toml: taxonomy: key `1` is given to both `ambiguous-contract` and `x`"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("none.toml");
        let e = load(Some(&missing)).unwrap_err().to_string();
        let io = std::fs::read_to_string(&missing).unwrap_err();
        assert_eq!(
            e,
            format!(
                "triage: cannot read the config file {}: {io}",
                missing.display()
            )
        );
    }

    #[test]
    fn the_example_parses_commented_and_uncommented() {
        let c = parse(EXAMPLE, "config.toml").expect("the example as written");
        let empty = parse("", "config.toml").unwrap();
        assert_eq!(
            (
                &c.reviewer,
                c.theme,
                &c.taxonomy,
                &c.keymap,
                &c.keys,
                c.mouse,
                c.max_line_bytes
            ),
            (
                &empty.reviewer,
                empty.theme,
                &empty.taxonomy,
                &empty.keymap,
                &empty.keys,
                empty.mouse,
                empty.max_line_bytes
            )
        );
        let uncommented: String = EXAMPLE
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if rest.contains(" = ") || rest.starts_with('[') => rest,
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let c = parse(&uncommented, "config.toml").expect("every setting uncommented");
        assert_eq!(c.reviewer.as_deref(), Some("ana"));
        assert!(c.taxonomy.by_id("prompt-leak").is_some());
    }
}
