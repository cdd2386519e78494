//! `triage import`: decisions from a spreadsheet, another tool or a judge,
//! read into a run's journal as one reviewer's.
//!
//! The file is CSV (a header row naming `case_id`, `variant_id`, `category`,
//! and optionally `repetition` and `note`, in any order, other columns
//! ignored) or JSON Lines (one object per line with those members). Each row
//! must name exactly one pair of the run and a category of the taxonomy;
//! every row that does not is a [`Problem`] with the file's line, and the
//! caller imports nothing unless it accepts a partial import.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use super::annotations::{AnnotationSource, Change, Name};
use super::index::RunIndex;
use super::taxonomy::Taxonomy;
use super::text::inert_line;

/// How the file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Csv,
    Jsonl,
}

impl FileFormat {
    /// From the file's extension (`.csv`, `.jsonl`, `.ndjson`, `.json`),
    /// else from its first non-blank byte (`{` is JSON Lines).
    pub fn detect(path: &Path, bytes: &[u8]) -> FileFormat {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("csv") => FileFormat::Csv,
            Some("jsonl" | "ndjson" | "json") => FileFormat::Jsonl,
            _ => match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{') => FileFormat::Jsonl,
                _ => FileFormat::Csv,
            },
        }
    }
}

/// One decision as the file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// 1-based line of the file where the row starts.
    pub line: u64,
    pub case_id: String,
    pub variant_id: String,
    pub repetition: Option<u32>,
    pub category: String,
    pub note: Option<String>,
}

/// A row (or the file) that cannot be imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: u64,
    pub kind: ProblemKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// The CSV header lacks a required column.
    MissingColumn(&'static str),
    /// The row cannot be read (bad CSV, not a JSON object, a field of the wrong type).
    Unreadable(String),
    /// A required field is empty.
    Empty(&'static str),
    /// The repetition is not a whole number from 0.
    BadRepetition(String),
    /// The category is not one of the taxonomy's ids.
    UnknownCategory { given: String, valid: Vec<String> },
    /// No pair of the run has these ids (and repetition).
    NoPair {
        case_id: String,
        variant_id: String,
        repetition: Option<u32>,
    },
    /// Without a repetition, the ids name several pairs (repeated trials).
    Ambiguous {
        case_id: String,
        variant_id: String,
        count: usize,
    },
    /// An earlier row of the file already decides this pair.
    Duplicate { first: u64 },
    /// The pair's line cannot be read again to know its record key.
    NoKey(String),
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pair = |f: &mut fmt::Formatter<'_>, c: &str, v: &str, r: Option<u32>| {
            write!(f, "{} / {}", inert_line(c), inert_line(v))?;
            match r {
                Some(r) => write!(f, " repetition {r}"),
                None => Ok(()),
            }
        };
        match self {
            ProblemKind::MissingColumn(c) => write!(
                f,
                "the header has no `{c}` column (needed: case_id, variant_id, category; optional: repetition, note)"
            ),
            ProblemKind::Unreadable(why) => write!(f, "cannot read the row: {}", inert_line(why)),
            ProblemKind::Empty(field) => write!(f, "`{field}` is empty"),
            ProblemKind::BadRepetition(r) => write!(
                f,
                "repetition `{}` is not a whole number from 0",
                inert_line(r)
            ),
            ProblemKind::UnknownCategory { given, valid } => write!(
                f,
                "`{}` is not a category id; the valid ids are: {}",
                inert_line(given),
                valid.join(", ")
            ),
            ProblemKind::NoPair {
                case_id,
                variant_id,
                repetition,
            } => {
                write!(f, "no pair of the run is ")?;
                pair(f, case_id, variant_id, *repetition)
            }
            ProblemKind::Ambiguous {
                case_id,
                variant_id,
                count,
            } => {
                pair(f, case_id, variant_id, None)?;
                write!(
                    f,
                    " is {count} repeated trials in the run; give a repetition column to say which"
                )
            }
            ProblemKind::Duplicate { first } => {
                write!(f, "line {first} already decides this pair")
            }
            ProblemKind::NoKey(why) => write!(f, "{}", inert_line(why)),
        }
    }
}

/// The columns (or members) a decision is read from.
#[derive(serde::Deserialize)]
struct Record {
    #[serde(default)]
    case_id: Option<serde_json::Value>,
    #[serde(default)]
    variant_id: Option<serde_json::Value>,
    #[serde(default)]
    repetition: Option<serde_json::Value>,
    #[serde(default)]
    category: Option<serde_json::Value>,
    #[serde(default)]
    note: Option<serde_json::Value>,
}

/// A field as text: strings as they are, numbers as written, null as none.
fn text(v: Option<serde_json::Value>) -> Result<Option<String>, String> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
        Some(serde_json::Value::Bool(b)) => Ok(Some(b.to_string())),
        Some(other) => Err(format!("a field is {}, not text", kind_of(&other))),
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
        _ => "a value",
    }
}

/// Check one row's fields; the row, or why not.
fn row_of(line: u64, rec: Record) -> Result<Row, ProblemKind> {
    let field = |v: Option<serde_json::Value>| text(v).map_err(ProblemKind::Unreadable);
    let case_id = field(rec.case_id)?.unwrap_or_default();
    let variant_id = field(rec.variant_id)?.unwrap_or_default();
    let category = field(rec.category)?.unwrap_or_default();
    let repetition = field(rec.repetition)?;
    let note = field(rec.note)?.filter(|n| !n.is_empty());
    if case_id.is_empty() {
        return Err(ProblemKind::Empty("case_id"));
    }
    if variant_id.is_empty() {
        return Err(ProblemKind::Empty("variant_id"));
    }
    let category = category.trim().to_string();
    if category.is_empty() {
        return Err(ProblemKind::Empty("category"));
    }
    let repetition = match repetition.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(r) => match r.parse::<u32>() {
            Ok(n) if n < u32::MAX => Some(n),
            _ => return Err(ProblemKind::BadRepetition(r.to_string())),
        },
    };
    Ok(Row {
        line,
        case_id,
        variant_id,
        repetition,
        category,
        note,
    })
}

/// Read every decision of the file, with the problems of the rows that cannot be read.
pub fn read(bytes: &[u8], format: FileFormat) -> (Vec<Row>, Vec<Problem>) {
    match format {
        FileFormat::Csv => read_csv(bytes),
        FileFormat::Jsonl => read_jsonl(bytes),
    }
}

fn read_csv(bytes: &[u8]) -> (Vec<Row>, Vec<Problem>) {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::Headers)
        .from_reader(bytes);
    let headers = match reader.headers() {
        Ok(h) => h.clone(),
        Err(e) => {
            problems.push(Problem {
                line: 1,
                kind: ProblemKind::Unreadable(e.to_string()),
            });
            return (rows, problems);
        }
    };
    let column = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let mut missing = false;
    for need in ["case_id", "variant_id", "category"] {
        if column(need).is_none() {
            problems.push(Problem {
                line: 1,
                kind: ProblemKind::MissingColumn(need),
            });
            missing = true;
        }
    }
    if missing {
        return (rows, problems);
    }
    let at = |name: &str, rec: &csv::StringRecord| {
        column(name)
            .and_then(|i| rec.get(i))
            .map(|s| serde_json::Value::String(s.to_string()))
    };
    let mut record = csv::StringRecord::new();
    loop {
        let line = reader.position().line();
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                let line = record.position().map_or(line, |p| p.line());
                if record.iter().all(|f| f.trim().is_empty()) {
                    continue;
                }
                let rec = Record {
                    case_id: at("case_id", &record),
                    variant_id: at("variant_id", &record),
                    repetition: at("repetition", &record),
                    category: at("category", &record),
                    note: at("note", &record),
                };
                match row_of(line, rec) {
                    Ok(r) => rows.push(r),
                    Err(kind) => problems.push(Problem { line, kind }),
                }
            }
            Err(e) => {
                let line = e.position().map_or(line, |p| p.line());
                problems.push(Problem {
                    line,
                    kind: ProblemKind::Unreadable(e.to_string()),
                });
                // A CSV error may leave the reader inside a quoted field; stop there.
                if !matches!(e.kind(), csv::ErrorKind::Utf8 { .. }) {
                    break;
                }
            }
        }
    }
    (rows, problems)
}

fn read_jsonl(bytes: &[u8]) -> (Vec<Row>, Vec<Problem>) {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = i as u64 + 1;
        let body = raw.trim_ascii();
        if body.is_empty() {
            continue;
        }
        let rec = match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(v @ serde_json::Value::Object(_)) => {
                serde_json::from_value::<Record>(v).map_err(|e| e.to_string())
            }
            Ok(other) => Err(format!("{} is not a JSON object", kind_of(&other))),
            Err(e) => Err(format!("not JSON ({e})")),
        };
        match rec
            .map_err(ProblemKind::Unreadable)
            .and_then(|r| row_of(line, r))
        {
            Ok(r) => rows.push(r),
            Err(kind) => problems.push(Problem { line, kind }),
        }
    }
    (rows, problems)
}

/// The decisions of the rows that name a pair and a category, as changes
/// to the run's journal, and the problems of those that do not.
pub fn plan(
    index: &mut RunIndex,
    taxonomy: &Taxonomy,
    rows: &[Row],
) -> (Vec<Change>, Vec<Problem>) {
    let mut problems = Vec::new();
    // (case, variant) → the run's rows with those ids.
    let mut by_ids: HashMap<(&str, &str), Vec<u32>> = HashMap::new();
    for (i, r) in index.rows.iter().enumerate() {
        by_ids
            .entry((index.str(r.case), index.str(r.variant)))
            .or_default()
            .push(i as u32);
    }
    let valid: Vec<String> = taxonomy.categories.iter().map(|c| c.id.clone()).collect();
    let mut matched: Vec<(&Row, u32)> = Vec::new();
    let mut first_of: HashMap<u32, u64> = HashMap::new();
    for row in rows {
        if taxonomy.by_id(&row.category).is_none() {
            problems.push(Problem {
                line: row.line,
                kind: ProblemKind::UnknownCategory {
                    given: row.category.clone(),
                    valid: valid.clone(),
                },
            });
            continue;
        }
        let candidates = by_ids
            .get(&(row.case_id.as_str(), row.variant_id.as_str()))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let hits: Vec<u32> = candidates
            .iter()
            .copied()
            .filter(|&i| match row.repetition {
                Some(rep) => index.repetition(i as usize) == Some(rep),
                None => true,
            })
            .collect();
        let target = match hits.as_slice() {
            [] => {
                problems.push(Problem {
                    line: row.line,
                    kind: ProblemKind::NoPair {
                        case_id: row.case_id.clone(),
                        variant_id: row.variant_id.clone(),
                        repetition: row.repetition,
                    },
                });
                continue;
            }
            [one] => *one,
            many => {
                problems.push(Problem {
                    line: row.line,
                    kind: ProblemKind::Ambiguous {
                        case_id: row.case_id.clone(),
                        variant_id: row.variant_id.clone(),
                        count: many.len(),
                    },
                });
                continue;
            }
        };
        if let Some(&first) = first_of.get(&target) {
            problems.push(Problem {
                line: row.line,
                kind: ProblemKind::Duplicate { first },
            });
            continue;
        }
        first_of.insert(target, row.line);
        matched.push((row, target));
    }
    let targets: Vec<u32> = matched.iter().map(|(_, t)| *t).collect();
    index.ensure_keys(&targets);
    let mut changes = Vec::new();
    for (row, target) in matched {
        let pair = index.rows[target as usize];
        match index.key(&pair) {
            Some(key) => changes.push(Change {
                key,
                case_id: row.case_id.as_str().into(),
                variant_id: row.variant_id.as_str().into(),
                category: Some(Name::new(&row.category)),
                note: row.note.clone(),
                source: AnnotationSource::Manual,
            }),
            None => problems.push(Problem {
                line: row.line,
                kind: ProblemKind::NoKey(format!(
                    "line {} of the run cannot be read again; the run changed on disk — import again",
                    index.loc(target as usize).line
                )),
            }),
        }
    }
    problems.sort_by_key(|p| p.line);
    (changes, problems)
}

#[cfg(test)]
mod tests;
