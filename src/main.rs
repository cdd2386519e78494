//! The `triage` command line.
//!
//! `triage RUN...` opens the viewer; `triage apply` writes a copy of a run
//! with its annotations; `triage keys` prints the bindings in effect. Paths
//! are checked before the terminal is touched, so a missing file or a
//! directory is a one-line error with exit code 2.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use triage::core::annotations::{self, AnnotationStore};
use triage::core::config;
use triage::core::index::{self, OpenOptions};
use triage::tui::app::App;
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
    /// The name recorded with each decision (default: $USER).
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
    /// Lines longer than this are reported as problems instead of parsed.
    #[arg(long, value_name = "BYTES", default_value_t = index::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    #[command(subcommand)]
    command: Option<Command>,
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
    },
    /// Print the key bindings in effect, by mode.
    Keys,
    /// Show where the config file is read from.
    Config {
        #[command(subcommand)]
        what: ConfigCommand,
    },
}

#[derive(Subcommand, Debug)]
enum ConfigCommand {
    /// Print the path of the config file.
    Path,
}

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
        }) => done(triage::core::apply::apply(
            Path::new(&run),
            annotations.as_deref(),
            &output,
            force,
        )),
        Some(Command::Config {
            what: ConfigCommand::Path,
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
        None => open(cli),
    }
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
            " (counts: 5j repeats j)"
        } else {
            ""
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
        .find(|r| ["apply", "keys", "config"].contains(&r.as_str()) && !Path::new(r).exists())
    {
        eprintln!(
            "triage: `{cmd}` is a command: put it first, with its options after it (triage {cmd} --help)"
        );
        return ExitCode::from(2);
    }
    let opts = OpenOptions {
        max_line_bytes: cli.max_line_bytes,
    };
    let (idx, loader) = match index::open_run(&cli.runs, &opts) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let cfg = match config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let reviewer = cli
        .reviewer
        .or(cfg.reviewer.clone())
        .or_else(|| std::env::var("USER").ok())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let run_path = PathBuf::from(&cli.runs[0]);
    // Standard input has no folder to sit beside: keep its journal in the data directory.
    let explicit = match (&cli.annotations, cli.runs[0].as_str()) {
        (Some(p), _) => Some(p.clone()),
        (None, "-") => match directories::ProjectDirs::from("", "", "triage") {
            Some(d) => Some(d.data_dir().join("runs").join("stdin.triage.jsonl")),
            None => {
                eprintln!(
                    "triage: no data directory for the annotations of standard input; pass --annotations PATH"
                );
                return ExitCode::from(2);
            }
        },
        (None, _) => None,
    };
    if let Some(parent) = explicit.as_deref().and_then(Path::parent) {
        let _ = std::fs::create_dir_all(parent);
    }
    let (store, notice) = match open_store(&run_path, explicit.as_deref(), &reviewer) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let keymap = match build_keymap(cli.keymap.as_deref(), &cfg) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut app = App::new(idx, store, cfg.taxonomy.clone());
    app.store_notice = notice;
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

/// Open the annotation journal, falling back to the data directory when the
/// run's folder is not writable, and say where it went.
fn open_store(
    run: &Path,
    explicit: Option<&Path>,
    reviewer: &str,
) -> Result<(AnnotationStore, Option<String>), String> {
    let (path, fallback) = annotations::journal_path_for(run, explicit)?;
    let store = AnnotationStore::open(&path, reviewer).map_err(|e| e.to_string())?;
    let mut notice = None;
    if fallback || run == Path::new("-") {
        notice = Some(format!("annotations in {}", store.path().display()));
    }
    if let annotations::Access::ReadOnly { reason } = store.access() {
        notice = Some(format!("READ-ONLY: {reason}"));
    }
    Ok((store, notice))
}
