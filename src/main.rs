//! The `triage` command line.
//!
//! `triage RUN...` opens the viewer; `triage apply` writes a copy of a run
//! with its annotations; `triage keys` prints the bindings in effect;
//! `triage export`, `triage summary` and `triage check` write reports and gate
//! CI without a terminal; `triage completions` and `triage man` are generated
//! from these definitions. Paths are checked before the terminal is touched,
//! so a missing file or a directory is a one-line error with exit code 2.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use triage::core::annotations::{self, AnnotationStore};
use triage::core::config;
use triage::core::export::{self, ExportInput, ExportOptions, Format, SummaryFormat};
use triage::core::formats::{ConvertOptions, Format as RunFormat};
use triage::core::gate::{self, Gates};
use triage::core::index::{self, OpenOptions, RunIndex};
use triage::core::query;
use triage::core::stats::GroupBy;
use triage::tui::app;
use triage::tui::effects;
use triage::tui::keymap::{Keymap, Mode, seq_to_string};
use triage::tui::run::{self, Exit};
use triage::tui::style::Theme;

/// Review the results of LLM sensitivity-test runs at the keyboard.
#[derive(Parser, Debug)]
#[command(
    name = "triage",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    /// Run files (JSONL); `-` reads standard input.
    #[arg(value_name = "RUN")]
    runs: Vec<String>,
    /// Where annotations are kept (default: `<run>.triage.jsonl` beside the run).
    #[arg(long, value_name = "PATH")]
    annotations: Option<PathBuf>,
    /// The name recorded with each decision (default: the config's reviewer, $USER, $LOGNAME, the account name, git config user.name).
    #[arg(long, value_name = "NAME")]
    reviewer: Option<String>,
    /// The config file (default: config.toml in the platform config directory).
    #[arg(long, value_name = "PATH", global = true)]
    config: Option<PathBuf>,
    /// Keymap preset (default, vim, emacs) or a keymap file.
    #[arg(long, value_name = "NAME|PATH", global = true)]
    keymap: Option<String>,
    /// Do not capture the mouse.
    #[arg(long)]
    no_mouse: bool,
    /// Lines longer than this are reported as problems instead of parsed
    /// [default: max_line_bytes in the config, else 64 MiB].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    max_line_bytes: Option<u64>,
    /// Follow runs that are still being written: appended lines appear as they land.
    #[arg(short = 'f', long)]
    follow: bool,
    /// Read the runs as this tool's results instead of detecting it from their content:
    /// native, context-probe, promptfoo, inspect, multivon.
    #[arg(long, visible_alias = "run-format", value_name = "NAME", value_parser = parse_run_format)]
    format: Option<RunFormat>,
    /// For an Inspect log: the scorer whose value is each sample's verdict
    /// (default: the first scorer that gives verdicts, as Inspect lists them).
    #[arg(long, value_name = "NAME")]
    scorer: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// `--format NAME` for reading a run: a known format, or a message listing them.
fn parse_run_format(s: &str) -> Result<RunFormat, String> {
    s.parse::<RunFormat>().map_err(|e| e.to_string())
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write a copy of a run in which every annotated record carries a `triage` object.
    Apply {
        /// The run file.
        run: String,
        /// The annotation journal (default: the one `triage RUN` uses).
        #[arg(long, value_name = "PATH")]
        annotations: Option<PathBuf>,
        /// Where to write the copy.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Overwrite OUT if it exists.
        #[arg(long)]
        force: bool,
        /// Read the run as this tool's results instead of detecting it; another tool's
        /// results are written out as native records.
        #[arg(long, visible_alias = "run-format", value_name = "NAME", value_parser = parse_run_format)]
        format: Option<RunFormat>,
        /// For an Inspect log: the scorer whose value is each sample's verdict
        /// (default: the first scorer that gives verdicts).
        #[arg(long, value_name = "NAME")]
        scorer: Option<String>,
    },
    /// Print the key bindings in effect, by mode.
    Keys,
    /// Show where the config file is read from (alone, or `path`), or write a commented example (`init`).
    Config {
        #[command(subcommand)]
        what: Option<ConfigCommand>,
    },
    /// Write a triage report (Markdown), CSV, JSON or replay fixtures of a run's failures.
    #[command(
        after_help = "Examples:\n  triage export run.jsonl > report.md\n  triage export run.jsonl --format csv --all -o pairs.csv\n  triage export run.jsonl --format fixtures --filter 'category:boundary' -o boundary.jsonl"
    )]
    Export {
        /// Run files (JSONL); `-` reads standard input.
        #[arg(value_name = "RUN", required = true)]
        runs: Vec<String>,
        /// What to write.
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = FormatArg::Markdown)]
        format: FormatArg,
        /// Write to PATH (through a temporary file and a rename) instead of standard output.
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
        /// Only the pairs this query selects (the query syntax of the viewer's `/`).
        #[arg(long, value_name = "QUERY")]
        filter: Option<String>,
        /// Every pair, not only the failures.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        load: LoadArgs,
        /// Print when the report was generated (off by default, so reports are reproducible).
        #[arg(long)]
        timestamp: bool,
    },
    /// Print brittleness statistics with Wilson 95% intervals, per group.
    Summary {
        /// Run files (JSONL); `-` reads standard input.
        #[arg(value_name = "RUN", required = true)]
        runs: Vec<String>,
        /// How to print it.
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = SummaryFormatArg::Text)]
        format: SummaryFormatArg,
        /// What the groups are.
        #[arg(long, value_enum, value_name = "FIELD", default_value_t = ByArg::Transformation)]
        by: ByArg,
        /// Only the pairs this query selects.
        #[arg(long, value_name = "QUERY")]
        filter: Option<String>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Gate CI on a run: exit 0 when the gates hold, 1 when one fails, 2 on unusable input.
    #[command(
        long_about = "Gate CI on a run: exit 0 when the gates hold, 1 when one fails, 2 on unusable input.\n\n\
A pair is judged when it passed or failed. Service errors, invalid pairs (a fault of the test), \
boundary observations and unchecked pairs are not judged: they neither raise a rate nor dilute it \
(gate them with --fail-on, --max-unclassified and --strict). The rate gates compare the Wilson 95% \
bound of the rate, never the observed rate (seed 003): 2 failures of 20 is a failure rate of 0.100 \
whose upper bound 0.301 fails --max-failure-rate 0.3.\n\n\
Input that cannot be gated is exit 2: an empty file, a file of no known format, a run from which no \
pair could be read. A file from which only some lines could be read is gated, and its problems are listed.",
        after_help = "Without a gate option the check passes unless --strict finds problems.\n\nExamples:\n  triage check run.jsonl --max-unclassified 0\n  triage check run.jsonl --min-pairs 25 --max-failure-rate 0.2 --by transformation\n  triage check run.jsonl --min-pass-rate 0.85 --filter 'family:question'\n  triage check run.jsonl --fail-on boundary --fail-on invalid-pair --max-failures 0 --strict"
    )]
    Check {
        /// Run files (JSONL); `-` reads standard input.
        #[arg(value_name = "RUN", required = true)]
        runs: Vec<String>,
        /// Fail when more than N failures have no category.
        #[arg(long, value_name = "N")]
        max_unclassified: Option<u64>,
        /// Fail when any failure is classified CATEGORY (a category id; repeatable).
        #[arg(long, value_name = "CATEGORY")]
        fail_on: Vec<String>,
        /// Fail when more than N judged pairs failed (0: no failure at all).
        #[arg(long, value_name = "N")]
        max_failures: Option<u64>,
        /// Fail when the Wilson 95% upper bound of the failure rate (failed / judged pairs)
        /// is above X, a fraction above 0 and at most 1 (for none at all, --max-failures 0).
        #[arg(long, value_name = "X")]
        max_failure_rate: Option<f64>,
        /// Fail when the Wilson 95% lower bound of the pass rate (passed / judged pairs)
        /// is below X, a fraction from 0 and below 1.
        #[arg(long, value_name = "X")]
        min_pass_rate: Option<f64>,
        /// Fail when the Wilson 95% upper bound of the case failure rate (source cases with a
        /// failed pair or trial / cases with a judged pair) is above X.
        #[arg(long, value_name = "X")]
        max_case_failure_rate: Option<f64>,
        /// Fail when fewer than N pairs were judged. Seed 003 gives 25 as the floor for
        /// gating a release on a rate: --min-pairs 25.
        #[arg(long, value_name = "N")]
        min_pairs: Option<u64>,
        /// Apply every rate gate to each group too, and name the groups that fail.
        #[arg(long, value_enum, value_name = "FIELD")]
        by: Option<GateByArg>,
        /// Gate only the pairs this query selects (the query syntax of the viewer's `/`).
        #[arg(long, value_name = "QUERY")]
        filter: Option<String>,
        /// Fail when the run has any problem (a bad line, an unusable field, or a case
        /// that mixes policies or regenerated its repetitions' inputs).
        #[arg(long)]
        strict: bool,
        /// Read the runs as this tool's results instead of detecting it (same as --run-format).
        #[arg(long, value_name = "NAME", value_parser = parse_run_format)]
        format: Option<RunFormat>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Example (bash):\n  triage completions bash > ~/.local/share/bash-completion/completions/triage"
    )]
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to standard output.
    #[command(after_help = "Example:\n  triage man > triage.1 && man ./triage.1")]
    Man,
}

/// How the headless commands read a run.
#[derive(clap::Args, Debug)]
struct LoadArgs {
    /// The annotation journal (default: the one `triage RUN` uses).
    #[arg(long, value_name = "PATH")]
    annotations: Option<PathBuf>,
    /// Lines longer than this are reported as problems instead of parsed
    /// [default: max_line_bytes in the config, else 64 MiB].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    max_line_bytes: Option<u64>,
    /// Read the runs as this tool's results instead of detecting it from their content:
    /// native, context-probe, promptfoo, inspect, multivon.
    #[arg(long, visible_alias = "input-format", value_name = "NAME", value_parser = parse_run_format)]
    run_format: Option<RunFormat>,
    /// For an Inspect log: the scorer whose value is each sample's verdict
    /// (default: the first scorer that gives verdicts, as Inspect lists them).
    #[arg(long, value_name = "NAME")]
    scorer: Option<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum FormatArg {
    /// A triage report to paste into a pull request.
    Markdown,
    /// One row per pair.
    Csv,
    /// One document: summary, pairs, problems.
    Json,
    /// JSON Lines of recorded requests and responses, for replay.
    Fixtures,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
            FormatArg::Fixtures => Format::Fixtures,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum SummaryFormatArg {
    /// An aligned table and the conclusion.
    Text,
    /// A Markdown table and the conclusion.
    Markdown,
    /// The whole summary as JSON.
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ByArg {
    Transformation,
    Family,
    Category,
    Case,
}

impl From<ByArg> for GroupBy {
    fn from(b: ByArg) -> GroupBy {
        match b {
            ByArg::Transformation => GroupBy::Transformation,
            ByArg::Family => GroupBy::Family,
            ByArg::Category => GroupBy::Category,
            ByArg::Case => GroupBy::Case,
        }
    }
}

/// What `triage check --by` groups the pairs by.
#[derive(ValueEnum, Clone, Copy, Debug)]
enum GateByArg {
    Transformation,
    Family,
    Case,
}

impl From<GateByArg> for GroupBy {
    fn from(b: GateByArg) -> GroupBy {
        match b {
            GateByArg::Transformation => GroupBy::Transformation,
            GateByArg::Family => GroupBy::Family,
            GateByArg::Case => GroupBy::Case,
        }
    }
}

#[derive(Subcommand, Debug)]
enum ConfigCommand {
    /// Print the path of the config file and whether it exists.
    Path,
    /// Write a commented example config file where triage reads it; an existing file is left alone.
    Init,
}

/// The system allocator, watched so that running out of memory restores the
/// terminal and says so (`triage::tui::term::Allocator`).
#[global_allocator]
static ALLOCATOR: triage::tui::term::Allocator = triage::tui::term::Allocator;

fn main() -> ExitCode {
    // Printing into a closed pipe (`triage keys | head`) ends quietly, as
    // other command-line tools do, instead of panicking.
    // SAFETY: restoring the default disposition of one signal at start-up,
    // before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Apply {
            run,
            annotations,
            output,
            force,
            format,
            scorer,
        }) => done(
            triage::core::apply::apply(
                Path::new(&run),
                annotations.as_deref(),
                &output,
                force,
                format,
                &ConvertOptions { scorer },
            )
            .map_err(|e| e.to_string()),
        ),
        Some(Command::Config {
            what: Some(ConfigCommand::Init),
        }) => match cli.config.or_else(config::default_path) {
            Some(p) if p.exists() => {
                eprintln!(
                    "triage: {} exists; it is left as it is (triage config path shows it)",
                    p.display()
                );
                ExitCode::from(1)
            }
            Some(p) => {
                let written = p
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| {
                        std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(&p)
                    })
                    .and_then(|mut f| {
                        f.write_all(config::EXAMPLE.as_bytes())
                            .and_then(|()| f.sync_all())
                    });
                match written {
                    Ok(()) => {
                        println!("wrote {}: every setting commented out", p.display());
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("triage: cannot write {}: {e}", p.display());
                        ExitCode::from(2)
                    }
                }
            }
            None => {
                eprintln!("triage: no config directory on this system; use --config PATH");
                ExitCode::from(2)
            }
        },
        Some(Command::Config {
            what: None | Some(ConfigCommand::Path),
        }) => match cli.config.or_else(config::default_path) {
            Some(p) => {
                let state = if p.exists() {
                    "exists"
                } else {
                    "not created yet"
                };
                println!("{} ({state})", p.display());
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("triage: no config directory on this system; use --config PATH");
                ExitCode::from(2)
            }
        },
        Some(Command::Keys) => {
            let cfg = match config::load(cli.config.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            match build_keymap(cli.keymap.as_deref(), &cfg) {
                Ok(km) => {
                    print_keys(&km, &cfg);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Export {
            runs,
            format,
            output,
            filter,
            all,
            load,
            timestamp,
        }) => export_cmd(
            &runs,
            format.into(),
            output.as_deref(),
            filter.as_deref(),
            all,
            &load,
            timestamp,
            cli.config.as_deref(),
        ),
        Some(Command::Summary {
            runs,
            format,
            by,
            filter,
            load,
        }) => summary_cmd(
            &runs,
            format,
            by.into(),
            filter.as_deref(),
            &load,
            cli.config.as_deref(),
        ),
        Some(Command::Check {
            runs,
            max_unclassified,
            fail_on,
            max_failures,
            max_failure_rate,
            min_pass_rate,
            max_case_failure_rate,
            min_pairs,
            by,
            filter,
            strict,
            format,
            mut load,
        }) => {
            let filter = match parse_filter(filter.as_deref()) {
                Ok(f) => f,
                Err(e) => return fail(&e),
            };
            check_cmd(
                &runs,
                Gates {
                    max_unclassified,
                    fail_on,
                    max_failures,
                    max_failure_rate,
                    min_pass_rate,
                    max_case_failure_rate,
                    min_pairs,
                    by: by.map(GroupBy::from),
                    filter,
                    strict,
                },
                {
                    load.run_format = load.run_format.or(format);
                    &load
                },
                cli.config.as_deref(),
            )
        }
        Some(Command::Completions { shell }) => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "triage", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Some(Command::Man) => {
            let mut out = std::io::stdout().lock();
            match render_man(&mut out).and_then(|_| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("triage: cannot write the manual page: {e}");
                    ExitCode::from(1)
                }
            }
        }
        None => open(cli),
    }
}

/// Everything a headless command reads: the run, its annotations, the taxonomy.
struct Loaded {
    index: RunIndex,
    store: Option<AnnotationStore>,
    cfg: config::Config,
}

impl Loaded {
    fn input(&self) -> ExportInput<'_> {
        ExportInput {
            index: &self.index,
            store: self.store.as_ref(),
            taxonomy: &self.cfg.taxonomy,
        }
    }
}

/// Load the config, index the run (with a progress bar on a terminal), and read the journal.
fn load_headless(
    runs: &[String],
    load: &LoadArgs,
    config_path: Option<&Path>,
) -> Result<Loaded, String> {
    let cfg = config::load(config_path).map_err(|e| e.to_string())?;
    load_with_config(runs, load, cfg)
}

/// [`load_headless`] with the config already read.
fn load_with_config(
    runs: &[String],
    load: &LoadArgs,
    cfg: config::Config,
) -> Result<Loaded, String> {
    let opts = OpenOptions {
        max_line_bytes: line_limit(load.max_line_bytes, &cfg),
        follow: false,
        format: load.run_format,
        convert: ConvertOptions {
            scorer: load.scorer.clone(),
        },
    };
    let (runs, skipped) = skip_journals(runs)?;
    for note in skipped {
        eprintln!("triage: note: {note}");
    }
    let mut index = index_with_progress(&runs, &opts)?;
    let store = read_journals(&runs, load.annotations.as_deref())?;
    if let Some(s) = &store {
        index.resolve_keys(s);
    }
    Ok(Loaded { index, store, cfg })
}

/// When a run is read from standard input and that is a terminal, say so
/// before waiting on it: otherwise triage seems to hang on a blank line.
fn announce_terminal_stdin(runs: &[String]) {
    if runs.iter().any(|r| r == "-") && std::io::stdin().is_terminal() {
        eprintln!(
            "triage: reading a run from standard input, which is this terminal: paste or type its JSON lines, then press Ctrl-D at the start of a line to end it (Ctrl-C gives up). To open a file, give its path instead of -."
        );
    }
}

/// Index the run, showing a progress bar on standard error when it is a
/// terminal and the load takes long enough to be worth one.
fn index_with_progress(runs: &[String], opts: &OpenOptions) -> Result<RunIndex, String> {
    announce_terminal_stdin(runs);
    let (mut idx, loader) = index::open_run(runs, opts).map_err(|e| e.to_string())?;
    let show = std::io::stderr().is_terminal();
    let start = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    loop {
        match loader.rx.recv_timeout(Duration::from_millis(50)) {
            Ok(b) => {
                let last = b.finished.is_some();
                idx.apply(b);
                if last {
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if show && bar.is_none() && start.elapsed() > Duration::from_millis(300) {
            let pb = indicatif::ProgressBar::with_draw_target(
                Some(idx.bytes_total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "indexing {wide_bar} {bytes}/{total_bytes} {msg}",
            ) {
                pb.set_style(style);
            }
            bar = Some(pb);
        }
        if let Some(pb) = &bar {
            pb.set_position(idx.bytes_read.min(idx.bytes_total));
            pb.set_message(format!("{} pairs", idx.rows.len()));
        }
    }
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    loader.finish_into(&mut idx);
    for f in &idx.files {
        for note in &f.notes {
            // A note of several lines (the formats tried, one a line) stays
            // on several lines, each made inert.
            let mut lines = note.lines().map(triage::core::text::inert_line);
            if let Some(first) = lines.next() {
                eprintln!(
                    "triage: note: {}: {first}",
                    triage::core::text::inert_line(&f.display)
                );
            }
            for line in lines {
                eprintln!("triage:   {line}");
            }
        }
    }
    Ok(idx)
}

/// The runs' journals, found as the viewer finds them (one per run, the
/// committed one beside a run in a read-only folder too), read as one
/// store; none yet means no annotations.
fn read_journals(
    runs: &[String],
    explicit: Option<&Path>,
) -> Result<Option<AnnotationStore>, String> {
    let (mut specs, notes) =
        annotations::journal_specs(runs, explicit).map_err(|e| format!("triage: {e}"))?;
    for note in notes.iter().filter(|n| n.contains("read-only")) {
        eprintln!("triage: note: {}", triage::core::text::inert_line(note));
    }
    for s in &mut specs {
        s.writable = false;
    }
    match AnnotationStore::open_journals(&specs, "") {
        Ok(Some(store)) => {
            let (lines, more) = store.unreadable();
            if !lines.is_empty() {
                let first = &lines[0];
                eprintln!(
                    "triage: warning: {}{} line(s) of {} could not be read and were skipped (first: line {}, {})",
                    lines.len(),
                    if more { "+" } else { "" },
                    triage::core::text::inert_line(&first.journal.display().to_string()),
                    first.line,
                    first.reason
                );
            }
            Ok(Some(store))
        }
        // Nobody has annotated these runs yet; but a journal named with
        // --annotations must exist, or a typo would silently pass a gate.
        Ok(None) => match explicit {
            Some(path) => Err(format!(
                "triage: --annotations: {} does not exist",
                triage::core::text::inert_line(&path.display().to_string())
            )),
            None => Ok(None),
        },
        Err(e) => Err(format!("triage: {e}")),
    }
}

/// Leave out the files given as runs that are annotation journals (say
/// `triage check *.jsonl` in a folder of runs and their journals), with a
/// note for each; an error when no run is left.
fn skip_journals(runs: &[String]) -> Result<(Vec<String>, Vec<String>), String> {
    let mut kept = Vec::new();
    let mut notes = Vec::new();
    for r in runs {
        if r != "-" && annotations::looks_like_journal(Path::new(r)) {
            notes.push(format!(
                "{} is an annotation journal, not a run: skipped (its decisions are read with its run)",
                triage::core::text::inert_line(r)
            ));
        } else {
            kept.push(r.clone());
        }
    }
    if kept.is_empty() {
        return Err(format!(
            "triage: {} an annotation journal, not a run — give the run file it belongs to (RUN.jsonl for RUN.jsonl.triage.jsonl)",
            if runs.len() == 1 {
                format!("{} is", triage::core::text::inert_line(&runs[0]))
            } else {
                "every file given is".to_string()
            }
        ));
    }
    Ok((kept, notes))
}

/// Parse `--filter`, or say where the query went wrong.
fn parse_filter(filter: Option<&str>) -> Result<Option<query::Query>, String> {
    let Some(text) = filter else { return Ok(None) };
    query::parse(text).map(Some).map_err(|e| {
        let shown = triage::core::text::inert_line(text);
        let col: usize = shown
            .chars()
            .take(e.pos)
            .map(|c| triage::core::text::width(c.encode_utf8(&mut [0; 4])))
            .sum();
        format!(
            "triage: --filter: {} (at character {})\n  {shown}\n  {}^",
            e.message,
            e.pos + 1,
            " ".repeat(col)
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn export_cmd(
    runs: &[String],
    format: Format,
    output: Option<&Path>,
    filter: Option<&str>,
    all: bool,
    load: &LoadArgs,
    timestamp: bool,
    config_path: Option<&Path>,
) -> ExitCode {
    let filter = match parse_filter(filter) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    if let Some(out) = output
        && let Err(e) = check_output(out, runs, load.annotations.as_deref())
    {
        return fail(&e);
    }
    let loaded = match load_headless(runs, load, config_path) {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let opts = ExportOptions {
        all,
        filter,
        generated_at: timestamp.then(annotations::now_rfc3339),
    };
    let input = loaded.input();
    let rows = export::select_rows(&input, &opts);
    let result = match output {
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            export::write(&input, &rows, format, &opts, &mut w).and_then(|_| w.flush())
        }
        Some(path) => write_atomically(path, |w| export::write(&input, &rows, format, &opts, w)),
    };
    match result {
        Ok(()) => {
            if let Some(path) = output {
                eprintln!(
                    "wrote {} ({}, {} {})",
                    path.display(),
                    format,
                    rows.len(),
                    if rows.len() == 1 { "pair" } else { "pairs" }
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&match output {
            Some(path) => format!(
                "triage: cannot write '{}': {e}",
                triage::core::text::inert_line(&path.display().to_string())
            ),
            None => format!("triage: cannot write the export to standard output: {e}"),
        }),
    }
}

/// Refuse an output path that is one of the inputs, a journal of theirs
/// (or its lock, side or recovery file), or a folder.
fn check_output(out: &Path, runs: &[String], journal: Option<&Path>) -> Result<(), String> {
    let shown = triage::core::text::inert_line(&out.display().to_string());
    for r in runs {
        if r != "-" && annotations::same_file(Path::new(r), out) {
            return Err(format!(
                "triage: '{shown}' is the run file itself; triage never modifies a run — choose another path"
            ));
        }
    }
    let mut journals: Vec<PathBuf> = journal.map(Path::to_path_buf).into_iter().collect();
    if journal.is_none() {
        for r in runs.iter().filter(|r| r.as_str() != "-") {
            journals.push(PathBuf::from(format!("{r}.triage.jsonl")));
            if let Ok((path, true)) = annotations::journal_path_for(Path::new(r), None) {
                journals.push(path);
            }
        }
    }
    for j in &journals {
        for owned in annotations::journal_files(j) {
            if annotations::same_file(&owned, out) {
                return Err(format!(
                    "triage: '{shown}' is {}; choose another path",
                    if owned == *j {
                        "the annotation journal"
                    } else {
                        "one of the annotation journal's files"
                    }
                ));
            }
        }
    }
    if out.is_dir() {
        return Err(format!(
            "triage: '{shown}' is a directory; give a file name, such as {}/report.md",
            shown.trim_end_matches('/')
        ));
    }
    Ok(())
}

/// Write through a temporary file in the target's folder, then rename over
/// it; a device or a pipe is written in place.
fn write_atomically(
    path: &Path,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        // A device or a pipe (/dev/stdout, a FIFO): written in place, never
        // renamed over; a full device fails here.
        let mut w = std::io::BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
        f(&mut w)?;
        return w.flush();
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".triage-export-");
    // A report is an ordinary file: 0666 less the umask, not the temp file's 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder.tempfile_in(dir)?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file());
        f(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn summary_cmd(
    runs: &[String],
    format: SummaryFormatArg,
    by: GroupBy,
    filter: Option<&str>,
    load: &LoadArgs,
    config_path: Option<&Path>,
) -> ExitCode {
    let filter = match parse_filter(filter) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let loaded = match load_headless(runs, load, config_path) {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let input = loaded.input();
    let rows = export::select_rows(
        &input,
        &ExportOptions {
            all: true,
            filter,
            generated_at: None,
        },
    );
    let format = match format {
        SummaryFormatArg::Text => SummaryFormat::Text,
        SummaryFormatArg::Markdown => SummaryFormat::Markdown,
        SummaryFormatArg::Json => SummaryFormat::Json,
    };
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    match export::write_summary(&input, &rows, by, format, &mut w).and_then(|_| w.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!(
            "triage: cannot write the summary to standard output: {e}"
        )),
    }
}

fn check_cmd(
    runs: &[String],
    gates: Gates,
    load: &LoadArgs,
    config_path: Option<&Path>,
) -> ExitCode {
    let cfg = match config::load(config_path) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    if let Err(e) = gates.validate(&cfg.taxonomy) {
        return fail(&format!("triage: {e}"));
    }
    let loaded = match load_with_config(runs, load, cfg) {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    if let Some(why) = gate::unusable(&loaded.index) {
        return fail(&why);
    }
    let outcome = gate::check(&loaded.index, loaded.store.as_ref(), &gates);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out
        .write_all(outcome.report.as_bytes())
        .and_then(|()| out.flush())
    {
        return fail(&format!(
            "triage: cannot write the check's report to standard output: {e}"
        ));
    }
    if outcome.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("{msg}");
    ExitCode::from(2)
}

fn done(r: Result<String, String>) -> ExitCode {
    match r {
        Ok(msg) => {
            println!("{msg}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

/// The keymap in effect: `--keymap`, else the config's, else the default,
/// with the config's `[keys.*]` overrides on top.
fn build_keymap(flag: Option<&str>, cfg: &config::Config) -> Result<Keymap, String> {
    let spec = flag.or(cfg.keymap.as_deref()).unwrap_or("default");
    let mut km = Keymap::load(spec).map_err(|e| match (&cfg.source, flag) {
        // Name the config line when the config chose the keymap.
        (Some(p), None) => format!(
            "triage: {}:{}: {e}",
            p.display(),
            config::top_level_line(&cfg.text, "keymap")
        ),
        _ => format!("triage: {e}"),
    })?;
    if let Some(keys) = &cfg.keys {
        let file = cfg
            .source
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "config".into());
        km.apply_overrides(keys, &cfg.text, &file)
            .map_err(|e| format!("triage: {e}"))?;
    }
    check_category_keys(cfg, &km)?;
    Ok(km)
}

fn print_keys(km: &Keymap, cfg: &config::Config) {
    println!(
        "keymap: {}{}",
        km.name,
        if km.counts {
            format!(
                "\n{}",
                triage::tui::app::overlay::help::count_help(km.count_wait)
            )
        } else {
            String::new()
        }
    );
    for mode in Mode::ALL {
        let rows: Vec<_> = km
            .bindings()
            .iter()
            .filter(|(m, _, _)| *m == mode)
            .collect();
        if rows.is_empty() {
            continue;
        }
        println!("\n[{}]", mode.name());
        for (_, seq, action) in rows {
            println!(
                "  {:<16} {:<26} {}",
                seq_to_string(seq),
                action.name(),
                action.description()
            );
        }
    }
    println!("\n[categories]");
    for c in &cfg.taxonomy.categories {
        let key = c.key.map(|k| k.to_string()).unwrap_or_else(|| "-".into());
        println!("  {key:<16} {:<26} {}", c.id, c.name);
    }
}

/// The subcommand names, which a bare run argument must not be mistaken for.
const COMMANDS: [&str; 8] = [
    "apply",
    "keys",
    "config",
    "export",
    "summary",
    "check",
    "completions",
    "man",
];

/// The per-line size cap: `--max-line-bytes`, else the config's
/// `max_line_bytes`, else the built-in limit.
fn line_limit(flag: Option<u64>, cfg: &config::Config) -> usize {
    flag.map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        .or(cfg.max_line_bytes)
        .unwrap_or(index::DEFAULT_MAX_LINE_BYTES)
}

fn open(cli: Cli) -> ExitCode {
    if cli.runs.is_empty() {
        eprintln!(
            "triage: give a run file to open, for example: triage sample-runs/support-urgency.jsonl (triage --help lists the commands)"
        );
        return ExitCode::from(2);
    }
    if let Some(cmd) = cli
        .runs
        .iter()
        .find(|r| COMMANDS.contains(&r.as_str()) && !Path::new(r).exists())
    {
        eprintln!(
            "triage: `{cmd}` is a command: put it first, with its options after it (triage {cmd} --help)"
        );
        return ExitCode::from(2);
    }
    let cfg = match config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let (runs, skipped) = match skip_journals(&cli.runs) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let opts = OpenOptions {
        max_line_bytes: line_limit(cli.max_line_bytes, &cfg),
        follow: cli.follow,
        format: cli.format,
        convert: ConvertOptions {
            scorer: cli.scorer.clone(),
        },
    };
    announce_terminal_stdin(&runs);
    let (idx, loader) = match index::open_run(&runs, &opts) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let reviewer = cli
        .reviewer
        .or(cfg.reviewer.clone())
        .filter(|s| !s.trim().is_empty())
        .or_else(default_reviewer)
        .unwrap_or_else(|| "unknown".to_string());
    if let Some(parent) = cli.annotations.as_deref().and_then(Path::parent) {
        let _ = std::fs::create_dir_all(parent);
    }
    let (store, mut notices) = match open_store(&runs, cli.annotations.as_deref(), &reviewer) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    notices.extend(skipped);
    let keymap = match build_keymap(cli.keymap.as_deref(), &cfg) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut app = effects::new_app(idx, store, cfg.taxonomy.clone());
    app.store_notice = (!notices.is_empty()).then(|| notices.join("; "));
    // Standard input cannot be read twice.
    if !runs.iter().any(|r| r == "-") {
        app.reopen = Some(app::Reopen {
            paths: runs.clone(),
            opts: opts.clone(),
        });
    }
    let theme = Theme::for_name(cfg.theme);
    let mouse = cfg.mouse && !cli.no_mouse;
    match run::run(app, Some(loader), keymap, theme, mouse) {
        Ok(Exit::Quit) => ExitCode::SUCCESS,
        Ok(Exit::Signal(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!(
                "triage: cannot use the terminal ({e}); triage is interactive and needs one — run it in a terminal or over ssh -t"
            );
            ExitCode::from(1)
        }
    }
}

/// A category key must not shadow a binding of the list, detail or global keys.
fn check_category_keys(cfg: &config::Config, km: &Keymap) -> Result<(), String> {
    let file = cfg
        .source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "the default taxonomy".into());
    let at = |id: &str| match config::category_line(&cfg.text, id) {
        0 => String::new(),
        n => format!(":{n}"),
    };
    for c in &cfg.taxonomy.categories {
        let Some(k) = c.key else { continue };
        let Some(chord) = triage::tui::keymap::KeyChord::parse(&k.to_string()) else {
            continue;
        };
        for mode in [Mode::Global, Mode::List, Mode::Detail] {
            if let triage::tui::keymap::Lookup::Action(a) = km.lookup(mode, &[chord]) {
                return Err(format!(
                    "triage: {file}{}: category key `{k}` of `{}` is also bound to `{}` in [{}]; choose another key",
                    at(&c.id),
                    c.id,
                    a.name(),
                    mode.name()
                ));
            }
        }
    }
    Ok(())
}

/// Open the runs' journals (one per run, or `--annotations`), falling back
/// to the data directory for a run whose folder is not writable (and then
/// reading the journal committed beside it too), and say where they went.
fn open_store(
    runs: &[String],
    explicit: Option<&Path>,
    reviewer: &str,
) -> Result<(AnnotationStore, Vec<String>), String> {
    let (specs, mut notices) =
        annotations::journal_specs(runs, explicit).map_err(|e| e.to_string())?;
    let store = AnnotationStore::open_journals(&specs, reviewer)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            "triage: no journal to keep annotations in — pass --annotations PATH".to_string()
        })?;
    if let annotations::Access::ReadOnly { reason } = store.access() {
        notices.push(format!("READ-ONLY: {reason}"));
    }
    Ok((store, notices))
}

/// Who decides, when neither `--reviewer` nor the config names them:
/// `$USER`, then `$LOGNAME`, then the account's name, then `git config
/// user.name`; the first that is not blank.
fn default_reviewer() -> Option<String> {
    let given = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().and_then(given))
        .or_else(|| account_name().and_then(given))
        .or_else(|| {
            let out = std::process::Command::new("git")
                .args(["config", "user.name"])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
                .and_then(given)
        })
}

/// The name of the account this process runs as, from the password database.
fn account_name() -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes into `pwd` and `buf`, which outlive the call,
    // and sets `result` to `&pwd` or null; the name is read before `buf` drops.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: on success pw_name points at a NUL-terminated string in `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// The manual page: clap's sections for the name, synopsis, description
/// and options, then sections of its own. Subcommands are listed with what
/// they do and a pointer to their `--help`, as no `triage-NAME(1)` pages
/// are installed; then the default keys, the files triage reads and writes,
/// and the environment it reads.
fn render_man(w: &mut dyn Write) -> std::io::Result<()> {
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    writeln!(w, ".SH SUBCOMMANDS")?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        roff_item(w, &format!("triage {}", sub.get_name()), &about)?;
    }
    writeln!(
        w,
        ".PP\n{}",
        roff("Each subcommand's options: triage COMMAND --help.")
    )?;
    writeln!(w, ".SH KEYS")?;
    writeln!(
        w,
        "{}",
        roff(
            "The default keymap's keys in the list and the detail; `triage keys` prints every mode's bindings in effect, and ? shows them in the viewer. Space marks a pair and moves down."
        )
    )?;
    let cfg = config::Config::default();
    if let Ok(km) = build_keymap(None, &cfg) {
        for (mode, seq, action) in km.bindings() {
            if mode.name() == "global" || mode.name() == "list" {
                roff_item(w, &seq_to_string(seq), action.description())?;
            }
        }
    }
    writeln!(w, ".SH FILES")?;
    for (name, what) in [
        (
            "~/.config/triage/config.toml",
            "The config file (reviewer, theme, keymap, taxonomy and more); triage config path prints where it is read from, --config PATH reads another.",
        ),
        (
            "RUN.triage.jsonl",
            "The journal of decisions beside each run, one event a line, created by the first decision; a read-only folder keeps it under the data folder instead.",
        ),
        (
            "RUN.triage.jsonl.lock",
            "The lock that serialises writers of one journal.",
        ),
        (
            "RUN.triage.jsonl.unreadable",
            "Journal lines that could not be read, moved aside byte for byte, never dropped.",
        ),
        (
            "RUN.triage.jsonl.recovered.jsonl",
            "Decisions that could not be saved when triage was ended.",
        ),
        (
            "$XDG_DATA_HOME/triage/",
            "The data folder for journals of runs whose folder cannot be written.",
        ),
    ] {
        roff_item(w, name, what)?;
    }
    writeln!(w, ".SH ENVIRONMENT")?;
    for (name, what) in [
        (
            "NO_COLOR",
            "When set and not empty, the screens use no colour.",
        ),
        (
            "XDG_CONFIG_HOME, XDG_DATA_HOME",
            "Where the config file and the data folder live.",
        ),
        (
            "USER, LOGNAME",
            "The reviewer recorded with each decision, when neither --reviewer nor the config names one; then the account name, then git config user.name.",
        ),
    ] {
        roff_item(w, name, what)?;
    }
    man.render_version_section(w)
}

/// One tagged paragraph of the manual page: `term` in bold, then `body`.
fn roff_item(w: &mut dyn Write, term: &str, body: &str) -> std::io::Result<()> {
    writeln!(w, ".TP\n\\fB{}\\fR\n{}", roff(term), roff(body))
}

/// Text as roff shows it: backslashes and hyphens escaped, and a line that
/// would start with a control character made plain.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
