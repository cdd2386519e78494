//! The `triage` command line.
//!
//! `triage RUN...` opens the viewer; `triage apply` writes a copy of a run
//! with its annotations; `triage import` reads a reviewer's decisions from
//! CSV or JSON Lines, `triage agreement` measures two reviewers' Cohen's
//! kappa and `triage merge-journal` is the git merge driver of journals;
//! `triage keys` prints the bindings in effect;
//! `triage export`, `triage summary` and `triage check` write reports and gate
//! CI without a terminal; `triage compare` matches a run with the one before
//! it and can carry its decisions forward; `triage completions` and `triage man` are generated
//! from these definitions. Paths are checked before the terminal is touched,
//! so a missing file or a directory is a one-line error with exit code 2.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use triage::core::annotations::{self, AnnotationStore};
use triage::core::compare::{self, Comparison};
use triage::core::config;
use triage::core::export::{self, ExportInput, ExportOptions, Format, SummaryFormat};
use triage::core::formats::{ConvertOptions, Format as RunFormat};
use triage::core::gate::{self, Baseline, Gates};
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
    /// Blind review: other reviewers' categories and notes, and the suggestion, stay
    /// hidden on a pair until you have decided it.
    #[arg(long)]
    blind: bool,
    /// Compare with the run before this one: a change column, `change:` queries,
    /// the movement in the summary, and decisions carried forward (B).
    #[arg(long, value_name = "OLD")]
    baseline: Option<String>,
    /// The baseline's annotation journal (default: the one `triage OLD` uses).
    #[arg(long, value_name = "PATH", requires = "baseline")]
    baseline_annotations: Option<PathBuf>,
    /// Read the runs as this tool's results instead of detecting it from their content:
    /// native, context-probe, promptfoo, inspect, multivon, checklist.
    #[arg(long, value_name = "NAME", value_parser = parse_run_format, alias = "run-format", alias = "input-format")]
    from: Option<RunFormat>,
    /// Refused with a pointer to --from: --format names what a command writes.
    #[arg(long, value_name = "NAME", hide = true)]
    format: Option<String>,
    /// For an Inspect log: the scorer whose value is each sample's verdict
    /// (default: the first scorer that gives verdicts, as Inspect lists them).
    #[arg(long, value_name = "NAME")]
    scorer: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// `--from NAME`: a known input format, or a message listing them.
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
        /// Where to write the copy; `-` is standard output.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Overwrite OUT if it exists.
        #[arg(long)]
        force: bool,
        /// Read the run as this tool's results instead of detecting it; another tool's
        /// results are written out as native records.
        #[arg(long, value_name = "NAME", value_parser = parse_run_format, alias = "run-format", alias = "input-format")]
        from: Option<RunFormat>,
        /// Refused with a pointer to --from: apply writes native records only.
        #[arg(long, value_name = "NAME", hide = true)]
        format: Option<String>,
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
        /// Write to PATH (through a temporary file and a rename) instead of standard
        /// output; `-` is standard output.
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
        /// Compare with the run before this one: the report gains "Since the last run",
        /// and --filter may name change: (--format fixtures --filter change:fixed).
        #[arg(long, value_name = "OLD")]
        baseline: Option<String>,
        /// The baseline's annotation journal (default: the one `triage OLD` uses).
        #[arg(long, value_name = "PATH", requires = "baseline")]
        baseline_annotations: Option<PathBuf>,
    },
    /// Compare a run with the one before it: what broke, what was fixed, what still fails,
    /// and the decisions carried forward.
    #[command(
        long_about = "Compare a run with the one before it: what broke, what was fixed, what still fails, \
and the decisions carried forward.\n\n\
Pairs are matched by case id, variant id and repetition. Each gets one change: new_failures, fixed, \
still_failing, status_changed (fails in both, another kind: fail, boundary, error, invalid), \
content_changed (the question, state or allowed_changes differ: not comparable), added, removed, \
unchanged_pass. A pair fails when it is a failure (fail, boundary, error, invalid) and passes otherwise \
(pass or unchecked).\n\n\
A decision made on OLD is carried to a pair whose inputs are identical and shown as stale on one whose \
inputs changed. --carry copies the carried decisions of pairs that fail in NEW and have none there \
into NEW's journal, with where they came from; a stale one is never copied.\n\n\
Exit 0 when the comparison was written (and carried), 2 on unusable input or a failed write. \
The JSON names are stable: docs/compare.md.",
        after_help = "Examples:\n  triage compare before.jsonl after.jsonl\n  triage compare before.jsonl after.jsonl --format json | jq '.counts'\n  triage compare before.jsonl after.jsonl --carry --reviewer ana"
    )]
    Compare {
        /// The earlier run.
        #[arg(value_name = "OLD")]
        old: String,
        /// The later run.
        #[arg(value_name = "NEW")]
        new: String,
        /// How to print it.
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = SummaryFormatArg::Text)]
        format: SummaryFormatArg,
        /// Copy the carried decisions into NEW's journal (with the reviewer, date and run they came from).
        #[arg(long)]
        carry: bool,
        /// The name recorded with carried decisions (default: as for the viewer).
        #[arg(long, value_name = "NAME")]
        reviewer: Option<String>,
        /// OLD's annotation journal (default: the one `triage OLD` uses).
        #[arg(long, value_name = "PATH")]
        baseline_annotations: Option<PathBuf>,
        /// NEW's annotation journal is --annotations.
        #[command(flatten)]
        load: LoadArgs,
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
        after_help = "Without a gate option the check passes unless --strict finds problems.\n\nExamples:\n  triage check run.jsonl --max-unclassified 0\n  triage check run.jsonl --min-pairs 25 --max-failure-rate 0.2 --by transformation\n  triage check run.jsonl --min-pass-rate 0.85 --filter 'family:question'\n  triage check run.jsonl --fail-on boundary --fail-on invalid-pair --max-failures 0 --strict\n  triage check run.jsonl --min-kappa 0.7 --between ana,gpt-judge --min-pairs 50\n  triage check after.jsonl --baseline before.jsonl --max-new-failures 0"
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
        /// Fail when fewer than N pairs were judged (and, with --min-kappa, when the two
        /// reviewers both decided fewer than N). Seed 003 gives 25 as the floor for
        /// gating a release on a rate: --min-pairs 25.
        #[arg(long, value_name = "N")]
        min_pairs: Option<u64>,
        /// Fail when the lower bound of the 95% interval of Cohen's kappa between the two
        /// reviewers of --between is under X (seed 003: an automated judge needs 0.70 against
        /// senior engineers before it gates releases).
        #[arg(long, value_name = "X", allow_negative_numbers = true)]
        min_kappa: Option<f64>,
        /// The two reviewers --min-kappa compares, as A,B (`suggestions`: the suggestion engine).
        #[arg(long, value_name = "A,B")]
        between: Option<String>,
        /// Apply every rate gate to each group too, and name the groups that fail.
        #[arg(long, value_enum, value_name = "FIELD")]
        by: Option<GateByArg>,
        /// Gate only the pairs this query selects (the query syntax of the viewer's `/`).
        #[arg(long, value_name = "QUERY")]
        filter: Option<String>,
        /// Fail when the run has any problem (a bad line, an unusable field, a case
        /// that mixes policies or regenerated its repetitions' inputs, or a converted
        /// variant whose base is not in the run).
        #[arg(long)]
        strict: bool,
        /// Refused with a pointer to --from: check writes only its report.
        #[arg(long, value_name = "NAME", hide = true)]
        format: Option<String>,
        /// Compare with the run before this one (for --max-new-failures; the report
        /// says what changed since).
        #[arg(long, value_name = "OLD")]
        baseline: Option<String>,
        /// The baseline's annotation journal (default: the one `triage OLD` uses).
        #[arg(long, value_name = "PATH", requires = "baseline")]
        baseline_annotations: Option<PathBuf>,
        /// Fail when more than N pairs fail that passed in the baseline (a regression gate;
        /// needs --baseline).
        #[arg(long, value_name = "N", requires = "baseline")]
        max_new_failures: Option<u64>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Read decisions from a CSV or JSON Lines file into a run's journal, as one reviewer's.
    #[command(
        long_about = "Read decisions from a CSV or JSON Lines file into a run's journal, as one reviewer's.\n\n\
The file names each pair by case_id and variant_id (and repetition, for repeated trials) and gives its \
category id, with an optional note: a CSV file with a header row naming those columns (in any order; \
other columns are ignored), or one JSON object per line with those members. The format is taken from \
the extension (.csv, .jsonl), else from the first character.\n\n\
A row that matches no pair of the run, matches several, names an unknown category, repeats an earlier \
row's pair or cannot be read is a problem, printed with the file's line. With any problem nothing is \
imported (exit 2) unless --partial is given; then the other rows are. A row equal to the reviewer's \
current decision is not written again, so importing a file twice writes it once.",
        after_help = "Examples:\n  triage import run.jsonl judge-labels.csv --reviewer gpt-judge\n  triage import run.jsonl colleague.jsonl --reviewer bob --partial\n  triage agreement run.jsonl --between ana,gpt-judge"
    )]
    Import {
        /// The run file the decisions are on.
        run: String,
        /// The decisions: CSV or JSON Lines.
        file: PathBuf,
        /// Whose decisions these are (a colleague, a judge model).
        #[arg(long, value_name = "NAME", required = true)]
        reviewer: String,
        /// Import the rows without problems even when some rows have one.
        #[arg(long)]
        partial: bool,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Measure how two reviewers agree: Cohen's kappa with its 95% interval, per category, and the confusion matrix.
    #[command(
        long_about = "Measure how two reviewers agree over the pairs both gave a category: Cohen's kappa with \
its 95% interval (the large-sample standard error of Fleiss, Cohen and Everitt, 1969), the observed \
and the chance agreement, the number of pairs compared, each category's agreement, and the confusion \
matrix.\n\n\
`suggestions` stands for triage's suggestion engine, on either side: --between ana,suggestions \
calibrates the engine against ana (pairs where ana accepted the suggestion are left out, and \
counted). Without --between, every pair of reviewers who decided some pair is compared.",
        after_help = "Examples:\n  triage agreement run.jsonl --between ana,bob\n  triage agreement run.jsonl --between ana,suggestions --format json\n  triage check run.jsonl --min-kappa 0.7 --between ana,gpt-judge --min-pairs 50"
    )]
    Agreement {
        /// Run files (JSONL); `-` reads standard input.
        #[arg(value_name = "RUN", required = true)]
        runs: Vec<String>,
        /// The two reviewers to compare, as A,B (`suggestions`: the suggestion engine).
        #[arg(long, value_name = "A,B")]
        between: Option<String>,
        /// How to print it.
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = SummaryFormatArg::Text)]
        format: SummaryFormatArg,
        /// Only the pairs this query selects.
        #[arg(long, value_name = "QUERY")]
        filter: Option<String>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Merge two versions of a journal by event: the git merge driver for `*.triage.jsonl`.
    #[command(
        long_about = "Merge two versions of a journal by event, as a git merge driver: BASE is the common \
ancestor, OURS and THEIRS the two sides; the result is written over OURS. Each reviewer's latest \
decision on each pair (and each pair's resolution) is kept: a decision changed on one side only takes \
that side's; changed on both, the later one. Lines that cannot be read are kept, never dropped.\n\n\
Install it once per clone, and name it in .gitattributes:\n\n  \
git config merge.triage-journal.driver 'triage merge-journal %O %A %B'\n  \
echo '*.triage.jsonl merge=triage-journal' >> .gitattributes",
        after_help = "Example (what git runs):\n  triage merge-journal .merge_file_base .merge_file_ours .merge_file_theirs"
    )]
    MergeJournal {
        /// The common ancestor's journal (git's %O).
        base: PathBuf,
        /// Our side (git's %A); the merged journal is written over it.
        ours: PathBuf,
        /// Their side (git's %B).
        theirs: PathBuf,
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
#[derive(clap::Args, Debug, Clone)]
struct LoadArgs {
    /// The annotation journal (default: the one `triage RUN` uses).
    #[arg(long, value_name = "PATH")]
    annotations: Option<PathBuf>,
    /// Lines longer than this are reported as problems instead of parsed
    /// [default: max_line_bytes in the config, else 64 MiB].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    max_line_bytes: Option<u64>,
    /// Read the runs as this tool's results instead of detecting it from their content:
    /// native, context-probe, promptfoo, inspect, multivon, checklist.
    #[arg(long, value_name = "NAME", value_parser = parse_run_format, alias = "run-format", alias = "input-format")]
    from: Option<RunFormat>,
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
    /// The variant's transformation.
    Transformation,
    /// The transformation's family.
    Family,
    /// The reviewer's category of each failure (passed pairs in one group).
    Category,
    /// The source case.
    Case,
    /// The model id (a promptfoo provider, an Inspect or multivon model).
    Model,
}

impl From<ByArg> for GroupBy {
    fn from(b: ByArg) -> GroupBy {
        match b {
            ByArg::Transformation => GroupBy::Transformation,
            ByArg::Family => GroupBy::Family,
            ByArg::Category => GroupBy::Category,
            ByArg::Case => GroupBy::Case,
            ByArg::Model => GroupBy::Model,
        }
    }
}

/// What `triage check --by` groups the pairs by.
#[derive(ValueEnum, Clone, Copy, Debug)]
enum GateByArg {
    /// The variant's transformation.
    Transformation,
    /// The transformation's family.
    Family,
    /// The source case.
    Case,
    /// The model id (a promptfoo provider, an Inspect or multivon model).
    Model,
}

impl From<GateByArg> for GroupBy {
    fn from(b: GateByArg) -> GroupBy {
        match b {
            GateByArg::Transformation => GroupBy::Transformation,
            GateByArg::Family => GroupBy::Family,
            GateByArg::Case => GroupBy::Case,
            GateByArg::Model => GroupBy::Model,
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
            from,
            format,
            scorer,
        }) => {
            if let Some(given) = format {
                return refuse_format(&given, "apply writes native records only");
            }
            // (To standard output, the summary goes to standard error.)
            let to_file = file_output(&output);
            let applied = triage::core::apply::apply(
                Path::new(&run),
                annotations.as_deref(),
                to_file,
                force,
                from,
                &ConvertOptions {
                    scorer,
                    ..ConvertOptions::default()
                },
            )
            .map_err(|e| e.to_string());
            match applied {
                Ok(summary) if to_file.is_none() => {
                    eprintln!("{summary}");
                    ExitCode::SUCCESS
                }
                applied => done(applied),
            }
        }
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
            baseline,
            baseline_annotations,
        }) => export_cmd(
            &runs,
            format.into(),
            output.as_deref().and_then(file_output),
            filter.as_deref(),
            all,
            &load,
            timestamp,
            baseline.map(|old| (old, baseline_annotations)),
            cli.config.as_deref(),
        ),
        Some(Command::Compare {
            old,
            new,
            format,
            carry,
            reviewer,
            baseline_annotations,
            load,
        }) => compare_cmd(
            &old,
            &new,
            format,
            carry,
            reviewer,
            baseline_annotations,
            &load,
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
            min_kappa,
            between,
            by,
            filter,
            strict,
            format,
            baseline,
            baseline_annotations,
            max_new_failures,
            load,
        }) => {
            if let Some(given) = format {
                return refuse_format(&given, "check writes only its report");
            }
            let filter = match parse_filter(filter.as_deref()) {
                Ok(f) => f,
                Err(e) => return fail(&e),
            };
            let between = match between
                .as_deref()
                .map(triage::core::agreement::parse_between)
                .transpose()
            {
                Ok(b) => b,
                Err(e) => return fail(&format!("triage: {e}")),
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
                    min_kappa,
                    between,
                    max_new_failures,
                },
                &load,
                baseline.map(|old| (old, baseline_annotations)),
                cli.config.as_deref(),
            )
        }
        Some(Command::Import {
            run,
            file,
            reviewer,
            partial,
            load,
        }) => import_cmd(
            &run,
            &file,
            &reviewer,
            partial,
            &load,
            cli.config.as_deref(),
        ),
        Some(Command::Agreement {
            runs,
            between,
            format,
            filter,
            load,
        }) => agreement_cmd(
            &runs,
            between.as_deref(),
            format,
            filter.as_deref(),
            &load,
            cli.config.as_deref(),
        ),
        Some(Command::MergeJournal { base, ours, theirs }) => {
            merge_journal_cmd(&base, &ours, &theirs)
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
            baseline: None,
        }
    }

    /// [`Loaded::input`] compared with `old`.
    fn input_against<'a>(&'a self, old: Option<&'a BaselineRun>) -> ExportInput<'a> {
        ExportInput {
            baseline: old.map(|b| triage::core::export::ExportBaseline {
                old: &b.index,
                old_store: b.store.as_ref(),
                comparison: &b.comparison,
            }),
            ..self.input()
        }
    }
}

/// The run a command compares with (`--baseline OLD`): its index, its
/// journal, and the match with the run being read.
struct BaselineRun {
    index: RunIndex,
    store: Option<AnnotationStore>,
    comparison: Comparison,
}

/// Read `old` as the commands read a run (its journal from `annotations`,
/// else beside it), without a progress bar; refuse one with no pair.
fn read_baseline(
    old: &str,
    annotations: Option<PathBuf>,
    load: &LoadArgs,
    cfg: &config::Config,
) -> Result<Loaded, String> {
    let args = LoadArgs {
        annotations,
        ..load.clone()
    };
    let loaded = load_with(&[old.to_string()], &args, cfg.clone(), false)?;
    if let Some(why) = gate::unusable(&loaded.index) {
        return Err(format!("{why} (the baseline)"));
    }
    Ok(loaded)
}

/// Read the runs (the config, the index with a progress bar, the journal)
/// and, at the same time on another thread, the baseline when there is
/// one; then match the baseline with the runs.
fn load_against(
    runs: &[String],
    load: &LoadArgs,
    cfg: config::Config,
    baseline: Option<(String, Option<PathBuf>)>,
) -> Result<(Loaded, Option<BaselineRun>), String> {
    let (loaded, old) = std::thread::scope(|s| {
        let old = baseline.map(|(old, journal)| {
            let cfg = cfg.clone();
            s.spawn(move || read_baseline(&old, journal, load, &cfg))
        });
        let loaded = load_with_config(runs, load, cfg);
        let old = old.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("triage: reading the baseline failed".to_string()))
        });
        (loaded, old)
    });
    let loaded = loaded?;
    let Some(old) = old.transpose()? else {
        return Ok((loaded, None));
    };
    let comparison =
        compare::compare(&old.index, &loaded.index).map_err(|e| format!("triage: {e}"))?;
    let base = BaselineRun {
        index: old.index,
        store: old.store,
        comparison,
    };
    Ok((loaded, Some(base)))
}

/// `change:` in a filter needs a baseline to compare with.
fn check_change_filter(filter: Option<&query::Query>, baseline: bool) -> Result<(), String> {
    if !baseline && filter.is_some_and(|q| q.names(query::Field::Change)) {
        return Err(
            "triage: --filter: `change:` needs a run to compare with — add --baseline OLD"
                .to_string(),
        );
    }
    Ok(())
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
    load_with(runs, load, cfg, true)
}

/// [`load_with_config`], with a progress bar on a terminal or without.
fn load_with(
    runs: &[String],
    load: &LoadArgs,
    cfg: config::Config,
    progress: bool,
) -> Result<Loaded, String> {
    let opts = OpenOptions {
        max_line_bytes: line_limit(load.max_line_bytes, &cfg),
        follow: false,
        format: load.from,
        convert: ConvertOptions {
            scorer: load.scorer.clone(),
            ..ConvertOptions::default()
        },
    };
    let (runs, skipped) = skip_journals(runs)?;
    for note in skipped {
        eprintln!("triage: note: {note}");
    }
    let mut index = index_with_progress(&runs, &opts, progress)?;
    let store = read_journals(&runs, load.annotations.as_deref())?;
    if let Some(s) = &store {
        index.resolve_keys(s);
    }
    Ok(Loaded { index, store, cfg })
}

/// Open the runs as [`index::open_run`] does. Converting another tool's
/// file reads all of it before the index starts, so while that takes long
/// a progress bar on standard error (when it is a terminal) says how far
/// the reading got.
fn open_run_with_progress(
    runs: &[String],
    opts: &OpenOptions,
    progress: bool,
) -> Result<(RunIndex, index::Loader), triage::core::load::open::OpenError> {
    let show = progress && std::io::stderr().is_terminal();
    if !show {
        return index::open_run(runs, opts);
    }
    let progress = triage::core::formats::Progress::default();
    let mut opts = opts.clone();
    opts.convert.progress = Some(progress.clone());
    let total: u64 = runs
        .iter()
        .filter(|r| r.as_str() != "-")
        .filter_map(|r| std::fs::metadata(r).ok())
        .map(|m| m.len())
        .sum();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let shower = {
        let done = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let after = progress_after();
            let mut bar: Option<indicatif::ProgressBar> = None;
            loop {
                let read = progress.read();
                if bar.is_none() && (after.is_zero() || read > 0 && start.elapsed() > after) {
                    bar = Some(byte_bar(
                        total,
                        "reading {wide_bar} {bytes}/{total_bytes} {elapsed}",
                    ));
                }
                if let Some(pb) = &bar {
                    pb.set_position(read.min(total));
                }
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                // Woken early when the opening is done.
                std::thread::park_timeout(Duration::from_millis(50));
            }
            if let Some(pb) = bar {
                pb.finish_and_clear();
            }
        })
    };
    let opened = index::open_run(runs, &opts);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    shower.thread().unpark();
    let _ = shower.join();
    opened
}

/// How long reading or indexing a run goes on before a progress bar is
/// shown: 300 ms, or `TRIAGE_PROGRESS_AFTER_MS` milliseconds (0 shows it
/// at once: the tests do, so that they do not depend on how fast the
/// machine reads).
fn progress_after() -> Duration {
    std::env::var("TRIAGE_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map_or(Duration::from_millis(300), Duration::from_millis)
}

/// A progress bar on standard error over `total` bytes, drawn with `template`.
fn byte_bar(total: u64, template: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        pb.set_style(style);
    }
    pb
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
fn index_with_progress(
    runs: &[String],
    opts: &OpenOptions,
    progress: bool,
) -> Result<RunIndex, String> {
    announce_terminal_stdin(runs);
    let (mut idx, loader) =
        open_run_with_progress(runs, opts, progress).map_err(|e| e.to_string())?;
    let show = progress && std::io::stderr().is_terminal();
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
        if show && bar.is_none() && start.elapsed() >= progress_after() {
            bar = Some(byte_bar(
                idx.bytes_total,
                "indexing {wide_bar} {bytes}/{total_bytes} {msg}",
            ));
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
    baseline: Option<(String, Option<PathBuf>)>,
    config_path: Option<&Path>,
) -> ExitCode {
    let filter = match parse_filter(filter) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    if let Err(e) = check_change_filter(filter.as_ref(), baseline.is_some()) {
        return fail(&e);
    }
    if let Some(out) = output
        && let Err(e) = check_output(out, runs, load.annotations.as_deref())
    {
        return fail(&e);
    }
    let cfg = match config::load(config_path) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let (loaded, old) = match load_against(runs, load, cfg, baseline) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let opts = ExportOptions {
        all,
        filter,
        generated_at: timestamp.then(annotations::now_rfc3339),
    };
    let input = loaded.input_against(old.as_ref());
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
    baseline: Option<(String, Option<PathBuf>)>,
    config_path: Option<&Path>,
) -> ExitCode {
    if let Err(e) = check_change_filter(gates.filter.as_ref(), baseline.is_some()) {
        return fail(&e);
    }
    let cfg = match config::load(config_path) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    if let Err(e) = gates.validate(&cfg.taxonomy) {
        return fail(&format!("triage: {e}"));
    }
    let (loaded, old) = match load_against(runs, load, cfg, baseline) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    if let Some(why) = gate::unusable(&loaded.index) {
        return fail(&why);
    }
    let outcome = gate::check_against(
        &loaded.index,
        loaded.store.as_ref(),
        &gates,
        old.as_ref().map(|b| Baseline {
            old: &b.index,
            comparison: &b.comparison,
        }),
    );
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

fn agreement_cmd(
    runs: &[String],
    between: Option<&str>,
    format: SummaryFormatArg,
    filter: Option<&str>,
    load: &LoadArgs,
    config_path: Option<&Path>,
) -> ExitCode {
    use triage::core::agreement;
    let between = match between.map(agreement::parse_between).transpose() {
        Ok(b) => b,
        Err(e) => return fail(&format!("triage: {e}")),
    };
    let filter = match parse_filter(filter) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let loaded = match load_headless(runs, load, config_path) {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let Some(store) = loaded.store.as_ref() else {
        return fail(
            "triage: nobody has decided a pair of this run yet: there is nothing to compare (triage import brings in a colleague's or a judge's decisions)",
        );
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
    let comparisons = match &between {
        Some((a, b)) => {
            let known = store.reviewers();
            for who in [a, b] {
                if who != agreement::SUGGESTIONS && !known.contains(&who.as_str()) {
                    eprintln!(
                        "triage: note: {} gave no pair a category; the reviewers who did: {}",
                        triage::core::text::inert_line(who),
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            triage::core::text::inert_line(&known.join(", "))
                        }
                    );
                }
            }
            vec![(a.clone(), b.clone())]
        }
        None => agreement::every_pair(store),
    };
    if comparisons.is_empty() {
        let known = store.reviewers();
        return fail(&format!(
            "triage: only {} gave pairs a category: there is no pair of reviewers to compare; name one with --between {},{}",
            triage::core::text::inert_line(&known.join(", ")),
            triage::core::text::inert_line(known.first().copied().unwrap_or("NAME")),
            agreement::SUGGESTIONS
        ));
    }
    let reports: Vec<agreement::Report> = comparisons
        .iter()
        .map(|(a, b)| agreement::compare(&loaded.index, store, &loaded.cfg.taxonomy, &rows, a, b))
        .collect();
    let format = match format {
        SummaryFormatArg::Text => agreement::Format::Text,
        SummaryFormatArg::Markdown => agreement::Format::Markdown,
        SummaryFormatArg::Json => agreement::Format::Json,
    };
    let text = agreement::render(&reports, format, between.is_some());
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!(
            "triage: cannot write the agreement to standard output: {e}"
        )),
    }
}

fn merge_journal_cmd(base: &Path, ours: &Path, theirs: &Path) -> ExitCode {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| {
            format!(
                "triage: merge-journal: cannot read {}: {e}",
                triage::core::text::inert_line(&p.display().to_string())
            )
        })
    };
    let (b, o, t) = match (read(base), read(ours), read(theirs)) {
        (Ok(b), Ok(o), Ok(t)) => (b, o, t),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return fail(&e),
    };
    let merged = annotations::merge_journals(&b, &o, &t);
    if let Err(e) = write_atomically(ours, |w| w.write_all(&merged.text)) {
        return fail(&format!("triage: merge-journal: {e}"));
    }
    eprintln!(
        "triage: merged journal: {}{}",
        triage::core::text::plural(merged.events as u64, "event", "events"),
        if merged.both_changed > 0 {
            format!(
                "; {} changed on both sides, the later decision kept",
                triage::core::text::plural(merged.both_changed as u64, "decision", "decisions")
            )
        } else {
            String::new()
        }
    );
    ExitCode::SUCCESS
}

fn import_cmd(
    run: &str,
    file: &Path,
    reviewer: &str,
    partial: bool,
    load: &LoadArgs,
    config_path: Option<&Path>,
) -> ExitCode {
    use triage::core::import;
    use triage::core::text::inert_line;
    let reviewer = reviewer.trim();
    if reviewer.is_empty() {
        return fail("triage: --reviewer: give the name the decisions are recorded under");
    }
    if reviewer == triage::core::agreement::SUGGESTIONS {
        return fail(&format!(
            "triage: --reviewer: `{}` stands for triage's suggestion engine in triage agreement; record these decisions under another name",
            triage::core::agreement::SUGGESTIONS
        ));
    }
    let shown = inert_line(&file.display().to_string());
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => return fail(&format!("triage: cannot read {shown}: {e}")),
    };
    let cfg = match config::load(config_path) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let opts = OpenOptions {
        max_line_bytes: line_limit(load.max_line_bytes, &cfg),
        follow: false,
        format: load.from,
        convert: ConvertOptions {
            scorer: load.scorer.clone(),
            ..ConvertOptions::default()
        },
    };
    let runs = vec![run.to_string()];
    let (runs, _) = match skip_journals(&runs) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let mut index = match index_with_progress(&runs, &opts, true) {
        Ok(i) => i,
        Err(e) => return fail(&e),
    };
    let (rows, mut problems) = import::read(&bytes, import::FileFormat::detect(file, &bytes));
    let (changes, more) = import::plan(&mut index, &cfg.taxonomy, &rows);
    problems.extend(more);
    problems.sort_by_key(|p| p.line);
    for p in &problems {
        eprintln!("triage: {shown}:{}: {}", p.line, p.kind);
    }
    if !problems.is_empty() && !partial {
        return fail(&format!(
            "triage: nothing imported: {} in {shown}; fix {}, or pass --partial to import the other {}",
            triage::core::text::plural(
                problems.len() as u64,
                "row has a problem",
                "rows have a problem"
            ),
            if problems.len() == 1 { "it" } else { "them" },
            triage::core::text::plural(changes.len() as u64, "row", "rows"),
        ));
    }
    if changes.is_empty() {
        return fail(&format!("triage: {shown} holds no decision to import"));
    }
    let (mut store, notices) = match open_store(&runs, load.annotations.as_deref(), reviewer) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    for n in notices {
        eprintln!("triage: note: {}", inert_line(&n));
    }
    let mut replaced = 0;
    let total = changes.len();
    let changes: Vec<_> = changes
        .into_iter()
        .filter(|c| match store.mine(&c.key) {
            Some(a) if a.category == c.category && a.note == c.note => false,
            Some(_) => {
                replaced += 1;
                true
            }
            None => true,
        })
        .collect();
    let unchanged = total - changes.len();
    let written = changes.len();
    if written > 0
        && let Err(e) = store.apply(changes)
    {
        eprintln!("triage: {e}");
        for r in store.recover() {
            eprintln!("triage: {r}");
            if let annotations::Recovery::Lines { lines, .. } = &r {
                for l in lines {
                    eprintln!("{l}");
                }
            }
        }
        return ExitCode::from(1);
    }
    let mut said = format!(
        "imported {} by {} into {}",
        triage::core::text::plural(written as u64, "decision", "decisions"),
        inert_line(reviewer),
        inert_line(&store.path().display().to_string())
    );
    if replaced > 0 {
        said.push_str(&format!(
            "; {replaced} replaced an earlier decision of {}",
            inert_line(reviewer)
        ));
    }
    if unchanged > 0 {
        said.push_str(&format!(
            "; {unchanged} already recorded, left as they were"
        ));
    }
    if !problems.is_empty() {
        said.push_str(&format!(
            "; {} skipped (--partial)",
            triage::core::text::plural(problems.len() as u64, "row", "rows")
        ));
    }
    println!("{said}");
    ExitCode::SUCCESS
}

#[allow(clippy::too_many_arguments)]
fn compare_cmd(
    old: &str,
    new: &str,
    format: SummaryFormatArg,
    carry: bool,
    reviewer: Option<String>,
    old_journal: Option<PathBuf>,
    load: &LoadArgs,
    config_path: Option<&Path>,
) -> ExitCode {
    let cfg = match config::load(config_path) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let (mut loaded, base) = match load_against(
        &[new.to_string()],
        load,
        cfg,
        Some((old.to_string(), old_journal)),
    ) {
        Ok((l, Some(b))) => (l, b),
        Ok((_, None)) => return fail("triage: no baseline was read"),
        Err(e) => return fail(&e),
    };
    if let Some(why) = gate::unusable(&loaded.index) {
        return fail(&why);
    }
    let runs = compare::Runs {
        old: &base.index,
        old_store: base.store.as_ref(),
        new: &loaded.index,
        new_store: loaded.store.as_ref(),
    };
    let plan = base.comparison.carry_plan(runs);
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let written = match format {
        SummaryFormatArg::Text => compare::report::write_text(&mut w, &base.comparison, runs),
        SummaryFormatArg::Markdown => export::since::write_markdown(&mut w, &base.comparison, runs),
        SummaryFormatArg::Json => compare::report::write_json(&mut w, &base.comparison, runs),
    };
    if let Err(e) = written.and_then(|()| w.flush()) {
        return fail(&format!(
            "triage: cannot write the comparison to standard output: {e}"
        ));
    }
    drop(w);
    if !carry {
        return ExitCode::SUCCESS;
    }
    if plan.is_empty() {
        eprintln!(
            "triage: no decision to carry: no pair that fails in both runs with identical inputs has a decision in the baseline's journal and none in the new one"
        );
        return ExitCode::SUCCESS;
    }
    let reviewer = reviewer
        .or(loaded.cfg.reviewer.clone())
        .filter(|s| !s.trim().is_empty())
        .or_else(default_reviewer)
        .unwrap_or_else(|| "unknown".to_string());
    let changes = match Comparison::carry_changes(&mut loaded.index, &plan) {
        Ok(c) => c,
        Err(e) => return fail(&format!("triage: {}: {e}", loaded.index.display_name())),
    };
    let (mut store, notices) =
        match open_store(&[new.to_string()], load.annotations.as_deref(), &reviewer) {
            Ok(x) => x,
            Err(e) => return fail(&e),
        };
    for n in notices {
        eprintln!("triage: note: {}", triage::core::text::inert_line(&n));
    }
    match store.carry(changes, &|_| Vec::new()) {
        Ok(_) => {
            eprintln!(
                "carried {} from {} into {}",
                triage::core::text::plural(plan.len() as u64, "decision", "decisions"),
                triage::core::text::inert_line(&base.index.display_name()),
                triage::core::text::inert_line(&store.path().display().to_string())
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!(
            "triage: {e}; the decisions stay in the baseline's journal — run triage compare --carry again"
        )),
    }
}

/// `--format` on a command that reads runs and writes no format of its own:
/// a one-line refusal pointing at `--from`, exit 2.
fn refuse_format(given: &str, why: &str) -> ExitCode {
    let from = match given.parse::<RunFormat>() {
        Ok(f) => format!("--from {f}"),
        Err(_) => format!(
            "--from NAME ({})",
            RunFormat::ALL.map(|f| f.name()).join(", ")
        ),
    };
    fail(&format!(
        "triage: --format names an output format, and {why}; to choose how the run is read, use {from}"
    ))
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("{msg}");
    ExitCode::from(2)
}

/// The file an `-o` names: `-` is standard output (as a run named `-` is
/// standard input), no file.
fn file_output(output: &Path) -> Option<&Path> {
    (output != Path::new("-")).then_some(output)
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
const COMMANDS: [&str; 12] = [
    "apply",
    "compare",
    "merge-journal",
    "import",
    "agreement",
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
    if let Some(given) = &cli.format {
        return refuse_format(given, "the viewer writes none");
    }
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
        format: cli.from,
        convert: ConvertOptions {
            scorer: cli.scorer.clone(),
            ..ConvertOptions::default()
        },
    };
    announce_terminal_stdin(&runs);
    let (idx, loader) = match open_run_with_progress(&runs, &opts, true) {
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
    // The baseline is read whole before the screen opens (its journal
    // read-only); the comparison runs once this run is indexed.
    let baseline = match cli.baseline.as_deref() {
        Some(old) => {
            let args = LoadArgs {
                annotations: cli.baseline_annotations.clone(),
                max_line_bytes: cli.max_line_bytes,
                from: cli.from,
                scorer: cli.scorer.clone(),
            };
            match load_with_config(&[old.to_string()], &args, cfg.clone()) {
                Ok(l) => match gate::unusable(&l.index) {
                    Some(why) => {
                        eprintln!("{why} (the baseline)");
                        return ExitCode::from(2);
                    }
                    None => Some(Box::new(app::baseline::Baseline::new(l.index, l.store))),
                },
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            }
        }
        None => None,
    };
    let mut app = effects::new_app(idx, store, cfg.taxonomy.clone());
    app.baseline = baseline;
    effects::compare_baseline(&mut app);
    app.store_notice = (!notices.is_empty()).then(|| notices.join("; "));
    if cli.blind {
        app.set_blind(true);
    }
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
