//! `triage apply`: a copy of a run with the triage written into it.
//!
//! Every annotated record gains a `"triage"` object (category, note,
//! reviewer, time, the suggested category, and whether the category was an
//! accepted suggestion); every other line is copied byte for byte. The run
//! file itself is never opened for writing, and OUT is written through a
//! temporary file and renamed, so a crash never leaves half a copy.
//!
//! Another tool's result file (detected, or named with `--format`) is
//! written out as the native records the viewer annotated, each with its
//! `origin`.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::annotations::{AnnotationSource, AnnotationStore, StoreOpenError, journal_path_for};
use super::derive::derive;
use super::formats::{self, Format};
use super::key::record_key;
use super::record::map_record;
use super::suggest::suggest;

/// Write `out` as a copy of `run` with annotations applied; returns a summary line.
pub fn apply(
    run: &Path,
    annotations: Option<&Path>,
    out: &Path,
    force: bool,
    format: Option<Format>,
) -> Result<String, String> {
    let shown = super::text::inert_line(&run.display().to_string());
    let meta = std::fs::metadata(run).map_err(|e| format!("triage: cannot open '{shown}': {e}"))?;
    if meta.is_dir() {
        return Err(format!("triage: '{shown}' is a directory; pass a run file"));
    }
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(run), std::fs::canonicalize(out))
        && a == b
    {
        return Err(
            "triage: OUT is the run file itself; triage never modifies a run — choose another path"
                .into(),
        );
    }
    if out.exists() && !force {
        return Err(format!(
            "triage: '{}' exists; pass --force to overwrite it",
            super::text::inert_line(&out.display().to_string())
        ));
    }
    let (journal, _) = journal_path_for(run, annotations)?;
    // A run nobody has annotated yet is copied unchanged.
    let store = match AnnotationStore::read(&journal) {
        Ok(s) => Some(s),
        Err(StoreOpenError::NotFound { .. }) => None,
        Err(e) => return Err(e.to_string()),
    };

    let mut input = File::open(run).map_err(|e| format!("triage: cannot open '{shown}': {e}"))?;
    let format = match format {
        Some(f) => f,
        None => {
            let mut head = Vec::new();
            (&input)
                .take(formats::DETECT_HEAD_BYTES as u64)
                .read_to_end(&mut head)
                .map_err(|e| format!("triage: cannot read '{shown}': {e}"))?;
            formats::detect(&head).format.unwrap_or(Format::Native)
        }
    };
    // Another tool's results: the records the viewer annotated are the converted ones.
    let _converted = if format == Format::Native {
        input
            .seek(SeekFrom::Start(0))
            .map_err(|e| format!("triage: cannot read '{shown}': {e}"))?;
        None
    } else {
        let mut tmp = tempfile::NamedTempFile::new()
            .map_err(|e| format!("triage: cannot convert '{shown}': {e}"))?;
        {
            let mut w = BufWriter::new(tmp.as_file_mut());
            formats::convert(run, format, &mut w).map_err(|e| format!("triage: {e}"))?;
            w.flush()
                .map_err(|e| format!("triage: cannot convert '{shown}': {e}"))?;
        }
        input = tmp
            .reopen()
            .map_err(|e| format!("triage: cannot convert '{shown}': {e}"))?;
        Some(tmp)
    };
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| format!("triage: cannot write in '{}': {e}", dir.display()))?;
    let mut w = BufWriter::new(tmp.as_file());
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    let (mut total, mut applied) = (0usize, 0usize);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("triage: reading '{shown}': {e}"))?;
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
            let ann = store.as_ref()?.get(&key)?.clone();
            Some((v, ann))
        });
        let write_err = |e: std::io::Error| format!("triage: writing the copy: {e}");
        match annotated {
            Some((mut v, ann)) => {
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
                }
                serde_json::to_writer(&mut w, &v)
                    .map_err(|e| format!("triage: writing the copy: {e}"))?;
                w.write_all(ending).map_err(write_err)?;
                applied += 1;
            }
            None => w.write_all(&line).map_err(write_err)?,
        }
    }
    w.flush()
        .map_err(|e| format!("triage: writing the copy: {e}"))?;
    drop(w);
    // The copy gets the run's permissions, not the temp file's private 0600.
    tmp.as_file()
        .set_permissions(meta.permissions())
        .map_err(|e| format!("triage: writing the copy: {e}"))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| format!("triage: writing the copy: {e}"))?;
    tmp.persist(out)
        .map_err(|e| format!("triage: cannot write '{}': {}", out.display(), e.error))?;
    let from = if format == Format::Native {
        String::new()
    } else {
        format!(" (native records converted from {format})")
    };
    Ok(format!(
        "wrote {}{from}: {applied} of {total} lines carry a triage object",
        out.display()
    ))
}
