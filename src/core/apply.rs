//! `triage apply`: a copy of a run with the triage written into it.
//!
//! Every annotated record gains a `"triage"` object (category, note,
//! reviewer, time, the suggested category, and whether the category was an
//! accepted suggestion); every other line is copied byte for byte. The run
//! file itself is never opened for writing, and OUT is written through a
//! temporary file and renamed, so a crash never leaves half a copy.
//!
//! Another tool's result file (detected, or named with `--from`) is
//! written out as the native records the viewer annotated, each with its
//! `origin`.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::annotations::{
    AnnotationSource, AnnotationStore, JournalPathError, StoreOpenError, journal_specs,
};
use super::derive::derive;
use super::formats::{self, ConvertError, Format};
use super::key::record_key;
use super::record::map_record;
use super::suggest::suggest;

/// Write `out` as a copy of `run` with annotations applied (`None`: to
/// standard output); returns a summary line.
pub fn apply(
    run: &Path,
    annotations: Option<&Path>,
    out: Option<&Path>,
    force: bool,
    format: Option<Format>,
    convert_opts: &formats::ConvertOptions,
) -> Result<String, ApplyError> {
    let shown = super::text::inert_line(&run.display().to_string());
    let open = |error| ApplyError::Open {
        run: shown.clone(),
        error,
    };
    let read = |error| ApplyError::Read {
        run: shown.clone(),
        error,
    };
    let convert = |error| ApplyError::Convert {
        run: shown.clone(),
        error,
    };
    let meta = std::fs::metadata(run).map_err(open)?;
    if meta.is_dir() {
        return Err(ApplyError::IsDirectory { run: shown.clone() });
    }
    if let Some(out) = out {
        if let (Ok(a), Ok(b)) = (std::fs::canonicalize(run), std::fs::canonicalize(out))
            && a == b
        {
            return Err(ApplyError::OutIsRun);
        }
        if out.exists() && !force {
            return Err(ApplyError::OutExists {
                out: super::text::inert_line(&out.display().to_string()),
            });
        }
    }
    // The journal the viewer writes (and, in a read-only folder, the one
    // committed beside the run too); a run nobody has annotated yet is
    // copied unchanged.
    let (mut specs, _) = journal_specs(&[run.to_string_lossy().to_string()], annotations)
        .map_err(ApplyError::JournalPath)?;
    for s in &mut specs {
        s.writable = false;
    }
    let store = AnnotationStore::open_journals(&specs, "").map_err(ApplyError::Journal)?;

    let mut input = File::open(run).map_err(open)?;
    let mut head = Vec::new();
    (&input)
        .take(formats::DETECT_HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(read)?;
    let format = match format {
        Some(f) => f,
        None => formats::detect(&head).format.unwrap_or(Format::Native),
    };
    // Another tool's results (or native records in one JSON document): the
    // records the viewer annotated are the converted ones.
    let _converted = if !formats::must_convert(format, &head) {
        input.seek(SeekFrom::Start(0)).map_err(read)?;
        None
    } else {
        let mut tmp = tempfile::NamedTempFile::new().map_err(convert)?;
        {
            let mut w = BufWriter::new(tmp.as_file_mut());
            formats::convert_with(run, format, convert_opts, &mut w).map_err(ApplyError::Format)?;
            w.flush().map_err(convert)?;
        }
        input = tmp.reopen().map_err(convert)?;
        Some(tmp)
    };
    let Some(out) = out else {
        let stdout = std::io::stdout();
        let mut w = BufWriter::new(stdout.lock());
        let (applied, total) = copy_applied(input, store.as_ref(), &shown, &mut w)?;
        w.flush().map_err(ApplyError::Write)?;
        return Ok(summary("standard output", format, applied, total));
    };
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(|error| ApplyError::WriteIn {
        dir: dir.to_path_buf(),
        error,
    })?;
    let mut w = BufWriter::new(tmp.as_file());
    let (applied, total) = copy_applied(input, store.as_ref(), &shown, &mut w)?;
    w.flush().map_err(ApplyError::Write)?;
    drop(w);
    // The copy gets the run's permissions, not the temp file's private 0600.
    tmp.as_file()
        .set_permissions(meta.permissions())
        .map_err(ApplyError::Write)?;
    tmp.as_file().sync_all().map_err(ApplyError::Write)?;
    tmp.persist(out).map_err(|e| ApplyError::Persist {
        out: out.to_path_buf(),
        error: e.error,
    })?;
    Ok(summary(&out.display().to_string(), format, applied, total))
}

/// The summary line of a copy written to `to`.
fn summary(to: &str, format: Format, applied: usize, total: usize) -> String {
    let from = if format == Format::Native {
        String::new()
    } else {
        format!(" (native records converted from {format})")
    };
    format!("wrote {to}{from}: {applied} of {total} lines carry a triage object")
}

/// Copy the run's lines from `input` to `w`, each annotated record with
/// its `triage` object; how many lines carry one, of how many.
fn copy_applied(
    input: File,
    store: Option<&AnnotationStore>,
    shown: &str,
    w: &mut impl Write,
) -> Result<(usize, usize), ApplyError> {
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    let (mut total, mut applied) = (0usize, 0usize);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|error| ApplyError::Reading {
                run: shown.to_string(),
                error,
            })?;
        if n == 0 {
            break;
        }
        total += 1;
        let (body, ending): (&[u8], &[u8]) = if line.ends_with(b"\r\n") {
            (&line[..line.len() - 2], b"\r\n")
        } else if line.ends_with(b"\n") {
            (&line[..line.len() - 1], b"\n")
        } else {
            (&line[..], b"")
        };
        let trimmed = if total == 1 {
            body.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(body)
        } else {
            body
        };
        let annotated = serde_json::from_slice::<Value>(trimmed).ok().and_then(|v| {
            let key = record_key(&v);
            let store = store?;
            let ann = store.get(&key)?.clone();
            // With several reviewers: how they stand, and who said what.
            let several = store.decisions(&key).len() > 1 || store.resolution(&key).is_some();
            let reviewers = several.then(|| {
                json!({
                    "agreement": store.agreement(&key).map(|a| a.as_str()),
                    "decisions": store.decisions(&key).iter().map(|d| json!({
                        "reviewer": d.reviewer,
                        "category": d.category,
                        "note": d.note,
                        "at": d.at,
                    })).collect::<Vec<_>>(),
                })
            });
            Some((v, ann, reviewers))
        });
        match annotated {
            Some((mut v, ann, reviewers)) => {
                let suggested = map_record(v.clone())
                    .ok()
                    .and_then(|r| suggest(&r, &derive(&r)).map(|s| s.category));
                if let Value::Object(o) = &mut v {
                    o.insert(
                        "triage".into(),
                        json!({
                            "category": ann.category,
                            "note": ann.note,
                            "reviewer": ann.reviewer,
                            "at": ann.at,
                            "suggested": suggested,
                            "accepted_suggestion": ann.source == AnnotationSource::Suggestion,
                        }),
                    );
                    if let (Some(Value::Object(t)), Some(Value::Object(r))) =
                        (o.get_mut("triage"), reviewers)
                    {
                        t.extend(r);
                    }
                }
                serde_json::to_writer(&mut *w, &v).map_err(ApplyError::Serialize)?;
                w.write_all(ending).map_err(ApplyError::Write)?;
                applied += 1;
            }
            None => w.write_all(&line).map_err(ApplyError::Write)?,
        }
    }
    Ok((applied, total))
}

/// Why [`apply`] wrote no copy. `run` is the run's path as shown to the user.
#[derive(Debug)]
pub enum ApplyError {
    /// The run cannot be opened.
    Open { run: String, error: std::io::Error },
    /// The run is a directory.
    IsDirectory { run: String },
    /// OUT is the run itself.
    OutIsRun,
    /// OUT exists and `--force` was not given; `out` as shown.
    OutExists { out: String },
    /// There is no place for the annotation journal.
    JournalPath(JournalPathError),
    /// The annotation journal cannot be read.
    Journal(StoreOpenError),
    /// The start of the run cannot be read (to detect its format).
    Read { run: String, error: std::io::Error },
    /// The run, in another tool's format, cannot be converted: a temporary file failed.
    Convert { run: String, error: std::io::Error },
    /// The run, in another tool's format, cannot be converted.
    Format(ConvertError),
    /// No temporary file can be made in OUT's folder.
    WriteIn { dir: PathBuf, error: std::io::Error },
    /// Reading the run's lines failed.
    Reading { run: String, error: std::io::Error },
    /// Writing the copy failed.
    Write(std::io::Error),
    /// An annotated record cannot be written into the copy.
    Serialize(serde_json::Error),
    /// The finished copy cannot be put at OUT.
    Persist { out: PathBuf, error: std::io::Error },
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Open { run, error } => write!(f, "triage: cannot open '{run}': {error}"),
            ApplyError::IsDirectory { run } => {
                write!(f, "triage: '{run}' is a directory; pass a run file")
            }
            ApplyError::OutIsRun => f.write_str(
                "triage: OUT is the run file itself; triage never modifies a run — choose another path",
            ),
            ApplyError::OutExists { out } => {
                write!(f, "triage: '{out}' exists; pass --force to overwrite it")
            }
            ApplyError::JournalPath(e) => write!(f, "{e}"),
            ApplyError::Journal(e) => write!(f, "{e}"),
            ApplyError::Read { run, error } => write!(f, "triage: cannot read '{run}': {error}"),
            ApplyError::Convert { run, error } => {
                write!(f, "triage: cannot convert '{run}': {error}")
            }
            ApplyError::Format(e) => write!(f, "triage: {e}"),
            ApplyError::WriteIn { dir, error } => {
                write!(f, "triage: cannot write in '{}': {error}", dir.display())
            }
            ApplyError::Reading { run, error } => write!(f, "triage: reading '{run}': {error}"),
            ApplyError::Write(e) => write!(f, "triage: writing the copy: {e}"),
            ApplyError::Serialize(e) => write!(f, "triage: writing the copy: {e}"),
            ApplyError::Persist { out, error } => {
                write!(f, "triage: cannot write '{}': {error}", out.display())
            }
        }
    }
}

impl std::error::Error for ApplyError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_before() {
        let dir = tempfile::tempdir().expect("temp dir");
        let run = dir.path().join("run.jsonl");
        let out = dir.path().join("out.jsonl");
        let shown = |p: &Path| p.display().to_string();
        let err = |run: &Path, out: &Path, force| {
            apply(run, None, Some(out), force, None, &Default::default())
                .unwrap_err()
                .to_string()
        };
        let io = std::fs::metadata(&run).unwrap_err();
        assert_eq!(
            err(&run, &out, false),
            format!("triage: cannot open '{}': {io}", shown(&run))
        );
        assert_eq!(
            err(dir.path(), &out, false),
            format!(
                "triage: '{}' is a directory; pass a run file",
                shown(dir.path())
            )
        );
        std::fs::write(&run, "{}\n").expect("write");
        assert_eq!(
            err(&run, &run, true),
            "triage: OUT is the run file itself; triage never modifies a run — choose another path"
        );
        std::fs::write(&out, "").expect("write");
        assert_eq!(
            err(&run, &out, false),
            format!(
                "triage: '{}' exists; pass --force to overwrite it",
                shown(&out)
            )
        );
        let e = std::io::Error::other("disk full");
        assert_eq!(
            ApplyError::Write(e).to_string(),
            "triage: writing the copy: disk full"
        );
    }
}
