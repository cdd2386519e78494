//! Other robustness tools' result files, converted into native pair records.
//!
//! triage's index reads a native JSONL file line by line, so a foreign file
//! is **converted** into native pair records (one JSON object per line, see
//! `docs/run-format.md`) written to a private file that the index then opens
//! as if it were the run. Each converted record carries `"format"` (the
//! adapter's name) and an `"origin"` object with the original row(s), so the
//! raw view shows them, and keeps ids stable so annotations survive a
//! re-conversion: converting the same file twice is byte-identical.
//!
//! - [`detect`] sniffs the first bytes of a file (content, never the
//!   extension) and says which format it is, or what was tried.
//! - [`convert`] turns a file of a given [`Format`] into native records,
//!   reading it as a stream (see [`stream`]): rows that wait for pairing are
//!   set aside on disk, and only what pairing reads of them ([`Slim`]) stays
//!   in memory.
//!
//! The mappings, field by field, are in `docs/formats.md`. Nothing here
//! touches a terminal.

use std::fmt;
use std::io::{Read, Write};
use std::path::Path;
use std::str::FromStr;

use serde_json::{Map, Value, json};

pub mod checklist;
pub mod context_probe;
pub mod inspect;
pub mod multivon;
pub mod promptfoo;
pub mod stream;

/// A result-file format triage can open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// triage's own JSONL pair records.
    Native,
    /// The context-probe harness: one row per trial (JSONL).
    ContextProbe,
    /// `promptfoo eval -o results.json` (or `.jsonl`).
    Promptfoo,
    /// Inspect AI's JSON eval log.
    Inspect,
    /// multivon-eval variant validations, case manifests and eval reports.
    Multivon,
    /// CheckList test results: the viewer's data dumped as JSON, or the
    /// text of `TestSuite.summary()`.
    CheckList,
}

impl Format {
    /// Every format, in the order [`detect`] tries them.
    pub const ALL: [Format; 6] = [
        Format::Native,
        Format::ContextProbe,
        Format::Promptfoo,
        Format::Inspect,
        Format::Multivon,
        Format::CheckList,
    ];

    /// The name used by `--from`, in the status bar, in `summary` and in `"format"`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::ContextProbe => "context-probe",
            Format::Promptfoo => "promptfoo",
            Format::Inspect => "inspect",
            Format::Multivon => "multivon",
            Format::CheckList => "checklist",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        let norm = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        Ok(match norm.as_str() {
            "native" | "triage" | "jsonl" => Format::Native,
            "context-probe" | "contextprobe" | "context" => Format::ContextProbe,
            "promptfoo" => Format::Promptfoo,
            "inspect" | "inspect-ai" | "inspectai" => Format::Inspect,
            "multivon" | "multivon-eval" => Format::Multivon,
            "checklist" | "check-list" => Format::CheckList,
            _ => {
                return Err(UnknownFormat {
                    given: s.to_string(),
                });
            }
        })
    }
}

/// A `--from` name that names no [`Format`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat {
    /// The name as given.
    pub given: String,
}

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown format '{}'; known formats: {}",
            crate::core::text::inert_line(&self.given),
            Format::ALL.map(|f| f.name()).join(", ")
        )
    }
}

impl std::error::Error for UnknownFormat {}

/// What [`detect`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// The format, when one matched.
    pub format: Option<Format>,
    /// Every format tried before (and instead of) the match, with why it did not fit.
    pub tried: Vec<(Format, String)>,
    /// Where the records sit when the file is one JSON document holding
    /// records that the format writes one per line.
    pub records: Option<RecordsAt>,
}

/// Where a JSON document keeps records that are otherwise one per line:
/// the document is an array of them, or one member of a top-level object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordsAt {
    /// `[{...}, {...}]`
    Array,
    /// `{"name": [{...}, {...}], ...}`
    Member(String),
}

impl fmt::Display for RecordsAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordsAt::Array => f.write_str("a JSON array of records"),
            RecordsAt::Member(m) => write!(
                f,
                "a JSON document with its records in \"{}\"",
                crate::core::text::inert_line(m)
            ),
        }
    }
}

impl Detection {
    /// The message for a file that matched no format: what was tried and why not.
    pub fn message(&self, shown_path: &str) -> String {
        let mut s = format!("triage: '{shown_path}' is not a format triage knows; tried:");
        for (f, why) in &self.tried {
            s.push_str(&format!("\n  - {}: {why}", f.name()));
        }
        s.push_str("\nPass --from NAME to choose one.");
        s
    }

    /// The note for a file that matched no format and was opened as native
    /// lines anyway: a first line, one line per format tried (`  - name:
    /// why`), and what to do. Whoever shows it keeps the lines apart.
    pub fn note(&self) -> String {
        let mut s =
            "not a format triage knows, so its lines were read as native pair records; tried:"
                .to_string();
        for (f, why) in &self.tried {
            s.push_str(&format!("\n  - {}: {why}", f.name()));
        }
        s.push_str("\nPass --from NAME to choose one.");
        s
    }
}

/// The records a converter wrote, one JSON object a line (for tests).
#[cfg(test)]
pub(crate) fn written_records(out: Vec<u8>) -> Vec<Value> {
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

/// A file's head as text bytes: decompressed first when it is gzip.
fn plain_head(head: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if is_gzip(head) {
        std::borrow::Cow::Owned(gunzip_prefix(head))
    } else {
        std::borrow::Cow::Borrowed(head)
    }
}

/// How many bytes of a file [`detect`] wants to see.
pub const DETECT_HEAD_BYTES: usize = 64 * 1024;

/// Sniff the first bytes of a file (content, never the extension).
///
/// `head` is the start of the file ([`DETECT_HEAD_BYTES`] is plenty; a
/// shorter or truncated head is fine). A gzip stream is decompressed first.
pub fn detect(head: &[u8]) -> Detection {
    let head = plain_head(head);
    let head = &head[..];
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}');
    let sniff = Sniff::new(text, head);
    let mut tried = Vec::new();
    for f in Format::ALL {
        match sniff_as(f, &sniff) {
            Ok(()) => {
                return Detection {
                    format: Some(f),
                    tried,
                    records: None,
                };
            }
            Err(why) => tried.push((f, why)),
        }
    }
    // One JSON document holding records of a format that writes them one
    // per line: judged by its first record, as that format's first line.
    if let Some((at, first)) = first_record(sniff.text)
        && let Some(f) = record_format(&first)
    {
        return Detection {
            format: Some(f),
            tried,
            records: Some(at),
        };
    }
    Detection {
        format: None,
        tried,
        records: None,
    }
}

fn sniff_as(f: Format, sniff: &Sniff) -> Result<(), String> {
    match f {
        Format::Native => sniff_native(sniff),
        Format::ContextProbe => context_probe::sniff(sniff),
        Format::Promptfoo => promptfoo::sniff(sniff),
        Format::Inspect => inspect::sniff(sniff),
        Format::Multivon => multivon::sniff(sniff),
        Format::CheckList => checklist::sniff(sniff),
    }
}

/// The formats whose records can stand one per line, in detection order.
const LINE_FORMATS: [Format; 4] = [
    Format::Native,
    Format::ContextProbe,
    Format::Promptfoo,
    Format::Multivon,
];

/// The line format whose first line `record` would be.
fn record_format(record: &Value) -> Option<Format> {
    let line = serde_json::to_string(record).ok()?;
    let sniff = Sniff::new(&line, line.as_bytes());
    LINE_FORMATS
        .into_iter()
        .find(|f| sniff_as(*f, &sniff).is_ok())
}

/// Whether a file whose head is `head` must be converted to be read as
/// `format`: another tool's format, or native records inside one JSON
/// document rather than one per line.
pub fn must_convert(format: Format, head: &[u8]) -> bool {
    if format != Format::Native {
        return true;
    }
    let head = plain_head(head);
    let head = &head[..];
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    // One object per line is the native layout itself.
    if text.starts_with('{') && Sniff::new(text, head).line_object().is_some() {
        return false;
    }
    first_record(text).is_some_and(|(_, r)| sniff_native(&Sniff::new(&r.to_string(), b"")).is_ok())
}

/// The first record of a JSON document that keeps its records in an array
/// (the document itself, or a member of a top-level object whose value is
/// an array of objects), read from `text` even when it is a cut head.
fn first_record(text: &str) -> Option<(RecordsAt, Value)> {
    let text = text.trim_start();
    let first_object = |after_bracket: &str| -> Option<Value> {
        let rest = after_bracket.trim_start();
        if !rest.starts_with('{') {
            return None;
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match values.next()? {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => None,
        }
    };
    if let Some(rest) = text.strip_prefix('[') {
        return first_object(rest).map(|v| (RecordsAt::Array, v));
    }
    // The members of a top-level object, in order, as far as the head goes.
    let mut rest = text.strip_prefix('{')?;
    loop {
        rest = rest.trim_start();
        let mut keys = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let key = keys.next()?.ok()?;
        rest = rest[keys.byte_offset()..]
            .trim_start()
            .strip_prefix(':')?
            .trim_start();
        if let Some(after) = rest.strip_prefix('[')
            && let Some(v) = first_object(after)
            && record_format(&v).is_some()
        {
            return Some((RecordsAt::Member(key), v));
        }
        let mut skip =
            serde_json::Deserializer::from_str(rest).into_iter::<serde::de::IgnoredAny>();
        skip.next()?.ok()?;
        rest = rest[skip.byte_offset()..].trim_start();
        rest = rest.strip_prefix(',')?;
    }
}

/// How the records of a file are laid out, for reading them as a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// One JSON object per line.
    Lines,
    /// One JSON document: the elements of the array at this path of member
    /// names (none: the document is the array, or the one record).
    Document(Vec<String>),
}

/// How `format`'s records are laid out in a file whose head is `head`: one
/// per line, an array of them, records of a line format held in a member
/// of an object, or one document that is itself the record.
pub fn records_layout(head: &str, format: Format) -> Layout {
    let head = head.trim_start();
    let sniff = Sniff::new(head, b"");
    if let Some(line) = &sniff.first_line
        && line.is_object()
        && record_format(line) == Some(format)
    {
        return Layout::Lines;
    }
    if let Some((at, first)) = first_record(head)
        && record_format(&first) == Some(format)
    {
        return match at {
            RecordsAt::Array => Layout::Document(Vec::new()),
            RecordsAt::Member(m) => Layout::Document(vec![m]),
        };
    }
    if sniff.line_object().is_some() {
        Layout::Lines
    } else {
        Layout::Document(Vec::new())
    }
}

/// What [`each_record`] hands each record to: its line (or place), the
/// record, and the sink.
pub type EachRecord<'e> =
    dyn FnMut(usize, Map<String, Value>, &mut Sink) -> Result<(), ConvertError> + 'e;

/// Hand each record of a file laid out as `layout` to `each`, with its
/// line (or, in a document, its 1-based place among the elements). A line
/// or element that is not a JSON object is a warning and skipped. Returns
/// what [`stream::each_element`] found at the top of a document
/// ([`stream::Top::Array`] for lines).
pub fn each_record(
    reader: &mut dyn std::io::BufRead,
    layout: &Layout,
    sink: &mut Sink,
    each: &mut EachRecord,
) -> Result<stream::Top, ConvertError> {
    match layout {
        Layout::Lines => {
            stream::each_line(reader, &mut |n, got| match got {
                Ok(o) => each(n, o, sink),
                Err(w) => {
                    sink.warn(w);
                    Ok(())
                }
            })?;
            Ok(stream::Top::Array)
        }
        Layout::Document(path) => {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            let mut n = 0usize;
            stream::each_element(reader, &path, &mut |v| {
                n += 1;
                match v {
                    Value::Object(o) => each(n, o, sink),
                    other => {
                        sink.warn(format!(
                            "record {n}: expected a JSON object, found {}; skipped",
                            crate::core::record::type_name(&other)
                        ));
                        Ok(())
                    }
                }
            })
        }
    }
}

/// What a converter reports besides the records it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertReport {
    pub format: Option<Format>,
    /// Rows (trials, results, samples, records) read from the file.
    pub rows: usize,
    /// Native records written (pairs plus unpaired rows).
    pub records: usize,
    /// Records that pair a variant with its base.
    pub pairs: usize,
    /// Records for rows with no variant relation.
    pub unpaired: usize,
    /// Records written with `"passed": false`.
    pub failures: usize,
    /// Things the reader should know: differing model ids, skipped rows, ...
    pub warnings: Vec<String>,
    /// Records the tool's own rules call into question (a configuration
    /// that changed between trials, a digest that no longer matches its
    /// record, a variant in another split than its base): each with the
    /// 1-based line of the converted record it concerns. Opening the file
    /// lists them as problems, which `triage check --strict` fails on.
    pub problems: Vec<ConvertProblem>,
    /// Problems past the first [`crate::core::problem::KEPT_PER_KIND`]:
    /// counted, not kept (as the loader does with its own).
    pub unlisted_problems: u64,
}

/// A record a converter found at fault by the tool's own rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertProblem {
    /// The converted record's line (1-based), as problems and exports count them.
    pub line: u64,
    /// What is wrong and what to do about it.
    pub message: String,
}

/// Choices that change how a foreign file is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertOptions {
    /// The Inspect scorer whose value is a sample's verdict (`--scorer
    /// NAME`); by default the first scorer that gives verdicts.
    pub scorer: Option<String>,
    /// Where the bytes read so far are counted, for a progress bar.
    pub progress: Option<Progress>,
}

/// A count of the bytes a conversion has read, shared with whoever shows it.
#[derive(Debug, Clone, Default)]
pub struct Progress(pub std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Progress {
    /// The bytes read so far.
    pub fn read(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl PartialEq for Progress {
    fn eq(&self, other: &Progress) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Progress {}

/// Convert a foreign file into native JSONL pair records written to `out`.
///
/// [`Format::Native`] is copied through unchanged. Errors name the file and
/// what was expected.
pub fn convert(
    path: &Path,
    format: Format,
    out: &mut dyn Write,
) -> Result<ConvertReport, ConvertError> {
    convert_with(path, format, &ConvertOptions::default(), out)
}

/// [`convert`] with [`ConvertOptions`].
///
/// Every format is read as a stream: records are converted as they are
/// read, and what must wait for pairing is set aside on disk (see
/// [`stream`]), so memory follows the number of rows, not the file's size.
pub fn convert_with(
    path: &Path,
    format: Format,
    opts: &ConvertOptions,
    out: &mut dyn Write,
) -> Result<ConvertReport, ConvertError> {
    let shown = crate::core::text::inert_line(&path.display().to_string());
    let in_file = |error: ConvertError| ConvertError::InFile {
        file: shown.clone(),
        error: Box::new(error),
    };
    let mut head = Vec::with_capacity(DETECT_HEAD_BYTES);
    open_file(path)
        .map_err(in_file)?
        .take(DETECT_HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| in_file(ConvertError::Unreadable(e)))?;
    let count = opts.progress.as_ref().map(|p| p.0.clone());
    let mut sink = Sink::new(out, format);
    if format == Format::Inspect && inspect::is_zip(&head) {
        let file = open_file(path).map_err(in_file)?;
        // Buffered: the archive is read in many small pieces.
        let file = std::io::BufReader::with_capacity(1 << 16, file);
        inspect::convert_archive(file, opts, &mut sink).map_err(in_file)?;
        if let Some(c) = &count {
            let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            c.store(len, std::sync::atomic::Ordering::Relaxed);
        }
    } else {
        let fault = stream::Fault::default();
        let file = stream::Counted::new(open_file(path).map_err(in_file)?, count);
        let plain: Box<dyn Read> = if is_gzip(&head) {
            Box::new(stream::Gunzip::new(file, fault.clone()))
        } else {
            Box::new(file)
        };
        let mut reader = std::io::BufReader::with_capacity(
            1 << 20,
            stream::Text::new(plain, format, fault.clone()),
        );
        let head = plain_head(&head);
        let head = String::from_utf8_lossy(&head);
        let head = head.trim_start_matches('\u{feff}');
        let res = convert_stream(&mut reader, head, format, opts, &mut sink);
        // A fault below the parser says what went wrong better than the
        // parse error it caused.
        let fault = fault.borrow_mut().take();
        match (res, fault) {
            (_, Some(f)) => return Err(in_file(f)),
            // The converted run is not the file read.
            (Err(e @ ConvertError::Write(_)), None) => return Err(e),
            (Err(e), None) => return Err(in_file(e)),
            (Ok(()), None) => {}
        }
    }
    sink.out.flush().map_err(ConvertError::Write)?;
    Ok(sink.report)
}

/// Convert the text read from `reader` (whose start is `head`).
fn convert_stream(
    reader: &mut dyn std::io::BufRead,
    head: &str,
    format: Format,
    opts: &ConvertOptions,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    match format {
        Format::Native => native(reader, head, sink),
        Format::ContextProbe => context_probe::convert(reader, head, sink),
        Format::Promptfoo => promptfoo::convert(reader, head, sink),
        Format::Inspect => inspect::convert(reader, opts, sink),
        Format::Multivon => multivon::convert(reader, head, sink),
        Format::CheckList => checklist::convert(reader, head, sink),
    }
}

/// Native records: lines are copied through as they are; records held in
/// one JSON document are written one a line.
fn native(
    reader: &mut dyn std::io::BufRead,
    head: &str,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let layout = records_layout(head, Format::Native);
    if layout == Layout::Lines {
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader
                .read_until(b'\n', &mut line)
                .map_err(ConvertError::Unreadable)?
                == 0
            {
                return Ok(());
            }
            sink.out.write_all(&line).map_err(ConvertError::Write)?;
            if !line.trim_ascii().is_empty() {
                sink.report.rows += 1;
                sink.report.records += 1;
                sink.report.pairs += 1;
            }
        }
    }
    each_record(reader, &layout, sink, &mut |_, o, sink| {
        let line = serde_json::to_string(&o).map_err(ConvertError::Serialize)?;
        sink.out
            .write_all(line.as_bytes())
            .and_then(|_| sink.out.write_all(b"\n"))
            .map_err(ConvertError::Write)?;
        sink.report.rows += 1;
        sink.report.records += 1;
        sink.report.pairs += 1;
        Ok(())
    })?;
    Ok(())
}

/// The records [`convert`] writes for `text` read as `format` (for tests).
#[cfg(test)]
pub(crate) fn convert_text(
    text: &str,
    format: Format,
    opts: &ConvertOptions,
) -> Result<(Vec<Value>, ConvertReport), ConvertError> {
    let dir = tempfile::tempdir().map_err(ConvertError::Write)?;
    let path = dir.path().join("run");
    std::fs::write(&path, text).map_err(ConvertError::Write)?;
    let mut out = Vec::new();
    let report = convert_with(&path, format, opts, &mut out)?;
    Ok((written_records(out), report))
}

/// Why [`convert`] (or a converter writing through a [`Sink`]) failed.
#[derive(Debug)]
pub enum ConvertError {
    /// The file does not exist.
    NotFound,
    /// The file cannot be read.
    Unreadable(std::io::Error),
    /// The file is gzip data that does not decompress.
    Decompress(std::io::Error),
    /// The file is not UTF-8 text from this byte on.
    NotUtf8 { byte: usize, format: Format },
    /// The content does not fit the format: what was found, and what was
    /// expected (each converter says it in its own words).
    Content(String),
    /// The file is that format, in a shape triage does not read (an export
    /// without the rows it pairs, a log without samples, an unknown
    /// scorer): why, and what to open or pass instead.
    Refused(String),
    /// A converted record could not be serialised.
    Serialize(serde_json::Error),
    /// The converted run could not be written.
    Write(std::io::Error),
    /// One of the others, about the file shown as `file`.
    InFile {
        file: String,
        error: Box<ConvertError>,
    },
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConvertError::NotFound => f.write_str("does not exist"),
            ConvertError::Unreadable(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                f.write_str("cannot read it: permission denied")
            }
            ConvertError::Unreadable(e) => write!(f, "cannot read it: {e}"),
            ConvertError::Decompress(e) => write!(f, "cannot decompress it: {e}"),
            ConvertError::NotUtf8 { byte, format } => write!(
                f,
                "not UTF-8 text (byte {byte}); expected {} {} file",
                if format.name().starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                },
                format.name()
            ),
            ConvertError::Content(why) | ConvertError::Refused(why) => f.write_str(why),
            ConvertError::Serialize(e) => write!(f, "cannot serialize a converted record: {e}"),
            ConvertError::Write(e) => write!(f, "cannot write the converted run: {e}"),
            ConvertError::InFile { file, error } => write!(f, "{file}: {error}"),
        }
    }
}

impl ConvertError {
    /// Whether the file was recognised and refused, so that a hint to
    /// choose another format would mislead.
    pub fn is_refusal(&self) -> bool {
        match self {
            ConvertError::Refused(_) => true,
            ConvertError::InFile { error, .. } => error.is_refusal(),
            _ => false,
        }
    }
}

impl std::error::Error for ConvertError {}

impl From<String> for ConvertError {
    fn from(why: String) -> ConvertError {
        ConvertError::Content(why)
    }
}

impl From<&str> for ConvertError {
    fn from(why: &str) -> ConvertError {
        ConvertError::Content(why.to_string())
    }
}

fn open_file(path: &Path) -> Result<std::fs::File, ConvertError> {
    std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ConvertError::NotFound,
        _ => ConvertError::Unreadable(e),
    })
}

/// Where converters write their records; counts them as it goes.
pub struct Sink<'a> {
    out: &'a mut dyn Write,
    pub report: ConvertReport,
    /// Rows set aside while the file is read (see `stream`), made when
    /// the first is.
    spill: Option<stream::Spill>,
}

impl<'a> Sink<'a> {
    /// A sink writing `format`'s records to `out`.
    pub fn new(out: &'a mut dyn Write, format: Format) -> Sink<'a> {
        Sink {
            out,
            report: ConvertReport {
                format: Some(format),
                ..ConvertReport::default()
            },
            spill: None,
        }
    }

    /// Set a value aside until its record is written.
    pub fn put<T: serde::Serialize>(&mut self, v: &T) -> Result<stream::Spilled, ConvertError> {
        if self.spill.is_none() {
            self.spill = Some(stream::Spill::new()?);
        }
        match &mut self.spill {
            Some(spill) => spill.put(v),
            None => Err(ConvertError::Content("no spill file".into())),
        }
    }

    /// Read back a value set aside with [`Sink::put`].
    pub fn get<T: serde::de::DeserializeOwned>(
        &mut self,
        at: stream::Spilled,
    ) -> Result<T, ConvertError> {
        match &mut self.spill {
            Some(spill) => spill.get(at),
            None => Err(ConvertError::Content("nothing was set aside".into())),
        }
    }

    /// Write one native record (one line) and the problems found with it.
    pub fn record_with_problems(
        &mut self,
        rec: Value,
        problems: Vec<String>,
    ) -> Result<(), ConvertError> {
        self.record(rec)?;
        let line = self.report.records as u64;
        for message in problems {
            if self.report.problems.len() < crate::core::problem::KEPT_PER_KIND {
                self.report.problems.push(ConvertProblem { line, message });
            } else {
                self.report.unlisted_problems += 1;
            }
        }
        Ok(())
    }

    /// Write one native record (one line).
    pub fn record(&mut self, rec: Value) -> Result<(), ConvertError> {
        let paired = rec.get("transformation").and_then(Value::as_str) != Some(UNPAIRED);
        if rec.get("passed") == Some(&Value::Bool(false)) {
            self.report.failures += 1;
        }
        let line = serde_json::to_string(&rec).map_err(ConvertError::Serialize)?;
        self.out
            .write_all(line.as_bytes())
            .and_then(|_| self.out.write_all(b"\n"))
            .map_err(ConvertError::Write)?;
        self.report.records += 1;
        if paired {
            self.report.pairs += 1;
        } else {
            self.report.unpaired += 1;
        }
        Ok(())
    }

    pub fn warn(&mut self, w: impl Into<String>) {
        self.report.warnings.push(w.into());
    }
}

/// The `transformation` (and `family`) of a row with no variant relation.
pub const UNPAIRED: &str = "unpaired";

/// What a detector sees: the head as text, and its first JSON value when
/// the head holds a complete one.
pub struct Sniff<'a> {
    pub text: &'a str,
    /// The first non-empty line parsed as JSON (complete lines only).
    pub first_line: Option<Value>,
    /// The whole head parsed as one JSON document, when it is complete.
    pub document: Option<Value>,
    /// The head starts like a zip archive.
    pub zip: bool,
}

impl<'a> Sniff<'a> {
    fn new(text: &'a str, raw: &[u8]) -> Sniff<'a> {
        let trimmed = text.trim_start();
        let first_line = trimmed
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l.trim()).ok());
        let document = serde_json::from_str::<Value>(trimmed).ok();
        Sniff {
            text: trimmed,
            first_line,
            document,
            zip: raw.starts_with(b"PK\x03\x04"),
        }
    }

    /// The first line as an object, when it is one.
    pub fn line_object(&self) -> Option<&Map<String, Value>> {
        self.first_line.as_ref().and_then(Value::as_object)
    }

    /// Whether the head starts a multi-line JSON document (an object that
    /// is not complete on its first line).
    pub fn starts_document(&self) -> bool {
        self.text.starts_with('{') && self.line_object().is_none()
    }

    /// Whether `"key"` occurs as an object key anywhere in the head.
    pub fn has_key(&self, key: &str) -> bool {
        let pat = format!("\"{key}\"");
        let mut rest = self.text;
        while let Some(i) = rest.find(&pat) {
            let after = rest[i + pat.len()..].trim_start();
            if after.starts_with(':') {
                return true;
            }
            rest = &rest[i + pat.len()..];
        }
        false
    }

    /// A short description of the head, for "why not" messages.
    pub fn describe(&self) -> &'static str {
        if self.zip {
            "a zip archive"
        } else if self.text.is_empty() {
            "an empty file"
        } else if self.line_object().is_some() {
            "JSON lines"
        } else if self.text.starts_with('{') {
            "a JSON document"
        } else if self.text.starts_with('[') {
            "a JSON array"
        } else {
            "not JSON"
        }
    }
}

fn sniff_native(s: &Sniff) -> Result<(), String> {
    let Some(o) = s.line_object() else {
        return Err(format!(
            "needs one JSON object per line; found {}",
            s.describe()
        ));
    };
    let has = |a: &str, b: &str| o.contains_key(a) || o.contains_key(b);
    if has("case_id", "caseId") && has("variant_id", "variantId") {
        Ok(())
    } else {
        Err("the first line has no case_id and variant_id".into())
    }
}

fn is_gzip(b: &[u8]) -> bool {
    b.starts_with(&[0x1f, 0x8b])
}

/// Decompress as much of a gzip prefix as the bytes allow.
fn gunzip_prefix(b: &[u8]) -> Vec<u8> {
    let mut d = flate2::read::MultiGzDecoder::new(b);
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    while out.len() < DETECT_HEAD_BYTES {
        match d.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    out
}

/// The first present, non-null value among `names`.
pub fn pick<'a>(o: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| o.get(*n).filter(|v| !v.is_null()))
}

/// "1 row names" or "N rows name", to start a note about rows.
pub(super) fn rows_name(n: usize) -> String {
    match n {
        1 => "1 row names".to_string(),
        n => format!("{n} rows name"),
    }
}

/// The first present id among `names`: a string that is not blank, or a
/// number (sample ids often are), as text. A blank one, or a flag, names
/// nothing.
pub fn pick_id(o: &Map<String, Value>, names: &[&str]) -> Option<String> {
    match pick(o, names)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The first present string (numbers are written as text) among `names`.
pub fn pick_str(o: &Map<String, Value>, names: &[&str]) -> Option<String> {
    match pick(o, names)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The first present boolean among `names`.
pub fn pick_bool(o: &Map<String, Value>, names: &[&str]) -> Option<bool> {
    pick(o, names).and_then(Value::as_bool)
}

/// Text for a value that may be a string or structured JSON.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// A record for a row with no variant relation: the source holds the input
/// and the expected answer, the variant the input and the actual output, so
/// the diff shows expected against actual (at `state.answer`).
pub struct Unpaired {
    pub case_id: String,
    pub variant_id: String,
    pub label: Option<String>,
    pub input: Option<String>,
    pub expected: Option<Value>,
    pub actual: Option<Value>,
    pub passed: Option<bool>,
    pub reasons: Vec<String>,
    /// The variant side's outcome when the request failed (`error`, `timeout`, ...).
    pub outcome: Option<(String, String)>,
    pub latency_ms: Option<f64>,
    pub model_id: Option<String>,
    pub settings_id: Option<String>,
    pub repetition: Option<u64>,
    /// Extra top-level fields, written after the native ones.
    pub extra: Map<String, Value>,
}

impl Unpaired {
    pub fn new(case_id: String, variant_id: String) -> Unpaired {
        Unpaired {
            case_id,
            variant_id,
            label: None,
            input: None,
            expected: None,
            actual: None,
            passed: None,
            reasons: Vec::new(),
            outcome: None,
            latency_ms: None,
            model_id: None,
            settings_id: None,
            repetition: None,
            extra: Map::new(),
        }
    }

    pub fn into_record(self, format: Format, origin: Value) -> Value {
        let mut r = Map::new();
        r.insert("case_id".into(), json!(self.case_id));
        r.insert("variant_id".into(), json!(self.variant_id));
        if let Some(l) = self.label {
            r.insert("label".into(), json!(l));
        }
        r.insert("family".into(), json!(UNPAIRED));
        r.insert("transformation".into(), json!(UNPAIRED));
        r.insert("allowed_changes".into(), json!(["state.answer"]));
        let side = |answer: Option<Value>| {
            let mut s = Map::new();
            if let Some(q) = &self.input {
                s.insert("question".into(), json!(q));
            }
            s.insert("state".into(), json!({ "answer": answer }));
            s
        };
        let source = side(self.expected.clone());
        let mut variant = side(self.actual.clone());
        if let Some((outcome, error)) = self.outcome {
            variant.insert("outcome".into(), json!(outcome));
            variant.insert("error".into(), json!(error));
        }
        if let Some(ms) = self.latency_ms {
            variant.insert("latency_ms".into(), json_num(ms));
        }
        r.insert("source".into(), Value::Object(source));
        r.insert("variant".into(), Value::Object(variant));
        if let Some(p) = self.passed {
            r.insert("passed".into(), json!(p));
            r.insert("reasons".into(), json!(self.reasons));
        }
        if let Some(m) = self.model_id {
            r.insert("model_id".into(), json!(m));
        }
        if let Some(s) = self.settings_id {
            r.insert("settings_id".into(), json!(s));
        }
        if let Some(rep) = self.repetition {
            r.insert("repetition".into(), json!(rep));
        }
        r.insert("format".into(), json!(format.name()));
        for (k, v) in self.extra {
            r.insert(k, v);
        }
        r.insert("origin".into(), origin);
        Value::Object(r)
    }
}

/// A JSON number: integral values as integers, so `12` stays `12`.
pub fn json_num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// Warn when a run mixes several values of one identifier (model, settings).
pub fn warn_mixed<'v>(
    sink: &mut Sink,
    what: &str,
    values: impl IntoIterator<Item = Option<&'v str>>,
) {
    let mut seen: Vec<&str> = Vec::new();
    let mut missing = 0usize;
    for v in values {
        match v {
            Some(s) if !seen.contains(&s) => seen.push(s),
            Some(_) => {}
            None => missing += 1,
        }
    }
    if seen.len() > 1 {
        seen.sort_unstable();
        sink.warn(format!(
            "the run mixes {} {what} values: {}",
            seen.len(),
            seen.iter()
                .map(|s| crate::core::text::inert_line(s))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if missing > 0 && !seen.is_empty() {
        sink.warn(format!("{missing} rows have no {what}"));
    }
}

/// Names used by many rows (groups, models), kept once and numbered.
#[derive(Debug, Default)]
pub struct Names {
    list: Vec<Box<str>>,
    index: rustc_hash::FxHashMap<Box<str>, u32>,
}

impl Names {
    /// The number of `name`, given one when it is new.
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.list.push(name.into());
        self.index.insert(name.into(), i);
        i
    }

    /// Give the name `from` another, `to`, keeping its number (nothing
    /// when `from` is not a name, or `to` already is one).
    pub fn rename(&mut self, from: &str, to: &str) {
        if self.index.contains_key(to) {
            return;
        }
        if let Some(i) = self.index.remove(from) {
            self.list[i as usize] = to.into();
            self.index.insert(to.into(), i);
        }
    }

    /// The name numbered `i`.
    pub fn name(&self, i: u32) -> &str {
        self.list.get(i as usize).map_or("", |s| s)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What pairing keeps in memory of a [`Row`] set aside whole: its ids,
/// group, repetition and model. Pairing may change all but the model;
/// [`Pairing::whole`] reads the row back with those changes.
#[derive(Debug)]
pub struct Slim {
    pub id: Box<str>,
    pub case_id: Option<Box<str>>,
    pub base_id: Option<Box<str>>,
    /// The group's number in [`Pairing::groups`].
    pub group: u32,
    pub repetition: Option<u64>,
    /// The model's number in [`Pairing::models`].
    pub model: Option<u32>,
    at: stream::Spilled,
}

/// Rows read so far, set aside on disk, with what pairing reads of each.
#[derive(Debug, Default)]
pub struct Pairing {
    pub rows: Vec<Slim>,
    pub groups: Names,
    pub models: Names,
}

impl Pairing {
    /// Set a row aside, keeping its [`Slim`].
    pub fn set_aside(&mut self, r: &Row, sink: &mut Sink) -> Result<(), ConvertError> {
        let at = sink.put(r)?;
        self.rows.push(Slim {
            id: r.id.as_str().into(),
            case_id: r.case_id.as_deref().map(Into::into),
            base_id: r.base_id.as_deref().map(Into::into),
            group: self.groups.id(&r.group),
            repetition: r.repetition,
            model: r.model_id.as_deref().map(|m| self.models.id(m)),
            at,
        });
        Ok(())
    }

    /// The row `s` stands for, with what pairing changed.
    fn whole(&self, s: &Slim, sink: &mut Sink) -> Result<Row, ConvertError> {
        let mut r: Row = sink.get(s.at)?;
        r.id = s.id.to_string();
        r.case_id = s.case_id.as_deref().map(str::to_string);
        r.base_id = s.base_id.as_deref().map(str::to_string);
        r.group = self.groups.name(s.group).to_string();
        r.repetition = s.repetition;
        Ok(r)
    }
}

/// One result row of a tool that pairs through metadata (promptfoo,
/// Inspect, multivon reports), in a tool-neutral shape.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// The row's own id within its case (`metadata.variant_id`, the test id, ...).
    pub id: String,
    /// `metadata.case_id`: the source case this row belongs to.
    pub case_id: Option<String>,
    /// `metadata.base_id`: the id of the base row this one is a variant of.
    pub base_id: Option<String>,
    /// `metadata.relation`: `invariant` or `counterfactual`.
    pub relation: Option<String>,
    pub transformation: Option<String>,
    pub family: Option<String>,
    pub allowed_changes: Option<Value>,
    pub label: Option<String>,
    /// What else must match for two rows to pair: provider and prompt, epoch, ...
    pub group: String,
    pub repetition: Option<u64>,
    /// The input as text (the rendered prompt).
    pub input: Option<String>,
    /// The input as structured values (test vars), when there are any.
    pub vars: Option<Value>,
    pub expected: Option<Value>,
    pub output: Option<Value>,
    pub passed: Option<bool>,
    pub reasons: Vec<String>,
    /// A transport failure: `(outcome, message)`.
    pub error: Option<(String, String)>,
    pub latency_ms: Option<f64>,
    pub model_id: Option<String>,
    pub settings_id: Option<String>,
    /// Score and named scores, kept as they are.
    pub scores: Option<Value>,
    /// A validator's verdict on the variant (`valid`, `invalid`, `unknown`),
    /// written as the pair's `validation_status`.
    pub validation_status: Option<String>,
    /// The named split the row belongs to (a multivon manifest's `splits`).
    pub split: Option<String>,
    /// What the tool's own rules find wrong with this row (see
    /// [`ConvertReport::problems`]); listed with the record that holds it.
    pub problems: Vec<String>,
    /// More fields of the row's side (the parsed answer, ...): a key
    /// written from the fields above (`decision`) is replaced, or removed
    /// by a null.
    pub side_extra: Map<String, Value>,
    /// The row as the tool wrote it (the record's `origin`).
    pub raw: Value,
}

impl Row {
    fn verdict_word(&self) -> Option<&'static str> {
        self.passed.map(|p| if p { "pass" } else { "fail" })
    }

    fn side(&self) -> Value {
        let mut s = Map::new();
        if let Some(q) = &self.input {
            s.insert("question".into(), json!(q));
        }
        if let Some(v) = &self.vars {
            s.insert("state".into(), v.clone());
        }
        if let Some((outcome, error)) = &self.error {
            s.insert("outcome".into(), json!(outcome));
            s.insert("error".into(), json!(error));
        }
        if let Some(ms) = self.latency_ms {
            s.insert("latency_ms".into(), json_num(ms));
        }
        if let Some(d) = self.verdict_word() {
            s.insert("decision".into(), json!(d));
        }
        if let Some(e) = &self.expected {
            s.insert("expected".into(), e.clone());
        }
        if let Some(o) = &self.output {
            s.insert("output".into(), o.clone());
        }
        if let Some(sc) = &self.scores {
            s.insert("scores".into(), sc.clone());
        }
        s.insert("row_id".into(), json!(self.id));
        for (k, v) in &self.side_extra {
            if v.is_null() {
                s.remove(k);
            } else {
                s.insert(k.clone(), v.clone());
            }
        }
        Value::Object(s)
    }
}

/// Pair rows through their metadata and write the records: a row whose
/// `base_id` names another row of the same group becomes a pair with that
/// row as its source; a row that is nobody's base and has no base is
/// written unpaired. Rows are written in the order of `p.rows`, each read
/// back from where it was set aside.
pub fn write_paired(mut p: Pairing, format: Format, sink: &mut Sink) -> Result<(), ConvertError> {
    p.rows.shrink_to_fit();
    let rows = &p.rows;
    let mut used = vec![false; p.groups.len()];
    for r in rows {
        used[r.group as usize] = true;
    }
    let several_groups = used.iter().filter(|u| **u).count() > 1;
    // A variant pairs within its group and repetition.
    let mut by_id: rustc_hash::FxHashMap<(u32, Option<u64>, &str), usize> = Default::default();
    let mut dup = 0usize;
    for (i, r) in rows.iter().enumerate() {
        if by_id.insert((r.group, r.repetition, &r.id), i).is_some() {
            dup += 1;
        }
    }
    if dup > 0 {
        let (rows_repeat, them) = match dup {
            1 => ("1 row repeats".to_string(), "the two"),
            n => (format!("{n} rows repeat"), "them"),
        };
        sink.warn(format!(
            "{rows_repeat} the id of an earlier row in the same group and repetition; a variant pairs with the last of {them}"
        ));
    }
    let mut is_base = vec![false; rows.len()];
    let mut base_of: Vec<Option<usize>> = vec![None; rows.len()];
    // The rows whose base_id names no row: each is a problem of the run
    // (its pair cannot be judged), which `check --strict` fails on.
    let mut dangling = vec![false; rows.len()];
    for (i, r) in rows.iter().enumerate() {
        if let Some(b) = &r.base_id {
            match by_id.get(&(r.group, r.repetition, &**b)) {
                Some(&j) if j != i => {
                    is_base[j] = true;
                    base_of[i] = Some(j);
                }
                _ => dangling[i] = true,
            }
        }
    }
    drop(by_id);
    let missing = dangling.iter().filter(|&&d| d).count();
    if missing > 0 {
        sink.warn(format!(
            "{} a base_id that no row of theirs has; listed unpaired",
            rows_name(missing)
        ));
    }
    warn_mixed(
        sink,
        "model_id",
        rows.iter().map(|r| r.model.map(|m| p.models.name(m))),
    );
    // Relations other than the seeds' (and the route relations) are
    // checked as an invariant is: said once, with their names.
    let mut unknown: Vec<String> = Vec::new();
    // A base's problems go with the first record that holds it.
    let mut base_told = vec![false; rows.len()];
    for (i, slim) in rows.iter().enumerate() {
        if base_of[i].is_none() && is_base[i] {
            continue;
        }
        let mut r = p.whole(slim, sink)?;
        let id = if several_groups && !r.group.is_empty() {
            format!("{} @ {}", r.id, r.group)
        } else {
            r.id.clone()
        };
        match base_of[i] {
            Some(j) => {
                let mut base = p.whole(&rows[j], sink)?;
                let mut problems = Vec::new();
                if !std::mem::replace(&mut base_told[j], true) {
                    problems.extend(base.problems.iter().cloned());
                }
                problems.extend(r.problems.iter().cloned());
                let origin = json!({
                    "base": std::mem::take(&mut base.raw),
                    "variant": std::mem::take(&mut r.raw),
                });
                if let Some(rel) = &r.relation
                    && !known_relation(rel)
                    && !unknown.iter().any(|u| u.eq_ignore_ascii_case(rel))
                {
                    unknown.push(rel.to_ascii_lowercase());
                }
                sink.record_with_problems(pair_record(&base, &r, id, format, origin), problems)?;
            }
            None => {
                let mut u = Unpaired::new(r.case_id.clone().unwrap_or_else(|| r.id.clone()), id);
                u.label = r.label;
                u.input = r.input;
                u.expected = r.expected;
                u.actual = r.output;
                u.passed = r.passed.or(r.error.as_ref().map(|_| false));
                u.reasons = r.reasons;
                u.outcome = r.error;
                u.latency_ms = r.latency_ms;
                u.model_id = r.model_id;
                u.settings_id = r.settings_id;
                u.repetition = r.repetition;
                if let Some(sc) = r.scores {
                    u.extra.insert("scores".into(), sc);
                }
                let mut problems = r.problems;
                if dangling[i] {
                    problems.push(dangling_base(&r.id, r.base_id.as_deref(), r.repetition));
                }
                sink.record_with_problems(u.into_record(format, r.raw), problems)?;
            }
        }
    }
    if !unknown.is_empty() {
        sink.warn(format!(
            "pairs declare the relation {}, which triage does not know: checked as invariant (the verdict must not change)",
            unknown.join(", ")
        ));
    }
    Ok(())
}

/// The problem of a variant whose `base_id` names no row of its group and
/// repetition: its pair is not in the run, so nothing judged it.
fn dangling_base(id: &str, base: Option<&str>, repetition: Option<u64>) -> String {
    if base == Some(id) {
        return format!(
            "the variant {} names itself as its base: a variant and its base need distinct ids; it is listed unpaired and not judged",
            crate::core::text::inert_line(id)
        );
    }
    let base = crate::core::text::inert_line(base.unwrap_or_default());
    let place = match repetition {
        Some(n) => format!(" in repetition {n}"),
        None => String::new(),
    };
    format!(
        "the variant {} names the base {base}, which no row of its group has{place}: the pair is not in the run, so it is listed unpaired and not judged; run the base too, or correct the base_id",
        crate::core::text::inert_line(id)
    )
}

/// Whether a pair's relation is one triage checks by its own rule (the
/// seeds' invariant and counterfactual, and the route relations).
fn known_relation(relation: &str) -> bool {
    let r = relation.to_ascii_lowercase();
    r.starts_with("counterfactual")
        || matches!(
            r.as_str(),
            "invariant" | "invariance" | "not-less-urgent" | "not-more-urgent" | "allowed-routes"
        )
}

/// The native expectation kind of a relation: never one of the native
/// probability kinds, whose re-check would pass a decision pair blindly.
pub fn expectation_kind(relation: &str) -> String {
    match relation {
        "invariant" | "invariance" => "verdict-invariant".to_string(),
        "not-less-urgent" | "not-more-urgent" | "allowed-routes" => format!("relation-{relation}"),
        other => other.to_string(),
    }
}

fn pair_record(base: &Row, v: &Row, variant_id: String, format: Format, origin: Value) -> Value {
    let relation = v
        .relation
        .clone()
        .unwrap_or_else(|| "invariant".to_string())
        .to_ascii_lowercase();
    let mut reasons = Vec::new();
    if let Some((_, e)) = &v.error {
        reasons.push(format!("The variant request failed: {e}"));
    }
    if let Some((_, e)) = &base.error {
        reasons.push(format!("The base request failed: {e}"));
    }
    let counterfactual = relation.starts_with("counterfactual");
    if base.error.is_none() && v.error.is_none() {
        // A counterfactual variant changes what the answer should be: a
        // verdict that changes with it is no fault (its own checks say
        // whether it answered right).
        if let (Some(a), Some(b)) = (base.verdict_word(), v.verdict_word())
            && a != b
            && !counterfactual
        {
            reasons.push(format!("The verdict changed from {a} to {b}."));
        }
        if counterfactual
            && let (Some(a), Some(b)) = (&base.output, &v.output)
            && as_text(a).trim() == as_text(b).trim()
        {
            reasons
                .push("The counterfactual variant gave the same output as its base.".to_string());
        }
    }
    if v.passed == Some(false) {
        reasons.extend(v.reasons.iter().map(|r| format!("Variant: {r}")));
        if v.reasons.is_empty() && v.error.is_none() {
            reasons.push("The variant failed its checks.".to_string());
        }
    } else if v.passed.is_none() && v.error.is_none() {
        // Why the variant has no verdict (skipped, no output): context.
        reasons.extend(v.reasons.iter().map(|r| format!("Variant: {r}")));
    }
    if base.passed == Some(false) {
        reasons.extend(base.reasons.iter().map(|r| format!("Base: {r}")));
        if base.reasons.is_empty() && base.error.is_none() {
            reasons.push("The base failed its checks.".to_string());
        }
    }
    // The verdict is the variant's: a variant with no verdict of its own
    // (skipped, or no output) is not judged, whatever its base did; nor is
    // a pair whose base has none, unless the variant failed by itself. A
    // failed request on either side is a service error, which derive
    // reads from the sides.
    let base_known = base.passed.is_some() || base.error.is_some();
    let known = v.error.is_some() || v.passed == Some(false) || (v.passed.is_some() && base_known);
    let mut r = Map::new();
    let case = v
        .case_id
        .clone()
        .or_else(|| base.case_id.clone())
        .unwrap_or_else(|| base.id.clone());
    r.insert("case_id".into(), json!(case));
    r.insert("variant_id".into(), json!(variant_id));
    if let Some(l) = &v.label {
        r.insert("label".into(), json!(l));
    }
    r.insert(
        "family".into(),
        json!(v.family.clone().unwrap_or_else(|| relation.clone())),
    );
    if let Some(t) = &v.transformation {
        r.insert("transformation".into(), json!(t));
    }
    r.insert(
        "expectation".into(),
        json!({ "kind": expectation_kind(&relation) }),
    );
    if let Some(a) = &v.allowed_changes {
        r.insert("allowed_changes".into(), a.clone());
    }
    r.insert("source".into(), base.side());
    r.insert("variant".into(), v.side());
    if known {
        r.insert("passed".into(), json!(reasons.is_empty()));
        r.insert("reasons".into(), json!(reasons));
    } else if !reasons.is_empty() {
        // Shown as context; without a verdict they fail nothing.
        r.insert("reasons".into(), json!(reasons));
    }
    if let Some(m) = &v.model_id {
        r.insert("model_id".into(), json!(m));
    }
    if let Some(s) = &v.settings_id {
        r.insert("settings_id".into(), json!(s));
    }
    if let Some(rep) = v.repetition {
        r.insert("repetition".into(), json!(rep));
    }
    r.insert("format".into(), json!(format.name()));
    r.insert("relation".into(), json!(relation));
    if let Some(s) = &v.validation_status {
        r.insert("validation_status".into(), json!(s));
    }
    r.insert("origin".into(), origin);
    Value::Object(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every format is read as a stream: the progress count reaches the
    /// file's size, and converting twice writes the same bytes.
    #[test]
    fn every_format_is_read_as_a_stream_with_its_progress() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats");
        let files = [
            ("promptfoo/columns/results.json", Format::Promptfoo),
            ("promptfoo/columns/results.jsonl", Format::Promptfoo),
            ("inspect/scorers.json", Format::Inspect),
            ("inspect/urgency.eval", Format::Inspect),
            ("multivon/validations.json", Format::Multivon),
            ("multivon/validations.jsonl", Format::Multivon),
            ("multivon/validations-wrapped.json", Format::Multivon),
            ("multivon/manifest.json", Format::Multivon),
            ("checklist/sentiment-brittle.json", Format::CheckList),
            ("checklist/sentiment-brittle.summary.txt", Format::CheckList),
            ("context-probe/retry-results.jsonl", Format::ContextProbe),
        ];
        for (rel, format) in files {
            let path = dir.join(rel);
            let progress = Progress::default();
            let opts = ConvertOptions {
                progress: Some(progress.clone()),
                ..ConvertOptions::default()
            };
            let mut out = Vec::new();
            let report = convert_with(&path, format, &opts, &mut out).expect(rel);
            assert!(report.records > 0, "{rel}");
            let len = std::fs::metadata(&path).expect("size").len();
            assert_eq!(progress.read(), len, "{rel}: every byte counted");
            let mut again = Vec::new();
            convert(&path, format, &mut again).expect(rel);
            assert!(out == again, "{rel}: the records differ");
        }
    }

    /// A file of records in a document is read as its records, whatever
    /// the layout.
    #[test]
    fn layouts_of_records() {
        let line = r#"{"case_id":"a","variant_id":"b"}"#;
        assert_eq!(
            records_layout(&format!("{line}\n{line}\n"), Format::Native),
            Layout::Lines
        );
        assert_eq!(
            records_layout(&format!("[\n {line},\n {line}"), Format::Native),
            Layout::Document(Vec::new())
        );
        assert_eq!(
            records_layout(&format!("{{\"pairs\": [{line}]}}"), Format::Native),
            Layout::Document(vec!["pairs".into()])
        );
        // A one-line document of records is the document, not one line.
        assert_eq!(
            records_layout(&format!("{{\"pairs\": [{line}]}}\n"), Format::Native),
            Layout::Document(vec!["pairs".into()])
        );
        // A multi-line document that is itself the record.
        assert_eq!(
            records_layout(
                "{\n \"schema\": \"x\",\n \"cases\": []\n}",
                Format::Multivon
            ),
            Layout::Document(Vec::new())
        );
    }

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert_eq!("Inspect_AI".parse::<Format>(), Ok(Format::Inspect));
        assert!(
            "csv"
                .parse::<Format>()
                .unwrap_err()
                .to_string()
                .contains("promptfoo")
        );
        assert_eq!(
            "c\u{1b}sv".parse::<Format>().unwrap_err().to_string(),
            format!(
                "unknown format '{}'; known formats: native, context-probe, promptfoo, inspect, multivon, checklist",
                crate::core::text::inert_line("c\u{1b}sv")
            )
        );
    }

    #[test]
    fn csv_is_not_detected() {
        let d = detect(b"a,b,c\n1,2,3\n");
        assert_eq!(d.format, None);
        assert_eq!(d.tried.len(), Format::ALL.len());
        assert!(d.message("x.csv").contains("promptfoo"));
    }

    #[test]
    fn records_in_one_document_are_found_in_a_cut_head() {
        let rec = r#"{"case_id":"a","variant_id":"b","passed":true}"#;
        // An array cut after its first record.
        let head = format!("[{rec},{{\"case_id\":\"a\",\"vari");
        let d = detect(head.as_bytes());
        assert_eq!(d.format, Some(Format::Native));
        assert_eq!(d.records, Some(RecordsAt::Array));
        assert!(must_convert(Format::Native, head.as_bytes()));
        // A member of an object, after members of other kinds.
        let head = format!(
            "{{\"run\": {{\"id\": [1, 2]}}, \"notes\": [\"x\"], \"pairs\": [\n  {rec},\n  {{\"cut"
        );
        let d = detect(head.as_bytes());
        assert_eq!(d.records, Some(RecordsAt::Member("pairs".into())));
        assert_eq!(d.format, Some(Format::Native));
        // One record per line is the native layout: nothing to convert.
        let lines = format!("{rec}\n{rec}\n");
        assert_eq!(detect(lines.as_bytes()).records, None);
        assert!(!must_convert(Format::Native, lines.as_bytes()));
        assert!(must_convert(Format::Promptfoo, lines.as_bytes()));
        // Arrays of other things say nothing.
        for head in [
            "[1, 2, 3]",
            "[]",
            "[{\"a\": 1}]",
            "{\"a\": [{\"b\": 1}]}",
            "[{\"case_id\"",
        ] {
            let d = detect(head.as_bytes());
            assert_eq!((d.format, d.records), (None, None), "{head}");
            assert!(!must_convert(Format::Native, head.as_bytes()), "{head}");
        }
    }

    #[test]
    fn an_array_converts_as_its_lines() {
        let dir = tempfile::tempdir().expect("temp dir");
        let rec = |v: &str| format!(r#"{{"case_id":"a","variant_id":"{v}","passed":true}}"#);
        let array = dir.path().join("a.json");
        std::fs::write(&array, format!("[\n {},\n {}\n]\n", rec("b"), rec("c"))).unwrap();
        let mut out = Vec::new();
        let report = convert(&array, Format::Native, &mut out).expect("convert");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{}\n{}\n", rec("b"), rec("c"))
        );
        assert_eq!((report.rows, report.records), (2, 2));
        // Lines stay lines, byte for byte.
        let lines = dir.path().join("l.jsonl");
        let text = format!("{}\n{}\n", rec("b"), rec("c"));
        std::fs::write(&lines, &text).unwrap();
        let mut out = Vec::new();
        convert(&lines, Format::Native, &mut out).expect("convert");
        assert_eq!(out, text.as_bytes());
    }

    #[test]
    fn native_line_is_detected() {
        let d = detect(b"{\"case_id\":\"a\",\"variant_id\":\"b\"}\n");
        assert_eq!(d.format, Some(Format::Native));
    }

    #[test]
    fn convert_errors_read_as_before() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = |name: &str| dir.path().join(name);
        let shown = |name: &str| path(name).display().to_string();
        let err = |name: &str, format| {
            convert(&path(name), format, &mut Vec::new())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("none.json", Format::Promptfoo),
            format!("{}: does not exist", shown("none.json"))
        );
        std::fs::write(path("bytes.json"), b"a\xff").expect("write");
        assert_eq!(
            err("bytes.json", Format::Promptfoo),
            format!(
                "{}: not UTF-8 text (byte 1); expected a promptfoo file",
                shown("bytes.json")
            )
        );
        assert_eq!(
            err("bytes.json", Format::Inspect),
            format!(
                "{}: not UTF-8 text (byte 1); expected an inspect file",
                shown("bytes.json")
            )
        );
        std::fs::write(path("empty.json"), b"[]").expect("write");
        assert_eq!(
            err("empty.json", Format::Promptfoo),
            format!(
                "{}: no promptfoo results (objects with testCase and provider)",
                shown("empty.json")
            )
        );
        std::fs::write(path("bad.gz"), b"\x1f\x8b\x08\x00").expect("write");
        assert!(
            err("bad.gz", Format::Native)
                .starts_with(&format!("{}: cannot decompress it: ", shown("bad.gz")))
        );

        /// A writer whose disk is full.
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        std::fs::write(path("run.jsonl"), b"{}\n").expect("write");
        let e = convert(&path("run.jsonl"), Format::Native, &mut Full).unwrap_err();
        assert_eq!(e.to_string(), "cannot write the converted run: disk full");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(
            ConvertError::Unreadable(denied).to_string(),
            "cannot read it: permission denied"
        );
        let other = std::io::Error::other("bad sector");
        assert_eq!(
            ConvertError::Unreadable(other).to_string(),
            "cannot read it: bad sector"
        );
        let json = serde_json::from_str::<Value>("{").unwrap_err();
        let expected = format!("cannot serialize a converted record: {json}");
        assert_eq!(ConvertError::Serialize(json).to_string(), expected);
    }
}
