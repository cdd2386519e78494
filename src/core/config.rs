//! The user's config file: reviewer name, taxonomy and theme.
//!
//! `config.toml` lives in the platform config directory (`triage config
//! path` prints it) or wherever `--config` points. Unknown keys, broken TOML
//! and a bad taxonomy are refused with the file and line — there is never a
//! silent fallback to defaults when a file exists but cannot be used.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::taxonomy::{Category, Taxonomy};

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
pub fn load(explicit: Option<&Path>) -> Result<Config, String> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match default_path() {
            Some(p) if p.exists() => p,
            _ => return Ok(Config::default()),
        },
    };
    let shown = super::text::inert_line(&path.display().to_string());
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("triage: cannot read the config file {shown}: {e}"))?;
    parse(&text, &shown).map(|mut c| {
        c.source = Some(path);
        c
    })
}

/// Parse config text; errors name `file` and the line.
pub fn parse(text: &str, file: &str) -> Result<Config, String> {
    let raw: ConfigFile = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(0);
        // One line per error: TOML's own messages may span several.
        let msg = e.message().trim().replace('\n', "; ");
        format!("triage: {file}:{line}: {msg}")
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
                return Err(format!(
                    "triage: {file}:{}: max_line_bytes = {n}; the line limit is at least 1 byte",
                    top_level_line(text, "max_line_bytes")
                ));
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
                    return Err(format!(
                        "triage: {file}:{}: category `{}` has key \"{k}\"; a category key is one character",
                        category_line(text, &c.id),
                        c.id
                    ));
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
        cfg.taxonomy = Taxonomy::new(cats).map_err(|e| format!("triage: {file}: taxonomy: {e}"))?;
    }
    Ok(cfg)
}

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
        let e = parse("reviewer = \"a\"\ncolour = \"red\"\n", "c.toml").unwrap_err();
        assert!(
            e.starts_with("triage: c.toml:2: unknown field `colour`"),
            "{e}"
        );
        let e = parse(
            "[taxonomy]\n[[taxonomy.categories]]\nid = \"x\"\nkey = \"1\"\n",
            "c.toml",
        )
        .unwrap_err();
        assert!(
            e.contains("key `1` is given to both `ambiguous-contract` and `x`"),
            "{e}"
        );
        let e = parse("theme = \"neon\"\n", "c.toml").unwrap_err();
        assert!(e.starts_with("triage: c.toml:1:"), "{e}");
        let e = parse("[taxonomy\n", "c.toml").unwrap_err();
        assert!(
            e.starts_with("triage: c.toml:1:") && !e.contains('\n'),
            "{e}"
        );
    }
}
