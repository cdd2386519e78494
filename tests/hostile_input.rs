//! Hostile input: every kind of bad line, and every kind of bad path.
//!
//! Bad lines (fixtures in `tests/fixtures/hostile/`; the large ones are
//! generated here) are each reported with the file, the line and what to
//! do, and every good line around them still opens. Bad paths (a FIFO, a
//! device, a directory, a missing or unreadable file, a symlink loop) make
//! `triage` exit 2 at once with one clear line, before any terminal set-up.
//! Every binary run here is bounded by a deadline: a hang fails the test.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use triage::core::index::{OpenOptions, RunIndex, load_run};
use triage::core::load::open::open_error;
use triage::core::problem::ProblemKind;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn load(path: &str) -> RunIndex {
    load_run(&[path.to_string()], &OpenOptions::default()).expect("the run opens")
}

fn cases(idx: &RunIndex) -> Vec<&str> {
    idx.rows.iter().map(|r| idx.str(r.case)).collect()
}

/// `(line, kind)` of every problem.
fn problems(idx: &RunIndex) -> Vec<(u64, ProblemKind)> {
    idx.problems.iter().map(|p| (p.line, p.kind)).collect()
}

/// Every problem names its file and a line, and says what to do (its
/// message has a clause after a ';' or names a fix).
#[track_caller]
fn assert_actionable(idx: &RunIndex, file: &str) {
    for p in &idx.problems {
        assert!(p.file.ends_with(file), "{p}");
        assert!(p.line >= 1, "{p}");
        let shown = p.to_string();
        assert!(
            shown.starts_with(&format!("{}:{}: ", p.file, p.line)),
            "{shown}"
        );
        if p.kind.skips_line() {
            assert!(
                p.message.contains("; "),
                "no advice after the cause: {shown}"
            );
        }
    }
}

/// The good lines before and after the bad ones open.
#[track_caller]
fn assert_good_lines_open(idx: &RunIndex) {
    let c = cases(idx);
    assert!(c.contains(&"good-1") && c.contains(&"good-2"), "{c:?}");
}

#[test]
fn every_kind_of_bad_line_is_reported_and_the_rest_opens() {
    use ProblemKind::*;
    // (fixture, problems as (line, kind), the pairs that open)
    type Case<'a> = (&'a str, &'a [(u64, ProblemKind)], &'a [&'a str]);
    let table: &[Case] = &[
        (
            "malformed.jsonl",
            &[(2, Malformed), (3, Malformed), (4, Malformed)],
            &["good-1", "good-2"],
        ),
        (
            "not-an-object.jsonl",
            &[
                (2, NotAnObject),
                (3, NotAnObject),
                (4, NotAnObject),
                (5, NotAnObject),
            ],
            &["good-1", "good-2"],
        ),
        (
            "missing-field.jsonl",
            &[(2, MissingField), (3, MissingField), (4, MissingField)],
            &["good-1", "good-2"],
        ),
        (
            "wrong-type.jsonl",
            &[(2, WrongType), (3, WrongType), (4, WrongType)],
            &["good-1", "good-2"],
        ),
        (
            "invalid-utf8.jsonl",
            &[(2, InvalidUtf8)],
            &["good-1", "good-2"],
        ),
        ("truncated.jsonl", &[(3, Truncated)], &["good-1", "good-2"]),
    ];
    for (file, want, opened) in table {
        let idx = load(&fixture(file));
        assert_eq!(problems(&idx), *want, "{file}: {:#?}", idx.problems);
        assert_eq!(cases(&idx), *opened, "{file}");
        assert_actionable(&idx, file);
        assert!(idx.done, "{file}");
    }
}

#[test]
fn field_values_of_the_wrong_kind_open_with_a_warning() {
    // Probabilities outside [0, 1], of the wrong type, or missing; a
    // `passed`, `reasons` and `policy` of the wrong type.
    let file = "out-of-range.jsonl";
    let idx = load(&fixture(file));
    assert_good_lines_open(&idx);
    assert_actionable(&idx, file);
    for case in [
        "above-one",
        "below-zero",
        "string-probability",
        "bool-probability",
        "null-probability",
        "wrong-types",
    ] {
        assert!(cases(&idx).contains(&case), "{case} opens");
    }
    // A null probability is "not recorded", not a problem; the rest warn.
    for line in [2, 3, 4, 5, 7] {
        assert!(
            idx.problems
                .iter()
                .any(|p| p.line == line && p.kind == ProblemKind::FieldWarning),
            "line {line} has a field warning: {:#?}",
            idx.problems
        );
    }
}

/// The rule for a repeated key: the last value is used (as jq and
/// JavaScript do), and the pair opens with a field warning naming the key.
#[test]
fn duplicate_keys_use_the_last_value_and_are_reported() {
    let file = "duplicate-keys.jsonl";
    let idx = load(&fixture(file));
    assert_eq!(
        cases(&idx),
        [
            "good-1",
            "dup-top-again",
            "dup-state",
            "dup-extra",
            "good-2"
        ]
    );
    let warned: Vec<(u64, &str)> = idx
        .problems
        .iter()
        .filter(|p| p.message.contains("appears more than once"))
        .map(|p| {
            assert_eq!(p.kind, ProblemKind::FieldWarning, "{p}");
            let at = p.message.find('`').expect("a key") + 1;
            let end = at + p.message[at..].find('`').expect("a key");
            (p.line, &p.message[at..end])
        })
        .collect();
    assert_eq!(
        warned,
        [(2, "case_id"), (3, "source.state.a"), (4, "note")],
        "{:#?}",
        idx.problems
    );
    assert!(idx.problems[0].message.contains("the last value is used"));
    assert_actionable(&idx, file);
}

#[test]
fn nan_and_infinity_are_not_json_and_are_reported() {
    let file = "nan-infinity.jsonl";
    let idx = load(&fixture(file));
    assert_good_lines_open(&idx);
    assert_actionable(&idx, file);
    for line in 2..=5 {
        assert!(
            idx.problems
                .iter()
                .any(|p| p.line == line && p.kind.skips_line()),
            "line {line}: {:#?}",
            idx.problems
        );
    }
    assert_eq!(idx.rows.len(), 2);
}

#[test]
fn files_that_are_not_jsonl_say_so_line_by_line() {
    for file in [
        "not-jsonl.yaml",
        "not-jsonl.html",
        "not-jsonl.csv",
        "not-jsonl-pretty.json",
    ] {
        let idx = load(&fixture(file));
        assert!(idx.rows.is_empty(), "{file}");
        assert!(!idx.problems.is_empty(), "{file}");
        assert!(idx.problems.iter().all(|p| p.kind.skips_line()), "{file}");
        assert_eq!(idx.problems[0].line, 1, "{file}");
        assert_actionable(&idx, file);
    }
}

#[test]
fn binary_junk_is_reported_between_good_lines() {
    let file = "binary-junk.jsonl";
    let idx = load(&fixture(file));
    assert_good_lines_open(&idx);
    assert_eq!(idx.rows.len(), 2);
    assert!(
        idx.problems
            .iter()
            .any(|p| p.kind == ProblemKind::InvalidUtf8),
        "{:#?}",
        idx.problems
    );
    assert_actionable(&idx, file);
}

/// A generated run: `good-1`, then `middle`, then `good-2`.
fn generated(dir: &Path, middle: &[u8]) -> String {
    let good = |n: u32| {
        format!(
            "{{\"case_id\":\"good-{n}\",\"variant_id\":\"v\",\"passed\":false,\"source\":{{\"state\":{{\"a\":1}}}},\"variant\":{{\"state\":{{\"a\":2}}}}}}\n"
        )
    };
    let path = dir.join("run.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    f.write_all(good(1).as_bytes()).expect("write");
    f.write_all(middle).expect("write");
    f.write_all(b"\n").expect("write");
    f.write_all(good(2).as_bytes()).expect("write");
    f.flush().expect("flush");
    path.to_string_lossy().into_owned()
}

#[test]
fn a_hundred_megabyte_line_is_skipped_with_its_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut line = b"{\"case_id\":\"huge\",\"variant_id\":\"v\",\"blob\":\"".to_vec();
    line.resize(100 * 1024 * 1024, b'x');
    line.extend_from_slice(b"\"}");
    let path = generated(dir.path(), &line);
    let idx = load(&path);
    assert_eq!(cases(&idx), ["good-1", "good-2"]);
    assert_eq!(problems(&idx), [(2, ProblemKind::TooLong)]);
    let msg = &idx.problems[0].message;
    assert!(msg.contains("104.9 MB"), "{msg}");
    assert!(msg.contains("--max-line-bytes"), "{msg}");
    assert!(msg.contains("max_line_bytes in the config"), "{msg}");
    assert_actionable(&idx, "run.jsonl");
}

#[test]
fn ten_thousand_levels_of_nesting_are_reported_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let depth = 10_000;
    let deep = format!(
        "{{\"case_id\":\"deep\",\"variant_id\":\"v\",\"source\":{{\"state\":{}1{}}}}}",
        "{\"a\":[".repeat(depth),
        "]}".repeat(depth)
    );
    let path = generated(dir.path(), deep.as_bytes());
    let idx = load(&path);
    assert_eq!(cases(&idx), ["good-1", "good-2"]);
    assert_eq!(problems(&idx), [(2, ProblemKind::TooDeep)]);
    assert_actionable(&idx, "run.jsonl");
}

/// A pair on a line of 300 bytes.
fn long_pair() -> Vec<u8> {
    let mut line = br#"{"case_id":"long","variant_id":"v","pad":""#.to_vec();
    line.resize(298, b'x');
    line.extend_from_slice(b"\"}");
    line
}

#[test]
fn a_read_error_midway_keeps_the_pairs_before_it() {
    // A gzip run cut short: it decompresses until the cut, then fails.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut plain = Vec::new();
    for i in 0..2000 {
        writeln!(
            plain,
            "{{\"case_id\":\"case-{i}\",\"variant_id\":\"v\",\"passed\":false,\"note\":\"{i:x}{}\"}}",
            i * 7919 % 10007
        )
        .expect("write");
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&plain).expect("compress");
    let gz = enc.finish().expect("compress");
    let path = dir.path().join("run.jsonl.gz");
    std::fs::write(&path, &gz[..gz.len() * 2 / 3]).expect("write");
    let idx = load(&path.to_string_lossy());
    assert!(idx.done);
    assert!(
        !idx.rows.is_empty() && idx.rows.len() < 2000,
        "{} rows",
        idx.rows.len()
    );
    let last = idx.problems.last().expect("a problem");
    assert_eq!(last.kind, ProblemKind::Io, "{:#?}", idx.problems);
    assert!(
        last.message.starts_with("reading stopped early: "),
        "{last}"
    );
    assert!(
        last.message.contains("; the pairs before it opened"),
        "{last}"
    );
}

#[test]
fn the_line_limit_can_be_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = generated(dir.path(), &long_pair());
    let lim = |n: usize| {
        load_run(
            std::slice::from_ref(&path),
            &OpenOptions {
                max_line_bytes: n,
                ..OpenOptions::default()
            },
        )
        .expect("opens")
    };
    assert_eq!(cases(&lim(300)), ["good-1", "long", "good-2"]);
    // The good lines are 107 bytes: a limit of 200 skips only the long one.
    let idx = lim(299);
    assert_eq!(problems(&idx), [(2, ProblemKind::TooLong)]);
    let idx = lim(200);
    assert_eq!(cases(&idx), ["good-1", "good-2"]);
    assert_eq!(problems(&idx), [(2, ProblemKind::TooLong)]);
    let idx = lim(106);
    assert!(idx.rows.is_empty());
    assert_eq!(idx.problems.len(), 3);
    assert!(idx.problems.iter().all(|p| p.kind == ProblemKind::TooLong));
}

// ---------------------------------------------------------------------------
// The binary: bad paths, the FIFO, the limit flag and config, memory.

/// Run triage with `args` in `cwd`; kill it and fail if it takes longer
/// than `limit`. Returns (exit code, stdout, stderr).
fn triage_within(
    limit: Duration,
    cwd: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (i32, String, String) {
    triage_cmd_within(
        limit,
        Command::new(env!("CARGO_BIN_EXE_triage")),
        cwd,
        args,
        envs,
    )
}

fn triage_cmd_within(
    limit: Duration,
    mut cmd: Command,
    cwd: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (i32, String, String) {
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn triage");
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("triage {args:?} still running after {limit:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const QUICK: Duration = Duration::from_secs(20);

/// Opening `name` in the viewer fails at once with exit 2 and `expected`.
#[track_caller]
fn refused(cwd: &Path, name: &str, expected: &str, envs: &[(&str, &str)]) {
    let (code, stdout, stderr) = triage_within(
        QUICK,
        cwd,
        &["--config", "/dev/null", "--reviewer", "t", name],
        envs,
    );
    assert_eq!(code, 2, "{name}: {stderr}");
    assert!(stdout.is_empty(), "{name}: no terminal set-up: {stdout:?}");
    assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
    assert!(stderr.contains(expected), "{name}: {stderr}");
}

#[test]
fn bad_paths_are_refused_with_one_clear_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("folder")).expect("mkdir");
    std::os::unix::fs::symlink("loop-b", d.join("loop-a")).expect("symlink");
    std::os::unix::fs::symlink("loop-a", d.join("loop-b")).expect("symlink");
    refused(
        d,
        "missing.jsonl",
        "'missing.jsonl' does not exist; check the path",
        &[],
    );
    refused(d, "folder", "'folder' is a directory; pass a run file", &[]);
    refused(
        d,
        "loop-a",
        "'loop-a' is a loop of symbolic links; point the link",
        &[],
    );
    refused(
        d,
        "/dev/zero",
        "'/dev/zero' is a device or socket, not a run file",
        &[],
    );
}

#[test]
fn a_fifo_nobody_writes_to_is_refused_not_waited_on_forever() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("run.jsonl");
    let ok = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(ok.success());
    let start = Instant::now();
    refused(
        dir.path(),
        "run.jsonl",
        "'run.jsonl' is a named pipe and nothing was written to it in 1 s; start the program that writes the run first",
        &[("TRIAGE_PIPE_WAIT_SECS", "1")],
    );
    assert!(start.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_fifo_with_a_writer_is_read_as_a_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("run.jsonl");
    let ok = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(ok.success());
    let sample =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sample-runs/support-urgency.jsonl");
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || {
        let text = std::fs::read(sample).expect("sample");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(writer_path)
            .expect("open the fifo for writing");
        // In two parts with a pause: the reader must wait for the rest.
        let half = text.len() / 2;
        f.write_all(&text[..half]).expect("write");
        std::thread::sleep(Duration::from_millis(300));
        f.write_all(&text[half..]).expect("write");
    });
    let (code, stdout, stderr) = triage_within(
        QUICK,
        dir.path(),
        &["summary", "--config", "/dev/null", "run.jsonl"],
        &[],
    );
    writer.join().expect("writer");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("72 pairs, 29 failures"), "{stdout}");
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn an_unreadable_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("secret.jsonl");
    std::fs::write(&path, "{}\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let expected = "cannot read 'secret.jsonl': permission denied; make it readable";
    let args = ["--config", "/dev/null", "--reviewer", "t", "secret.jsonl"];
    if !is_root() {
        refused(dir.path(), "secret.jsonl", expected, &[]);
        return;
    }
    // Root reads any file: drop the capabilities that let it (setpriv takes
    // them out of the bounding set, so the exec'd triage does not have them).
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--bounding-set=-dac_override,-dac_read_search",
        "--inh-caps=-dac_override,-dac_read_search",
        env!("CARGO_BIN_EXE_triage"),
    ]);
    let (code, stdout, stderr) = triage_cmd_within(QUICK, cmd, dir.path(), &args, &[]);
    if code != 2 && stderr.contains("setpriv") {
        println!(
            "skipped as root: setpriv cannot drop capabilities here ({stderr}); open_error_messages covers the message"
        );
        return;
    }
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains(expected), "{stderr}");
}

/// The mapping from I/O errors to messages, for the cases a test cannot
/// always provoke (root reads unreadable files).
#[test]
fn open_error_messages() {
    use std::io::{Error, ErrorKind};
    let m = |e: Error| open_error("run.jsonl", &e).0;
    assert_eq!(
        m(Error::from(ErrorKind::PermissionDenied)),
        "triage: cannot read 'run.jsonl': permission denied; make it readable (chmod u+r) or open a copy you can read"
    );
    assert_eq!(
        m(Error::from(ErrorKind::NotFound)),
        "triage: 'run.jsonl' does not exist; check the path and try again"
    );
    assert_eq!(
        m(Error::from_raw_os_error(libc::ELOOP)),
        "triage: 'run.jsonl' is a loop of symbolic links; point the link at the run file itself"
    );
    assert!(
        m(Error::from_raw_os_error(libc::EIO)).starts_with("triage: cannot open 'run.jsonl': ")
    );
}

#[test]
fn the_line_limit_comes_from_the_flag_or_the_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = generated(dir.path(), &long_pair());
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "max_line_bytes = 200\n").expect("config");
    let cfg = cfg.to_string_lossy().into_owned();
    let summary = |args: &[&str]| {
        let mut all = vec!["summary", path.as_str()];
        all.extend_from_slice(args);
        triage_within(QUICK, dir.path(), &all, &[])
    };
    let (code, out, err) = summary(&["--config", "/dev/null"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("3 pairs") && out.contains(" 0 unreadable lines"),
        "{out}"
    );
    // The config's limit of 200 skips the long pair, not the 107-byte ones.
    let (code, out, err) = summary(&["--config", &cfg]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("2 pairs") && out.contains("1 unreadable line"),
        "{out}"
    );
    // The flag wins over the config: 106 bytes skips every line.
    let (code, out, err) = summary(&["--config", &cfg, "--max-line-bytes", "106"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("0 pairs") && out.contains("3 unreadable lines"),
        "{out}"
    );
    // A limit of 0 is refused, naming the line.
    std::fs::write(
        dir.path().join("zero.toml"),
        "reviewer = \"a\"\nmax_line_bytes = 0\n",
    )
    .expect("config");
    let (code, _, err) = summary(&["--config", "zero.toml"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim_end(),
        "triage: zero.toml:2: max_line_bytes = 0; the line limit is at least 1 byte"
    );
}

/// A run larger than the memory triage may use opens: `triage summary`
/// under an address-space limit (`prlimit --as`, 128 MiB) far below the
/// file's size (over 300 MB) reads every pair, because only the index is
/// held, never the file. The run mixes 300 pairs carrying a 1 MiB field
/// with 15,000 small pairs, so it is big on disk yet quick to index in a
/// debug build. An address-space limit also counts space reserved and never
/// used, and glibc reserves 64 MiB per thread for malloc arenas, so the test
/// sets MALLOC_ARENA_MAX=1 (one arena): what is limited is then what is used.
#[test]
fn a_run_larger_than_its_memory_limit_opens_with_only_its_index() {
    const LIMIT: u64 = 128 * 1024 * 1024;
    const BIG: u64 = 300;
    const SMALL_PER_BIG: u64 = 50;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let blob = vec![b'x'; 1 << 20];
    let pair = |f: &mut std::io::BufWriter<std::fs::File>, id: u64, blob: &[u8]| {
        write!(
            f,
            "{{\"case_id\":\"case-{}\",\"variant_id\":\"v-{id}\",\"passed\":{},\"source\":{{\"question\":\"q\",\"state\":{{\"a\":1}},\"response\":{{\"probability\":0.6}}}},\"variant\":{{\"question\":\"q\",\"state\":{{\"a\":2}},\"response\":{{\"probability\":0.{}}}}},\"blob\":\"",
            id / 4,
            !id.is_multiple_of(3),
            id % 10
        )
        .and_then(|()| f.write_all(blob))
        .and_then(|()| f.write_all(b"\"}\n"))
        .expect("write");
    };
    let mut id = 0;
    for _ in 0..BIG {
        pair(&mut f, id, &blob);
        id += 1;
        for _ in 0..SMALL_PER_BIG {
            pair(&mut f, id, b"small");
            id += 1;
        }
    }
    f.flush().expect("flush");
    drop(f);
    let size = std::fs::metadata(&path).expect("size").len();
    assert!(
        size > 2 * LIMIT,
        "the run ({size} B) is over twice the limit"
    );
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={LIMIT}"))
        .arg(env!("CARGO_BIN_EXE_triage"));
    let (code, out, err) = triage_cmd_within(
        Duration::from_secs(300),
        cmd,
        dir.path(),
        &["summary", "--config", "/dev/null", "big.jsonl"],
        &[("MALLOC_ARENA_MAX", "1")],
    );
    assert_eq!(code, 0, "{err}");
    let pairs = BIG * (1 + SMALL_PER_BIG);
    assert!(
        out.starts_with(&format!("big.jsonl (native): {pairs} pairs")),
        "{out}"
    );
}
