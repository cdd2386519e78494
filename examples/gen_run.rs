//! Deterministic generator of sensitivity-test run files for `triage`.
//!
//! A run file is JSON Lines: one object per source/variant pair, as described
//! in `docs/run-format.md`. This example writes either a curated sample or a
//! large synthetic run for benchmarks and tests:
//!
//! ```text
//! cargo run --release --example gen_run -- --pairs 100000 --seed 7 -o big.jsonl
//! cargo run --release --example gen_run -- --profile rich -o sample-runs/support-urgency.jsonl
//! ```
//!
//! Profiles:
//!
//! * `bulk` (default): `--pairs N` synthetic pairs of about 2 KB each, driven
//!   by `--seed` and `--fail-rate`. Every expectation kind, every test family,
//!   route flips, near-boundary sources, service errors and invalid pairs.
//! * `rich`: the curated support-urgency run (`sample-runs/support-urgency.jsonl`).
//! * `bare-camelcase`: rows exactly as the reference TypeScript runner writes them.
//! * `camelcase-full`: camelCase rows that also carry payloads and policy.
//! * `with-problems`: good rows mixed with malformed lines, for parser tests.
//! * `compare-before`, `compare-after`, `compare-journal`: a run, the same
//!   run after a repair, and the decisions made on the first, for
//!   `triage compare` (every kind of change, carried and stale decisions).
//!
//! Only `bulk` reads `--pairs`, `--seed` and `--fail-rate`; the other profiles
//! are fixed and byte-identical on every run. Output goes to `-o FILE`, or to
//! stdout when `-o` is absent or `-`.
//!
//! Verdicts (`passed`, `reasons`) are computed with the runner rules from the
//! format document, in integer thousandths so that no comparison depends on
//! floating-point rounding; generated values never sit exactly on a tolerance.

use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{self, BufWriter, Write};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------
// Command line

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Profile {
    /// Large synthetic run; honours --pairs, --seed and --fail-rate.
    Bulk,
    /// The curated support-urgency sample.
    Rich,
    /// Bare rows in the TypeScript runner's camelCase shape.
    #[value(name = "bare-camelcase")]
    BareCamelcase,
    /// camelCase rows with payloads, policy and expectations.
    #[value(name = "camelcase-full")]
    CamelcaseFull,
    /// Good rows plus malformed, mistyped, blank, CRLF and truncated lines.
    #[value(name = "with-problems")]
    WithProblems,
    /// The first 18 pairs of `rich`: the run before a repair, for `triage compare`.
    #[value(name = "compare-before")]
    CompareBefore,
    /// `compare-before` after a repair: one pair or more of every kind of change.
    #[value(name = "compare-after")]
    CompareAfter,
    /// Decisions made on `compare-before`: its annotation journal.
    #[value(name = "compare-journal")]
    CompareJournal,
}

/// Write a synthetic or curated sensitivity-test run as JSON Lines.
#[derive(Debug, Parser)]
#[command(name = "gen_run", version)]
struct Args {
    /// Number of pairs to write (bulk profile only).
    #[arg(long, default_value_t = 1000)]
    pairs: u64,
    /// PRNG seed (bulk profile only); the same seed gives the same bytes.
    #[arg(long, default_value_t = 20_261_128)]
    seed: u64,
    /// Approximate fraction of failing pairs, 0 to 1 (bulk profile only).
    #[arg(long, default_value_t = 0.25)]
    fail_rate: f64,
    /// Which run to write.
    #[arg(long, value_enum, default_value_t = Profile::Bulk)]
    profile: Profile,
    /// Output file; `-` or absent means stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if !(0.0..=1.0).contains(&args.fail_rate) {
        bail!(
            "--fail-rate must be between 0 and 1, got {}",
            args.fail_rate
        );
    }
    match run(&args) {
        Err(err) if is_broken_pipe(&err) => Ok(()),
        other => other,
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run(args: &Args) -> Result<()> {
    let sink: Box<dyn Write> = match args.output.as_deref() {
        None | Some("-") => Box::new(io::stdout().lock()),
        Some(path) => {
            Box::new(File::create(path).with_context(|| format!("cannot create {path}"))?)
        }
    };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    match args.profile {
        Profile::Bulk => write_bulk(&mut out, args.pairs, args.seed, args.fail_rate)?,
        Profile::Rich => {
            for rec in rich_records(Wording::Probability)? {
                write_value_line(&mut out, &rec)?;
            }
        }
        Profile::BareCamelcase => {
            for rec in bare_rows()? {
                write_value_line(&mut out, &rec)?;
            }
        }
        Profile::CamelcaseFull => {
            for rec in camel_full_rows()? {
                write_value_line(&mut out, &rec)?;
            }
        }
        Profile::WithProblems => write_with_problems(&mut out)?,
        Profile::CompareBefore => {
            for rec in compare_before()? {
                write_value_line(&mut out, &rec)?;
            }
        }
        Profile::CompareAfter => {
            for rec in compare_after()? {
                write_value_line(&mut out, &rec)?;
            }
        }
        Profile::CompareJournal => write_compare_journal(&mut out)?,
    }
    out.flush().context("cannot flush output")?;
    Ok(())
}

fn write_value_line(out: &mut impl Write, rec: &Value) -> Result<()> {
    serde_json::to_writer(&mut *out, rec).context("cannot write record")?;
    out.write_all(b"\n").context("cannot write record")?;
    Ok(())
}

// ---------------------------------------------------------------------------
// PRNG (splitmix64): tiny, fast and stable across platforms.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5EED_7A1A_6E00_0001)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(u64::from(hi - lo) + 1) as u32
    }

    fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    fn pick_ref<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------
// Decision rules, in integer thousandths (910 = 0.91).

const POLICY: Policy = Policy {
    review: 550,
    action: 900,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Route {
    Action,
    Review,
    Pass,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::Action => "action",
            Route::Review => "review",
            Route::Pass => "pass",
        }
    }
}

#[derive(Clone, Copy)]
struct Policy {
    review: u32,
    action: u32,
}

impl Policy {
    fn route(self, p: u32) -> Route {
        if p >= self.action {
            Route::Action
        } else if p >= self.review {
            Route::Review
        } else {
            Route::Pass
        }
    }

    fn margin(self, p: u32) -> u32 {
        p.abs_diff(self.review).min(p.abs_diff(self.action))
    }

    /// Inclusive probability band of a route.
    fn band(self, route: Route) -> (u32, u32) {
        match route {
            Route::Action => (self.action, 1000),
            Route::Review => (self.review, self.action - 1),
            Route::Pass => (0, self.review - 1),
        }
    }
}

impl Serialize for Policy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("review_threshold", &milli(self.review))?;
        m.serialize_entry("action_threshold", &milli(self.action))?;
        m.end()
    }
}

#[derive(Clone, Copy, Debug)]
enum Expect {
    Invariant { dp: u32, dc: u32, same_route: bool },
    NotLess { permitted: u32 },
    NotMore { permitted: u32 },
    Routes(&'static [Route]),
}

impl Serialize for Expect {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match *self {
            Expect::Invariant { dp, dc, same_route } => {
                m.serialize_entry("kind", "invariant")?;
                m.serialize_entry("max_probability_drift", &milli(dp))?;
                m.serialize_entry("max_confidence_drift", &milli(dc))?;
                m.serialize_entry("require_same_route", &same_route)?;
            }
            Expect::NotLess { permitted } => {
                m.serialize_entry("kind", "not-less-urgent")?;
                m.serialize_entry("permitted_probability_movement", &milli(permitted))?;
            }
            Expect::NotMore { permitted } => {
                m.serialize_entry("kind", "not-more-urgent")?;
                m.serialize_entry("permitted_probability_movement", &milli(permitted))?;
            }
            Expect::Routes(routes) => {
                m.serialize_entry("kind", "allowed-routes")?;
                m.serialize_entry("allowed_routes", routes)?;
            }
        }
        m.end()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Outcome {
    Ok,
    Timeout,
    Error,
    InvalidResponse,
}

/// One side's answer. `p`/`c` may lie outside 0..=1000 only for an
/// invalid response.
#[derive(Clone, Copy, Debug)]
struct Answer {
    outcome: Outcome,
    p: Option<u32>,
    c: Option<u32>,
    error: Option<&'static str>,
    latency: Option<u32>,
}

impl Answer {
    fn ok(p: u32, c: u32) -> Self {
        Answer {
            outcome: Outcome::Ok,
            p: Some(p),
            c: Some(c),
            error: None,
            latency: None,
        }
    }

    fn timeout() -> Self {
        Answer {
            outcome: Outcome::Timeout,
            p: None,
            c: None,
            error: Some("no response within 30000 ms"),
            latency: Some(30_000),
        }
    }

    fn failed(outcome: Outcome, error: &'static str, latency: u32) -> Self {
        Answer {
            outcome,
            p: None,
            c: None,
            error: Some(error),
            latency: Some(latency),
        }
    }

    fn route(&self) -> Option<Route> {
        match (self.outcome, self.p) {
            (Outcome::Ok, Some(p)) => Some(POLICY.route(p)),
            _ => None,
        }
    }

    fn response(&self) -> Option<Resp> {
        if self.p.is_none() && self.c.is_none() {
            return None;
        }
        Some(Resp {
            probability: self.p.map(milli),
            confidence: self.c.map(milli),
        })
    }
}

#[derive(Clone, Copy, Serialize)]
struct Resp {
    #[serde(skip_serializing_if = "Option::is_none")]
    probability: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confidence: Option<f64>,
}

/// How drift reasons name the probability: the format's wording, or the
/// TypeScript runner's ("Noul drift ...").
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wording {
    Probability,
    Noul,
}

fn milli(v: u32) -> f64 {
    f64::from(v) / 1000.0
}

/// `390` -> `"0.390"`, like JavaScript's `toFixed(3)`.
struct Fixed3(u32);

impl fmt::Display for Fixed3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// Shortest decimal form, like JavaScript's number-to-string (`0.1`, `1`).
struct Short(u32);

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", milli(self.0))
    }
}

fn route_list(routes: &[Route]) -> String {
    routes
        .iter()
        .map(|r| r.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn service_reason(side: &str, a: &Answer) -> String {
    let error = a.error.unwrap_or("no details recorded");
    match a.outcome {
        Outcome::Timeout => match a.latency {
            Some(ms) => format!("{side} request timed out after {ms} ms."),
            None => format!("{side} request timed out."),
        },
        Outcome::Error => format!("{side} request failed: {error}."),
        Outcome::InvalidResponse => format!("{side} response was invalid: {error}."),
        Outcome::Ok => format!("{side} response has no probability or confidence."),
    }
}

/// Applies the runner rules; returns `passed` and fills `reasons`.
fn judge(
    exp: &Expect,
    min_margin: Option<u32>,
    src: &Answer,
    var: &Answer,
    wording: Wording,
    reasons: &mut Vec<String>,
) -> bool {
    reasons.clear();
    let usable = |a: &Answer| a.outcome == Outcome::Ok && a.p.is_some() && a.c.is_some();
    if !usable(src) {
        reasons.push(service_reason("Source", src));
    }
    if !usable(var) {
        reasons.push(service_reason("Variant", var));
    }
    let (Some(sp), Some(sc), Some(vp), Some(vc)) = (src.p, src.c, var.p, var.c) else {
        return false;
    };
    if !reasons.is_empty() {
        return false;
    }
    let (sr, vr) = (POLICY.route(sp), POLICY.route(vp));
    match *exp {
        Expect::Invariant { dp, dc, same_route } => {
            let margin = POLICY.margin(sp);
            if min_margin.is_some_and(|m| margin < m) {
                reasons.push(format!(
                    "Source is too close to a decision boundary: margin {}.",
                    Fixed3(margin)
                ));
            }
            let drift = sp.abs_diff(vp);
            if drift > dp {
                let word = match wording {
                    Wording::Probability => "Probability",
                    Wording::Noul => "Noul",
                };
                reasons.push(format!(
                    "{word} drift {} exceeds {}.",
                    Fixed3(drift),
                    Short(dp)
                ));
            }
            let cdrift = sc.abs_diff(vc);
            if cdrift > dc {
                reasons.push(format!(
                    "Confidence drift {} exceeds {}.",
                    Fixed3(cdrift),
                    Short(dc)
                ));
            }
            if same_route && sr != vr {
                reasons.push(format!(
                    "Route changed from {} to {}.",
                    sr.name(),
                    vr.name()
                ));
            }
        }
        Expect::NotLess { permitted } => {
            if vp + permitted < sp {
                reasons.push(format!(
                    "Probability fell by {}, more than the permitted {}.",
                    Fixed3(sp - vp),
                    Short(permitted)
                ));
            }
        }
        Expect::NotMore { permitted } => {
            if vp > sp + permitted {
                reasons.push(format!(
                    "Probability rose by {}, more than the permitted {}.",
                    Fixed3(vp - sp),
                    Short(permitted)
                ));
            }
        }
        Expect::Routes(allowed) => {
            if !allowed.contains(&vr) {
                reasons.push(format!(
                    "Route {} is not among the allowed routes: {}.",
                    vr.name(),
                    route_list(allowed)
                ));
            }
        }
    }
    reasons.is_empty()
}

/// True when a value sits exactly on a tolerance, where a float comparison
/// in a reader could disagree with the integer rules.
fn on_a_tolerance(exp: &Expect, min_margin: Option<u32>, src: &Answer, var: &Answer) -> bool {
    let (Some(sp), Some(sc), Some(vp), Some(vc)) = (src.p, src.c, var.p, var.c) else {
        return false;
    };
    match *exp {
        Expect::Invariant { dp, dc, .. } => {
            min_margin == Some(POLICY.margin(sp)) || sp.abs_diff(vp) == dp || sc.abs_diff(vc) == dc
        }
        Expect::NotLess { permitted } | Expect::NotMore { permitted } => {
            sp.abs_diff(vp) == permitted
        }
        Expect::Routes(_) => false,
    }
}

// ---------------------------------------------------------------------------
// Record shape shared by the bulk and curated profiles.

#[derive(Serialize)]
struct SideOut<'a, S: Serialize> {
    question: &'a str,
    state: &'a S,
    #[serde(skip_serializing_if = "Option::is_none")]
    response: Option<Resp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    route: Option<Route>,
    outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_ms: Option<u32>,
}

impl<'a, S: Serialize> SideOut<'a, S> {
    fn new(question: &'a str, state: &'a S, a: &'a Answer) -> Self {
        SideOut {
            question,
            state,
            response: a.response(),
            route: a.route(),
            outcome: a.outcome,
            error: a.error,
            latency_ms: a.latency,
        }
    }
}

#[derive(Serialize)]
struct Record<'a, S: Serialize> {
    case_id: &'a str,
    variant_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    family: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transformation: Option<&'a str>,
    contract_version: &'a str,
    state_schema_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dataset_version: Option<&'a str>,
    policy: Policy,
    expectation: &'a Expect,
    #[serde(skip_serializing_if = "Option::is_none")]
    minimum_boundary_margin: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_changes: Option<&'a [&'a str]>,
    source: SideOut<'a, S>,
    variant: SideOut<'a, S>,
    passed: bool,
    reasons: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    settings_id: Option<&'a str>,
    repetition: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    runner: Option<&'a Value>,
}

const CONTRACT: &str = "urgency-q/3";
const SCHEMA: &str = "support-state/2";
const DATASET: &str = "eval-2026-11";

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Seconds since 1970 for 2026-11-28T10:00:00Z, the first timestamp of a run.
fn run_start() -> i64 {
    days_from_civil(2026, 11, 28) * 86_400 + 10 * 3600
}

fn write_timestamp(buf: &mut String, secs: i64) -> fmt::Result {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    write!(
        buf,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

// ---------------------------------------------------------------------------
// Bulk profile

const Q_BASE: &str = "Based only on the supplied state, what is the probability that this ticket requires urgent human intervention within one hour?";
const Q_PARAPHRASE: &[&str] = &[
    "Using only the provided state, estimate the probability that this ticket needs urgent human intervention within the next hour.",
    "Using only the facts in the state, how likely is it that this ticket needs urgent human intervention within one hour?",
    "Considering the supplied state alone, what is the probability that a human must intervene urgently on this ticket within one hour?",
];
const Q_TYPO: &[&str] = &[
    "Based only on the supplied state, what is the probabilty that this ticket requires urgent human intervention within one hour?",
    "Based only on the suplied state, what is the probability that this ticket requires urgent human intervention within one hour?",
    "Based only on the supplied state, what is the probability that this ticket requires urgent human intervention withn one hour?",
];
const Q_CONCISE: &[&str] = &[
    "Probability that this ticket needs urgent human intervention within one hour, based only on the supplied state?",
    "Based only on the supplied state: probability this ticket needs urgent human intervention within one hour?",
];
const Q_SCOPE: &[&str] = &[
    "Based only on the supplied state, and without assuming any fact that is not stated in it, what is the probability that this ticket requires urgent human intervention within one hour?",
    "Using nothing but the fields in the supplied state, what is the probability that this ticket requires urgent human intervention within one hour?",
];

const USER_AGENTS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
];
const REGIONS: &[&str] = &[
    "eu-west",
    "eu-central",
    "eu-north",
    "us-east",
    "us-west",
    "ap-southeast",
    "ap-northeast",
];
const PLANS: &[&str] = &["starter", "business", "business", "enterprise"];
const CHANNELS: &[&str] = &["email", "chat", "web-form", "phone-transcript"];
const MODELS: &[&str] = &[
    "jev-noul-2026-10",
    "jev-noul-2026-10",
    "jev-noul-2026-11-rc1",
    "jev-noul-mini-2026-09",
];
const SETTINGS: &[&str] = &["t0-json-strict", "t0-json-strict", "t0.2-json-strict"];
const SERVICE_ERRORS: &[&str] = &[
    "HTTP 503 Service Unavailable",
    "HTTP 500 Internal Server Error",
    "HTTP 429 Too Many Requests",
    "connection reset by peer",
];

struct Scenario {
    slug: &'static str,
    messages: [&'static str; 2],
    affected: &'static [&'static str],
    status: &'static str,
    p: (u32, u32),
    c: (u32, u32),
    evidence: &'static [(&'static str, &'static str)],
    wider: (&'static str, &'static str, &'static str),
    resolved: (&'static str, &'static str, &'static str),
    tags: &'static [&'static str],
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        slug: "checkout-outage",
        messages: [
            "Hello, since roughly half an hour ago none of our customers can complete a purchase. The payment page loads, the spinner runs for about twenty seconds and then we get 'Something went wrong (PAY-502)'. Orders for the morning are at zero and the phones have started ringing. This is our busiest week, please treat it as a priority.",
            "Checkout is failing on our storefront. Card payments time out at the last step and customers are giving up. We have lost sales for 25 minutes now and our marketing email went out an hour ago, so traffic is high. Nothing changed on our side today.",
        ],
        affected: &[
            "3 customers",
            "multiple customers",
            "most storefront visitors",
        ],
        status: "failing",
        p: (905, 995),
        c: (760, 930),
        evidence: &[
            (
                "synthetic-monitor",
                "Checkout probe failed 5 of the last 5 runs with HTTP 502 from the payment step.",
            ),
            (
                "payments-dashboard",
                "Authorisation success rate for this merchant fell from 97% to 4% at 09:31 UTC.",
            ),
            (
                "customer-report",
                "Customer screenshot shows error PAY-502 on the payment page.",
            ),
            (
                "incident-tracker",
                "Open incident INC-2291 mentions elevated payment gateway errors.",
            ),
        ],
        wider: (
            "status-page",
            "Incident INC-2291: card payments failing for all EU storefronts.",
            "all EU customers",
        ),
        resolved: (
            "status-page",
            "INC-2291 resolved: checkout success rate back to 99.8% for 30 minutes.",
            "Payment service rolled back to the previous release.",
        ),
        tags: &["checkout", "payments"],
    },
    Scenario {
        slug: "login-failures",
        messages: [
            "Nobody in our organisation can sign in since this morning. Single sign-on sends people back to the login page without an error. Our support agents cannot reach their queue, which means our own customers are waiting. We tried two browsers and cleared cookies; our identity provider reports no problems.",
            "Several of our staff get 'invalid session' right after entering their password. It started after lunch and seems to affect people on the new laptops more than others. Some can still get in after three or four attempts. It is slowing the team down a lot.",
        ],
        affected: &[
            "about 120 staff in one organisation",
            "several staff members",
            "one team",
        ],
        status: "operational",
        p: (600, 960),
        c: (560, 880),
        evidence: &[
            (
                "auth-logs",
                "SAML assertions for this tenant rejected with 'audience mismatch' since 08:12 UTC.",
            ),
            (
                "auth-logs",
                "Session creation errors for this tenant at 41% over the last 30 minutes.",
            ),
            (
                "customer-report",
                "Customer says their identity provider shows no incident.",
            ),
        ],
        wider: (
            "auth-logs",
            "Signing certificate for this tenant expired at 08:10 UTC; every SSO login fails.",
            "all 120 staff in the organisation",
        ),
        resolved: (
            "auth-logs",
            "New signing certificate uploaded at 09:05 UTC; logins succeeding since.",
            "Customer admin rotated the SSO certificate.",
        ),
        tags: &["login", "sso"],
    },
    Scenario {
        slug: "billing-double-charge",
        messages: [
            "I was charged twice for my annual subscription this morning and both charges show as completed in my banking app. It is a lot of money for a small business like mine and I need one of them reversed. Could someone confirm what happened? I would rather not cancel my card.",
            "Our last invoice was paid twice, once by card and once by the bank transfer our accountant set up. We would like the duplicate refunded rather than kept as credit. Please let me know how long this takes.",
        ],
        affected: &["1 customer", "1 customer account"],
        status: "operational",
        p: (560, 820),
        c: (600, 850),
        evidence: &[
            (
                "billing-ledger",
                "Two captured charges of the same amount 41 seconds apart for invoice INV-88213.",
            ),
            (
                "payments-dashboard",
                "No other duplicate captures in the last 24 hours.",
            ),
            (
                "customer-report",
                "Customer attached a bank statement showing both debits.",
            ),
        ],
        wider: (
            "billing-ledger",
            "Duplicate captures found for 37 renewals processed in the 08:00 UTC batch.",
            "37 renewing customers",
        ),
        resolved: (
            "billing-ledger",
            "Refund RF-5521 for the duplicate charge issued; pending bank settlement.",
            "Duplicate charge refunded by billing operations.",
        ),
        tags: &["billing", "refund"],
    },
    Scenario {
        slug: "slow-dashboard",
        messages: [
            "The analytics dashboard has been really slow today. Charts take 20 to 30 seconds to load and sometimes time out. It is not blocking us, we can still export the numbers, but our weekly review is on Thursday so it would be good to have it sorted by then.",
            "Reports page feels sluggish since the weekend. Filters take a while to apply. Not a big deal, just flagging it in case something is off on your side.",
        ],
        affected: &["1 team", "1 workspace"],
        status: "operational",
        p: (120, 450),
        c: (650, 900),
        evidence: &[
            (
                "apm",
                "p95 dashboard query latency for this workspace is 14.2 s (baseline 1.8 s).",
            ),
            (
                "apm",
                "No errors recorded for this workspace; only slow queries.",
            ),
            ("customer-report", "Customer says the export still works."),
        ],
        wider: (
            "apm",
            "Query latency above 10 s for 38% of enterprise workspaces since 07:50 UTC.",
            "many workspaces in the region",
        ),
        resolved: (
            "apm",
            "Query latency back to 1.6 s p95 after index rebuild.",
            "Analytics index rebuilt.",
        ),
        tags: &["performance", "dashboard"],
    },
    Scenario {
        slug: "data-export-bug",
        messages: [
            "When I export the orders report to CSV, every row after 10,000 is silently dropped. The screen says 12,431 orders but the file has 10,000 lines. Our accountant needs the complete file at month end, which is next week. Is this a known limit?",
            "The customer export is missing the 'country' column since the last update. We can work around it for now by exporting twice, but it would be nice to have it back.",
        ],
        affected: &["1 customer", "1 team"],
        status: "operational",
        p: (200, 480),
        c: (550, 800),
        evidence: &[
            (
                "support-repro",
                "Reproduced: CSV export truncates at exactly 10,000 rows on the orders report.",
            ),
            (
                "docs",
                "Help centre article lists no row limit for CSV export.",
            ),
            (
                "release-notes",
                "Release 8.13 changed the export service to stream in pages of 10,000 rows.",
            ),
        ],
        wider: (
            "support-repro",
            "Truncation reproduced for every account with more than 10,000 orders; finance exports affected.",
            "all accounts with large exports",
        ),
        resolved: (
            "release-notes",
            "Hotfix 8.13.2 deployed; exports complete for 50,000-row test files.",
            "Export paging fixed in 8.13.2.",
        ),
        tags: &["export", "reports"],
    },
    Scenario {
        slug: "password-reset-delay",
        messages: [
            "Password reset emails are taking 30 to 45 minutes to arrive. Two colleagues are locked out after their passwords expired and cannot work until the email shows up. It happened yesterday as well. Please speed this up or give us another way to reset.",
            "I requested a password reset an hour ago and nothing has arrived yet, not in spam either. I can wait a bit but I need to get in before the end of the day.",
        ],
        affected: &["2 users", "1 user"],
        status: "operational",
        p: (450, 720),
        c: (480, 760),
        evidence: &[
            (
                "email-provider",
                "Median delivery time for transactional email is 38 minutes over the last hour (normal: under 1 minute).",
            ),
            (
                "customer-report",
                "Customer says the same delay happened yesterday afternoon.",
            ),
            (
                "auth-logs",
                "Two reset tokens issued for this tenant in the last hour, neither used.",
            ),
        ],
        wider: (
            "email-provider",
            "Provider incident EM-771: queue backlog affecting about 12% of all password-reset emails.",
            "about 12% of users requesting resets",
        ),
        resolved: (
            "email-provider",
            "EM-771 resolved; delivery times back under one minute.",
            "Email provider cleared the backlog.",
        ),
        tags: &["email", "password-reset"],
    },
    Scenario {
        slug: "feature-request",
        messages: [
            "Would it be possible to add a dark theme to the PDF invoices? Our brand is mostly black and the white invoices look a bit out of place. No rush at all, just an idea for the roadmap. Thanks for the great product!",
            "It would be great if the mobile app could remember the last filter I used on the orders list. Small thing, but I change it every morning.",
        ],
        affected: &["none reported"],
        status: "operational",
        p: (10, 90),
        c: (820, 970),
        evidence: &[
            ("product-board", "Similar request FR-311 has 14 votes."),
            (
                "customer-report",
                "Customer explicitly says there is no rush.",
            ),
        ],
        wider: (
            "product-board",
            "Request now raised by 40 accounts, including 3 enterprise customers.",
            "40 accounts asking",
        ),
        resolved: (
            "product-board",
            "FR-311 shipped in release 8.14.",
            "Feature released.",
        ),
        tags: &["feature-request"],
    },
    Scenario {
        slug: "api-rate-limiting",
        messages: [
            "Since we moved to the new plan yesterday our integration gets HTTP 429 on about a third of calls to the orders API. Our nightly sync failed and this morning's orders are not reaching the warehouse. We retry with backoff but the backlog keeps growing. Did our rate limit change?",
            "We see occasional 429 responses from the products endpoint during our hourly catalogue sync. Retries succeed, so nothing is lost, but we would like to understand the limits.",
        ],
        affected: &["1 merchant and its warehouse partner", "1 integration"],
        status: "operational",
        p: (580, 860),
        c: (560, 820),
        evidence: &[
            (
                "api-gateway",
                "34% of this key's requests rejected with 429 in the last hour; limit is 100 requests per minute.",
            ),
            (
                "billing-ledger",
                "Plan changed from Enterprise to Business on 2026-11-27.",
            ),
            (
                "api-gateway",
                "Retry-After headers returned correctly on rejected calls.",
            ),
        ],
        wider: (
            "warehouse",
            "Warehouse partner reports 212 orders not received since 06:00 UTC.",
            "1 merchant, its warehouse and 212 end customers",
        ),
        resolved: (
            "api-gateway",
            "Limit raised to 600 requests per minute; no 429 responses in 40 minutes.",
            "Rate limit restored to the previous plan level.",
        ),
        tags: &["api", "rate-limit", "integration"],
    },
    Scenario {
        slug: "resolved-incident",
        messages: [
            "Following up on this morning's checkout problem: everything works again on our side. Could you send a short summary of what happened for our management? No urgency, we only need it by the end of the week.",
            "Thanks for fixing the login issue earlier. All good now. For our records, can you tell us roughly when it started and ended?",
        ],
        affected: &["no currently affected customers"],
        status: "restored",
        p: (40, 200),
        c: (700, 900),
        evidence: &[
            (
                "status-page",
                "INC-2291 resolved at 10:45 UTC; success rate normal since.",
            ),
            (
                "incident-tracker",
                "Post-incident review scheduled for Friday.",
            ),
        ],
        wider: (
            "synthetic-monitor",
            "Checkout probe failing again in one region since 14:02 UTC.",
            "customers in one region",
        ),
        resolved: (
            "incident-tracker",
            "Post-incident report PIR-2291 published; no recurrence in 6 hours.",
            "Fix deployed and verified.",
        ),
        tags: &["post-incident"],
    },
    Scenario {
        slug: "vague-ticket",
        messages: [
            "it's broken again. please fix asap",
            "Hi, something is wrong with the system since this morning, a few people here are complaining. Can you check?",
        ],
        affected: &["unknown"],
        status: "unknown",
        p: (380, 640),
        c: (250, 500),
        evidence: &[(
            "customer-report",
            "No screenshot, error message or affected feature given.",
        )],
        wider: (
            "synthetic-monitor",
            "Checkout API 5xx rate 18% across all regions for the last 15 minutes.",
            "possibly all customers",
        ),
        resolved: (
            "customer-report",
            "Customer replied that it was their own office network; all fine now.",
            "Customer fixed their network.",
        ),
        tags: &["needs-info"],
    },
];

#[derive(Clone, Copy)]
struct Ev {
    id: u32,
    source: &'static str,
    text: &'static str,
    verified: bool,
}

/// `fmt::Display` value serialised as a JSON string without allocating.
struct Disp<T>(T);

impl<T: fmt::Display> Serialize for Disp<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

struct EvId(u32);

impl fmt::Display for EvId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EV-{}", self.0)
    }
}

struct TicketId(u32);

impl fmt::Display for TicketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T-{}", self.0)
    }
}

impl Serialize for Ev {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("id", &Disp(EvId(self.id)))?;
        m.serialize_entry("source", self.source)?;
        m.serialize_entry("text", self.text)?;
        m.serialize_entry("verified", &self.verified)?;
        m.end()
    }
}

#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
struct Account {
    plan: &'static str,
    seats: u32,
    tenure_months: u32,
    csm_assigned: bool,
}

const MAX_EV: usize = 5;

/// A support-state payload; every part is borrowed or inline, so cloning a
/// state for a variant never allocates.
#[derive(Clone, Copy)]
struct BulkState {
    ticket: u32,
    channel: &'static str,
    message: &'static str,
    affected: Option<&'static str>,
    status: &'static str,
    region: &'static str,
    duration: u32,
    incidents: u32,
    account: Account,
    evidence: [Ev; MAX_EV],
    n_ev: usize,
    tags: &'static [&'static str],
    user_agent: Option<&'static str>,
    noise: Option<(&'static str, &'static str)>,
    mitigation: Option<&'static str>,
    reordered: bool,
}

#[derive(Clone, Copy)]
enum Field {
    Ticket,
    Channel,
    Message,
    Affected,
    Status,
    Region,
    Duration,
    Incidents,
    Account,
    Evidence,
    Tags,
    UserAgent,
    Mitigation,
    Noise,
}

const FIELD_ORDER: [Field; 14] = [
    Field::Ticket,
    Field::Channel,
    Field::Message,
    Field::Affected,
    Field::Status,
    Field::Region,
    Field::Duration,
    Field::Incidents,
    Field::Account,
    Field::Evidence,
    Field::Tags,
    Field::UserAgent,
    Field::Mitigation,
    Field::Noise,
];

const FIELD_REORDER: [Field; 14] = [
    Field::Ticket,
    Field::Evidence,
    Field::Status,
    Field::Affected,
    Field::Message,
    Field::Account,
    Field::Incidents,
    Field::Duration,
    Field::Region,
    Field::Channel,
    Field::Tags,
    Field::Mitigation,
    Field::UserAgent,
    Field::Noise,
];

impl Serialize for BulkState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let order = if self.reordered {
            &FIELD_REORDER
        } else {
            &FIELD_ORDER
        };
        for field in order {
            match field {
                Field::Ticket => m.serialize_entry("ticketId", &Disp(TicketId(self.ticket)))?,
                Field::Channel => m.serialize_entry("channel", self.channel)?,
                Field::Message => m.serialize_entry("message", self.message)?,
                Field::Affected => {
                    if let Some(a) = self.affected {
                        m.serialize_entry("affectedUsers", a)?;
                    }
                }
                Field::Status => m.serialize_entry("checkoutStatus", self.status)?,
                Field::Region => m.serialize_entry("region", self.region)?,
                Field::Duration => m.serialize_entry("durationMinutes", &self.duration)?,
                Field::Incidents => m.serialize_entry("knownIncidentCount", &self.incidents)?,
                Field::Account => m.serialize_entry("account", &self.account)?,
                Field::Evidence => m.serialize_entry("evidence", &self.evidence[..self.n_ev])?,
                Field::Tags => m.serialize_entry("tags", self.tags)?,
                Field::UserAgent => {
                    if let Some(ua) = self.user_agent {
                        m.serialize_entry("browserUserAgent", ua)?;
                    }
                }
                Field::Mitigation => {
                    if let Some(text) = self.mitigation {
                        m.serialize_entry("mitigation", text)?;
                    }
                }
                Field::Noise => {
                    if let Some((k, v)) = self.noise {
                        m.serialize_entry(k, v)?;
                    }
                }
            }
        }
        m.end()
    }
}

impl BulkState {
    fn push_evidence(&mut self, ev: Ev) {
        if self.n_ev == MAX_EV {
            self.evidence.copy_within(1.., 0);
            self.n_ev -= 1;
        }
        self.evidence[self.n_ev] = ev;
        self.n_ev += 1;
    }

    fn remove_evidence(&mut self, index: usize) {
        if index < self.n_ev {
            self.evidence.copy_within(index + 1..self.n_ev, index);
            self.n_ev -= 1;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Paraphrase,
    Typo,
    Concise,
    Scope,
    UiTheme,
    TraceLabel,
    RemoveUserAgent,
    Reorder,
    AddEvidence,
    ResolveEvidence,
    RemoveEvidence,
    RemoveScope,
}

struct KindInfo {
    kind: Kind,
    id: &'static str,
    label: &'static str,
    family: &'static str,
    transformation: &'static str,
    allowed: &'static [&'static str],
    weight: u32,
}

const KINDS: &[KindInfo] = &[
    KindInfo {
        kind: Kind::Paraphrase,
        id: "question-paraphrase",
        label: "Equivalent question wording",
        family: "question",
        transformation: "paraphrase",
        allowed: &["question"],
        weight: 12,
    },
    KindInfo {
        kind: Kind::Typo,
        id: "question-typo",
        label: "Developer typo in the question",
        family: "question",
        transformation: "typo",
        allowed: &["question"],
        weight: 8,
    },
    KindInfo {
        kind: Kind::Concise,
        id: "concise-phrasing",
        label: "Concise question, same proposition",
        family: "question",
        transformation: "concise-phrasing",
        allowed: &["question"],
        weight: 7,
    },
    KindInfo {
        kind: Kind::Scope,
        id: "explicit-scope",
        label: "Explicit evidence scope in the question",
        family: "question",
        transformation: "explicit-scope",
        allowed: &["question"],
        weight: 6,
    },
    KindInfo {
        kind: Kind::UiTheme,
        id: "irrelevant-ui-metadata",
        label: "Irrelevant UI theme added",
        family: "state-noise",
        transformation: "add-irrelevant-field",
        allowed: &["state.diagnosticUiTheme"],
        weight: 10,
    },
    KindInfo {
        kind: Kind::TraceLabel,
        id: "irrelevant-trace-label",
        label: "Irrelevant request trace label added",
        family: "state-noise",
        transformation: "add-irrelevant-field",
        allowed: &["state.requestTraceLabel"],
        weight: 6,
    },
    KindInfo {
        kind: Kind::RemoveUserAgent,
        id: "remove-user-agent",
        label: "Irrelevant browser user agent removed",
        family: "state-noise",
        transformation: "remove-irrelevant-field",
        allowed: &["state.browserUserAgent"],
        weight: 6,
    },
    KindInfo {
        kind: Kind::Reorder,
        id: "reorder-fields",
        label: "State fields in another order",
        family: "state-noise",
        transformation: "reorder-fields",
        allowed: &[],
        weight: 6,
    },
    KindInfo {
        kind: Kind::AddEvidence,
        id: "add-evidence-wider-impact",
        label: "Verified evidence of wider impact added",
        family: "evidence-contrast",
        transformation: "add-evidence",
        allowed: &["state.evidence", "state.affectedUsers"],
        weight: 8,
    },
    KindInfo {
        kind: Kind::ResolveEvidence,
        id: "resolve-evidence",
        label: "Verified resolution evidence added",
        family: "evidence-contrast",
        transformation: "resolve-evidence",
        allowed: &["state.evidence", "state.checkoutStatus", "state.mitigation"],
        weight: 7,
    },
    KindInfo {
        kind: Kind::RemoveEvidence,
        id: "remove-key-evidence",
        label: "Key supporting evidence removed",
        family: "evidence-ablation",
        transformation: "remove-evidence",
        allowed: &["state.evidence"],
        weight: 8,
    },
    KindInfo {
        kind: Kind::RemoveScope,
        id: "remove-impact-scope",
        label: "Affected-user scope removed",
        family: "evidence-ablation",
        transformation: "remove-evidence",
        allowed: &["state.affectedUsers"],
        weight: 5,
    },
];

const ROUTES_REVIEW_PASS: &[Route] = &[Route::Review, Route::Pass];
const ROUTES_REVIEW: &[Route] = &[Route::Review];
const ROUTES_PASS: &[Route] = &[Route::Pass];
const ROUTES_ACTION_REVIEW: &[Route] = &[Route::Action, Route::Review];

/// Reusable buffers for the bulk writer.
struct BulkScratch {
    case_id: String,
    timestamp: String,
    reasons: Vec<String>,
    line: Vec<u8>,
}

/// Per-run rates derived from `--fail-rate`.
struct Rates {
    service_error: f64,
    boundary_case: f64,
    target_fail: f64,
}

impl Rates {
    fn new(fail_rate: f64) -> Self {
        let service_error = (fail_rate * 0.12).min(0.03);
        let boundary_case = (fail_rate * 0.25).min(0.06);
        // Boundary cases fail most of their invariant pairs on their own;
        // take that share and the service errors out of the targeted rate.
        let implied = service_error + boundary_case * 0.55;
        let target_fail = ((fail_rate - implied) / (1.0 - implied)).clamp(0.0, 1.0);
        Rates {
            service_error,
            boundary_case,
            target_fail,
        }
    }
}

pub fn write_bulk(out: &mut impl Write, pairs: u64, seed: u64, fail_rate: f64) -> Result<()> {
    let mut rng = Rng::new(seed);
    let rates = Rates::new(fail_rate);
    let mut scratch = BulkScratch {
        case_id: String::with_capacity(64),
        timestamp: String::with_capacity(32),
        reasons: Vec::with_capacity(4),
        line: Vec::with_capacity(8192),
    };
    let total_weight: u32 = KINDS.iter().map(|k| k.weight).sum();
    let mut clock = run_start();
    let mut written = 0u64;
    let mut case_no = 0u32;
    while written < pairs {
        case_no += 1;
        let sc = rng.pick_ref(SCENARIOS);
        scratch.case_id.clear();
        write!(scratch.case_id, "{}-{:06}", sc.slug, case_no)?;

        let source_state = bulk_source_state(&mut rng, sc, case_no);
        let boundary = rng.chance(rates.boundary_case);
        let (src_p, min_margin) = bulk_source_probability(&mut rng, sc, boundary);
        let src_c = rng.range(sc.c.0, sc.c.1);
        let model = rng.pick(MODELS);
        let settings = rng.pick(SETTINGS);
        let reps = if rng.chance(0.15) { 3 } else { 1 };

        // Distinct variant kinds for this case.
        let n_variants = rng.range(3, 6) as usize;
        let mut chosen: [Option<&KindInfo>; 6] = [None; 6];
        let mut n_chosen = 0;
        let mut attempts = 0;
        while n_chosen < n_variants && attempts < 40 {
            attempts += 1;
            let mut roll = rng.range(1, total_weight);
            let mut info = &KINDS[0];
            for k in KINDS {
                if roll <= k.weight {
                    info = k;
                    break;
                }
                roll -= k.weight;
            }
            if info.kind == Kind::RemoveUserAgent && source_state.user_agent.is_none() {
                continue;
            }
            if info.kind == Kind::RemoveEvidence && source_state.n_ev < 2 {
                continue;
            }
            if chosen[..n_chosen]
                .iter()
                .any(|c| c.is_some_and(|c| c.kind == info.kind))
            {
                continue;
            }
            chosen[n_chosen] = Some(info);
            n_chosen += 1;
        }

        for rep in 0..reps {
            let jitter = if rep == 0 { 0 } else { rng.range(0, 16) };
            let mut rep_p = (src_p + jitter).saturating_sub(8).min(1000);
            if min_margin.is_some_and(|m| (POLICY.margin(rep_p) < m) != (POLICY.margin(src_p) < m))
            {
                // Re-asking the source must not move it across the boundary rule.
                rep_p = src_p;
            }
            let rep_c = (src_c + jitter).saturating_sub(8).min(1000);
            for info in chosen[..n_chosen].iter().flatten() {
                if written >= pairs {
                    break;
                }
                clock += i64::from(rng.range(1, 4));
                let pair = BulkPair {
                    info,
                    sc,
                    source_state: &source_state,
                    src: (rep_p, rep_c),
                    min_margin,
                    model,
                    settings,
                    rep,
                    clock,
                };
                pair.write(out, &mut rng, &rates, &mut scratch)?;
                written += 1;
            }
        }
    }
    Ok(())
}

fn bulk_source_state(rng: &mut Rng, sc: &Scenario, case_no: u32) -> BulkState {
    let mut state = BulkState {
        ticket: 40_000 + case_no * 7 + rng.range(0, 6),
        channel: rng.pick(CHANNELS),
        message: rng.pick(&sc.messages),
        affected: Some(rng.pick(sc.affected)),
        status: sc.status,
        region: rng.pick(REGIONS),
        duration: rng.range(5, 240),
        incidents: u32::from(sc.status != "operational" && rng.chance(0.6)),
        account: Account {
            plan: rng.pick(PLANS),
            seats: rng.range(2, 400),
            tenure_months: rng.range(1, 72),
            csm_assigned: rng.chance(0.4),
        },
        evidence: [Ev {
            id: 0,
            source: "",
            text: "",
            verified: false,
        }; MAX_EV],
        n_ev: 0,
        tags: sc.tags,
        user_agent: if rng.chance(0.2) {
            Some(rng.pick(USER_AGENTS))
        } else {
            None
        },
        noise: None,
        mitigation: None,
        reordered: false,
    };
    let n = match rng.range(0, 19) {
        0..=8 => 1,
        9..=17 => 2,
        _ => 3,
    }
    .min(sc.evidence.len());
    let start = rng.below(sc.evidence.len() as u64) as usize;
    for i in 0..n {
        let (source, text) = sc.evidence[(start + i) % sc.evidence.len()];
        state.push_evidence(Ev {
            id: case_no * 10 + i as u32 + 1,
            source,
            text,
            verified: source != "customer-report" || rng.chance(0.3),
        });
    }
    state
}

/// Source probability and the case's minimum boundary margin.
fn bulk_source_probability(rng: &mut Rng, sc: &Scenario, boundary: bool) -> (u32, Option<u32>) {
    const MARGINS: [u32; 4] = [20, 30, 50, 100];
    if boundary {
        let threshold = if rng.chance(0.5) {
            POLICY.review
        } else {
            POLICY.action
        };
        let off = rng.range(0, 25);
        let p = if rng.chance(0.5) {
            threshold + off
        } else {
            threshold - off
        };
        return (p, Some(50));
    }
    let mut p = rng.range(sc.p.0, sc.p.1);
    for _ in 0..8 {
        if POLICY.margin(p) > MARGINS[0] {
            break;
        }
        p = rng.range(sc.p.0, sc.p.1);
    }
    let margin = POLICY.margin(p);
    let fitting = MARGINS.iter().filter(|m| **m < margin).count();
    let min_margin = if fitting == 0 {
        50
    } else {
        MARGINS[rng.below(fitting as u64) as usize]
    };
    (p, Some(min_margin))
}

struct BulkPair<'a> {
    info: &'a KindInfo,
    sc: &'a Scenario,
    source_state: &'a BulkState,
    src: (u32, u32),
    min_margin: Option<u32>,
    model: &'a str,
    settings: &'a str,
    rep: u32,
    clock: i64,
}

impl BulkPair<'_> {
    fn expectation(&self, rng: &mut Rng) -> Expect {
        let info = self.info;
        match info.kind {
            Kind::AddEvidence => Expect::NotLess {
                permitted: rng.pick(&[30, 50, 50, 100]),
            },
            Kind::ResolveEvidence => Expect::NotMore {
                permitted: rng.pick(&[30, 50, 50, 100]),
            },
            Kind::RemoveEvidence | Kind::RemoveScope => {
                let routes = match POLICY.route(self.src.0) {
                    Route::Action => rng.pick(&[ROUTES_REVIEW_PASS, ROUTES_REVIEW]),
                    Route::Review => rng.pick(&[ROUTES_REVIEW_PASS, ROUTES_ACTION_REVIEW]),
                    Route::Pass => rng.pick(&[ROUTES_PASS, ROUTES_REVIEW_PASS]),
                };
                Expect::Routes(routes)
            }
            _ => Expect::Invariant {
                dp: rng.pick(&[50, 80, 100, 100, 100]),
                dc: rng.pick(&[100, 150, 150, 200]),
                same_route: rng.chance(0.9),
            },
        }
    }

    fn variant_state(&self, rng: &mut Rng, case_no_hint: u32) -> (BulkState, &'static str) {
        let mut state = *self.source_state;
        let sc = self.sc;
        let mut question = Q_BASE;
        match self.info.kind {
            Kind::Paraphrase => question = rng.pick(Q_PARAPHRASE),
            Kind::Typo => question = rng.pick(Q_TYPO),
            Kind::Concise => question = rng.pick(Q_CONCISE),
            Kind::Scope => question = rng.pick(Q_SCOPE),
            Kind::UiTheme => {
                state.noise = Some((
                    "diagnosticUiTheme",
                    rng.pick(&["dark", "light", "high-contrast"]),
                ));
            }
            Kind::TraceLabel => {
                state.noise = Some((
                    "requestTraceLabel",
                    rng.pick(&[
                        "trace-synthetic-0042",
                        "trace-synthetic-7f3a",
                        "trace-synthetic-c0de",
                    ]),
                ));
            }
            Kind::RemoveUserAgent => state.user_agent = None,
            Kind::Reorder => state.reordered = true,
            Kind::AddEvidence => {
                let (source, text, affected) = sc.wider;
                state.push_evidence(Ev {
                    id: case_no_hint * 10 + 8,
                    source,
                    text,
                    verified: true,
                });
                state.affected = Some(affected);
            }
            Kind::ResolveEvidence => {
                let (source, text, mitigation) = sc.resolved;
                state.push_evidence(Ev {
                    id: case_no_hint * 10 + 9,
                    source,
                    text,
                    verified: true,
                });
                state.status = if sc.status == "failing" {
                    "restored"
                } else {
                    sc.status
                };
                state.mitigation = Some(mitigation);
            }
            Kind::RemoveEvidence => {
                let i = rng.below(state.n_ev as u64) as usize;
                state.remove_evidence(i);
            }
            Kind::RemoveScope => state.affected = None,
        }
        (state, question)
    }

    fn write(
        &self,
        out: &mut impl Write,
        rng: &mut Rng,
        rates: &Rates,
        scratch: &mut BulkScratch,
    ) -> Result<()> {
        let info = self.info;
        let exp = self.expectation(rng);
        let case_no_hint = self.source_state.ticket;
        let (mut vstate, vquestion) = self.variant_state(rng, case_no_hint);

        // Test-construction faults: an undeclared change makes the pair invalid.
        if rng.chance(0.02) {
            if rng.chance(0.5) || info.kind == Kind::RemoveScope {
                vstate.duration += rng.range(10, 120);
            } else {
                vstate.region = if vstate.region == "us-east" {
                    "eu-west"
                } else {
                    "us-east"
                };
            }
        }
        let allowed = if rng.chance(0.01) {
            None
        } else {
            Some(info.allowed)
        };
        let transformation = if rng.chance(0.02) {
            None
        } else {
            Some(info.transformation)
        };

        let mut src = Answer::ok(self.src.0, self.src.1);
        src.latency = Some(rng.range(380, 2400));
        let fail = rng.chance(rates.target_fail);
        let (vp, vc) = variant_values(rng, &exp, self.src, fail);
        let mut var = Answer::ok(vp, vc);
        var.latency = Some(rng.range(380, 2400));
        let mut guard = 0;
        while on_a_tolerance(&exp, self.min_margin, &src, &var) && guard < 8 {
            guard += 1;
            if let Expect::Invariant { .. } = exp
                && self.min_margin == Some(POLICY.margin(self.src.0))
            {
                src.p = src.p.map(|p| if p < 1000 { p + 1 } else { p - 1 });
            }
            var.p = var.p.map(|p| if p < 1000 { p + 1 } else { p - 1 });
            var.c = var.c.map(|c| if c < 1000 { c + 1 } else { c - 1 });
        }
        if rng.chance(rates.service_error) {
            let broken = service_failure(rng);
            if rng.chance(0.8) {
                var = broken;
            } else {
                src = broken;
            }
        }

        let passed = judge(
            &exp,
            self.min_margin,
            &src,
            &var,
            Wording::Probability,
            &mut scratch.reasons,
        );
        scratch.timestamp.clear();
        write_timestamp(&mut scratch.timestamp, self.clock)?;
        let record = Record {
            case_id: &scratch.case_id,
            variant_id: info.id,
            label: Some(info.label),
            family: Some(info.family),
            transformation,
            contract_version: CONTRACT,
            state_schema_version: SCHEMA,
            dataset_version: Some(DATASET),
            policy: POLICY,
            expectation: &exp,
            minimum_boundary_margin: self.min_margin.map(milli),
            allowed_changes: allowed,
            source: SideOut::new(Q_BASE, self.source_state, &src),
            variant: SideOut::new(vquestion, &vstate, &var),
            passed,
            reasons: &scratch.reasons,
            timestamp: Some(&scratch.timestamp),
            model_id: Some(self.model),
            settings_id: Some(self.settings),
            repetition: self.rep,
            runner: None,
        };
        scratch.line.clear();
        serde_json::to_writer(&mut scratch.line, &record)?;
        scratch.line.push(b'\n');
        out.write_all(&scratch.line)
            .context("cannot write record")?;
        Ok(())
    }
}

fn service_failure(rng: &mut Rng) -> Answer {
    match rng.range(0, 9) {
        0..=3 => Answer::timeout(),
        4..=6 => Answer::failed(Outcome::Error, rng.pick(SERVICE_ERRORS), rng.range(40, 900)),
        7 => Answer::failed(
            Outcome::InvalidResponse,
            "response is not valid JSON: unexpected end of input",
            rng.range(900, 4000),
        ),
        8 => Answer {
            outcome: Outcome::InvalidResponse,
            p: Some(1200),
            c: Some(rng.range(500, 900)),
            error: Some("probability 1.2 is outside the range 0 to 1"),
            latency: Some(rng.range(900, 4000)),
        },
        _ => Answer {
            outcome: Outcome::InvalidResponse,
            p: Some(rng.range(100, 900)),
            c: None,
            error: Some("response has no confidence field"),
            latency: Some(rng.range(900, 4000)),
        },
    }
}

fn clamp_milli(v: i64) -> u32 {
    v.clamp(0, 1000) as u32
}

/// Variant probability and confidence aimed at passing or failing `exp`.
fn variant_values(rng: &mut Rng, exp: &Expect, src: (u32, u32), fail: bool) -> (u32, u32) {
    let (sp, sc) = (i64::from(src.0), i64::from(src.1));
    let small = |rng: &mut Rng, v: i64, max: u32| {
        let d = i64::from(rng.range(0, max.saturating_sub(1)));
        clamp_milli(if rng.chance(0.5) { v + d } else { v - d })
    };
    match *exp {
        Expect::Invariant { dp, dc, same_route } => {
            let route = POLICY.route(src.0);
            if !fail {
                let (lo, hi) = if same_route {
                    POLICY.band(route)
                } else {
                    (0, 1000)
                };
                let lo = lo.max(src.0.saturating_sub(dp - 1));
                let hi = hi.min(src.0 + dp - 1);
                return (rng.range(lo, hi), small(rng, sc, dc));
            }
            match rng.range(0, 9) {
                // Route flip to a neighbouring route.
                0..=3 => {
                    let p = match route {
                        Route::Action => rng.range(POLICY.review - 120, POLICY.action - 1),
                        Route::Pass => rng.range(POLICY.review, POLICY.review + 220),
                        Route::Review => {
                            if rng.chance(0.5) {
                                rng.range(POLICY.action, 990)
                            } else {
                                rng.range(POLICY.review - 150, POLICY.review - 1)
                            }
                        }
                    };
                    (p, small(rng, sc, dc + 60))
                }
                // Probability drift beyond tolerance.
                4..=6 => {
                    let d = i64::from(dp + rng.range(1, 250));
                    let p = if (sp + d <= 1000 && rng.chance(0.5)) || sp - d < 0 {
                        sp + d
                    } else {
                        sp - d
                    };
                    (clamp_milli(p), small(rng, sc, dc))
                }
                // Confidence drift beyond tolerance.
                _ => {
                    let d = i64::from(dc + rng.range(1, 250));
                    let c = if sc - d >= 0 { sc - d } else { sc + d };
                    (small(rng, sp, dp.min(30)), clamp_milli(c))
                }
            }
        }
        Expect::NotLess { permitted } => {
            let p = if fail {
                sp - i64::from(permitted + rng.range(1, 300))
            } else {
                sp - i64::from(permitted) + 1 + i64::from(rng.range(0, 260))
            };
            (clamp_milli(p), small(rng, sc, 200))
        }
        Expect::NotMore { permitted } => {
            let p = if fail {
                sp + i64::from(permitted + rng.range(1, 300))
            } else {
                sp + i64::from(permitted) - 1 - i64::from(rng.range(0, 500))
            };
            (clamp_milli(p), small(rng, sc, 200))
        }
        Expect::Routes(allowed) => {
            let all = [Route::Action, Route::Review, Route::Pass];
            let mut options = [Route::Pass; 3];
            let mut n = 0;
            for r in all {
                if allowed.contains(&r) != fail {
                    options[n] = r;
                    n += 1;
                }
            }
            let route = if n == 0 {
                POLICY.route(src.0)
            } else {
                options[rng.below(n as u64) as usize]
            };
            let (lo, hi) = POLICY.band(route);
            let (lo, hi) = match route {
                Route::Pass => (lo.max(POLICY.review - 300), hi),
                _ => (lo, hi),
            };
            (rng.range(lo, hi), small(rng, sc, 250))
        }
    }
}

// ---------------------------------------------------------------------------
// Curated support-urgency run (`rich` profile)

const Q0: &str = Q_BASE;
const Q_NOSCOPE: &str =
    "What is the probability that this ticket requires urgent human intervention within one hour?";
const Q_PARA: &str = "Using only the provided state, estimate the probability that this ticket needs urgent human intervention within the next hour.";
const Q_PARA_FACTS: &str = "Using only the facts in the state, how likely is it that this ticket needs urgent human intervention within one hour?";
const Q_TYPO_PROB: &str = "Based only on the supplied state, what is the probabilty that this ticket requires urgent human intervention within one hour?";
const Q_TYPO_SUPPLIED: &str = "Based only on the suplied state, what is the probability that this ticket requires urgent human intervention within one hour?";
const Q_CONCISE_0: &str = "Probability that this ticket needs urgent human intervention within one hour, based only on the supplied state?";
const Q_IMPORTANT: &str = "Based only on the supplied state, what is the probability that this ticket requires important human attention within one hour?";
const Q_NOSCOPE_PARA: &str = "Estimate the probability that this ticket needs urgent human intervention within the next hour.";
const Q_NOSCOPE_TYPO: &str =
    "What is the probabilty that this ticket requires urgent human intervention within one hour?";
const Q_NOSCOPE_CONCISE: &str =
    "Probability that this ticket needs urgent human intervention within one hour?";
const Q_NOSCOPE_DEADLINE: &str =
    "What is the probability that this ticket requires human intervention within one business day?";

const UA_SAFARI: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15";
const UA_CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

const QUESTION: &str = "question";
const NOISE: &str = "state-noise";
const ABLATION: &str = "evidence-ablation";
const CONTRAST: &str = "evidence-contrast";

fn ev(id: &str, source: &str, text: &str, verified: bool) -> Value {
    json!({"id": id, "source": source, "text": text, "verified": verified})
}

/// A change applied to a copy of the source state.
enum Edit {
    /// Set a top-level state key (keeps its position, or appends it).
    Set(&'static str, Value),
    /// Remove a top-level state key.
    Remove(&'static str),
    /// Append an item to `evidence`.
    AddEvidence(Value),
    /// Remove the evidence item with this `id`.
    RemoveEvidence(&'static str),
    /// Reverse the order of the top-level keys.
    ReverseKeys,
}

fn apply(state: &Value, edits: &[Edit]) -> Result<Value> {
    let Value::Object(src) = state else {
        bail!("curated state must be an object");
    };
    let mut map = src.clone();
    for edit in edits {
        match edit {
            Edit::Set(key, value) => {
                map.insert((*key).to_string(), value.clone());
            }
            Edit::Remove(key) => {
                map.shift_remove(*key);
            }
            Edit::AddEvidence(item) => match map.get_mut("evidence") {
                Some(Value::Array(items)) => items.push(item.clone()),
                _ => bail!("curated state has no evidence list"),
            },
            Edit::RemoveEvidence(id) => match map.get_mut("evidence") {
                Some(Value::Array(items)) => items.retain(|e| e.get("id") != Some(&json!(id))),
                _ => bail!("curated state has no evidence list"),
            },
            Edit::ReverseKeys => {
                map = std::mem::take(&mut map)
                    .into_iter()
                    .rev()
                    .collect::<Map<_, _>>();
            }
        }
    }
    Ok(Value::Object(map))
}

struct RichCase {
    id: &'static str,
    question: &'static str,
    state: Value,
    src: (u32, u32),
    min_margin: Option<u32>,
    variants: Vec<Rv>,
}

/// One curated variant (builder style).
#[derive(Default)]
struct Rv {
    id: &'static str,
    label: Option<&'static str>,
    family: Option<&'static str>,
    transformation: Option<&'static str>,
    expect: Option<Expect>,
    allowed: Option<Vec<&'static str>>,
    question: Option<String>,
    edits: Vec<Edit>,
    var: Option<Answer>,
    src: Option<Answer>,
    rep: u32,
    /// Runner bug: the variant route recorded differs from the policy.
    route_bug: Option<Route>,
    /// Runner bug: the recorded verdict contradicts the rules.
    verdict_bug: bool,
    runner: Option<Value>,
    /// Leave out optional metadata (label, dataset, settings, time, latency).
    sparse: bool,
    model: Option<&'static str>,
}

fn v(id: &'static str, label: &'static str) -> Rv {
    Rv {
        id,
        label: Some(label),
        ..Rv::default()
    }
}

impl Rv {
    fn kind(mut self, family: &'static str, transformation: &'static str) -> Self {
        self.family = Some(family);
        self.transformation = Some(transformation);
        self
    }
    /// Family only: the reader infers the transformation from the diff.
    fn family_only(mut self, family: &'static str) -> Self {
        self.family = Some(family);
        self
    }
    fn q(mut self, question: impl Into<String>) -> Self {
        self.question = Some(question.into());
        self
    }
    fn inv(mut self, dp: u32, dc: u32, same_route: bool) -> Self {
        self.expect = Some(Expect::Invariant { dp, dc, same_route });
        self
    }
    fn not_less(mut self, permitted: u32) -> Self {
        self.expect = Some(Expect::NotLess { permitted });
        self
    }
    fn not_more(mut self, permitted: u32) -> Self {
        self.expect = Some(Expect::NotMore { permitted });
        self
    }
    fn routes(mut self, routes: &'static [Route]) -> Self {
        self.expect = Some(Expect::Routes(routes));
        self
    }
    fn allow(mut self, paths: &[&'static str]) -> Self {
        self.allowed = Some(paths.to_vec());
        self
    }
    fn edit(mut self, edit: Edit) -> Self {
        self.edits.push(edit);
        self
    }
    fn ok(mut self, p: u32, c: u32) -> Self {
        self.var = Some(Answer::ok(p, c));
        self
    }
    fn answer(mut self, a: Answer) -> Self {
        self.var = Some(a);
        self
    }
    fn source(mut self, a: Answer) -> Self {
        self.src = Some(a);
        self
    }
    fn rep(mut self, rep: u32) -> Self {
        self.rep = rep;
        self
    }
    fn std_inv(self) -> Self {
        self.inv(100, 150, true)
    }
}

fn rich_cases() -> Vec<RichCase> {
    let inert_question = Q0.replacen("urgent human", "urgent\u{200b} human", 1);
    vec![
        RichCase {
            id: "checkout-outage-001",
            question: Q0,
            state: json!({
                "ticketId": "T-48213",
                "channel": "email",
                "message": "Hi team, since about 09:35 our customers have not been able to finish checkout. The payment step spins for a while and then shows 'Something went wrong (code PAY-502)'. Three customers have phoned us in the last twenty minutes and our order count for the morning is close to zero. This is our busiest week of the year, please look at this as soon as possible.",
                "affectedUsers": "3 customers",
                "checkoutStatus": "failing",
                "region": "eu-west",
                "durationMinutes": 25,
                "knownIncidentCount": 1,
                "account": {"plan": "business", "seats": 45, "tenureMonths": 19, "csmAssigned": true},
                "evidence": [
                    ev("EV-101", "synthetic-monitor", "Checkout probe failed 5 of the last 5 runs in eu-west with HTTP 502 from the payment step.", true),
                    ev("EV-102", "customer-report", "Customer screenshot shows error PAY-502 on the payment page.", false)
                ],
                "tags": ["checkout", "payments", "eu"]
            }),
            src: (960, 880),
            min_margin: Some(50),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(940, 860),
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(950, 870).rep(1),
                v("irrelevant-ui-metadata", "Irrelevant UI theme added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"]).edit(Edit::Set("diagnosticUiTheme", json!("dark"))).ok(520, 610),
                v("irrelevant-ui-metadata", "Irrelevant UI theme added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"]).edit(Edit::Set("diagnosticUiTheme", json!("dark"))).ok(930, 840).rep(1),
                v("add-evidence-eu-scope", "Status page confirms all EU storefronts affected").kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence", "state.affectedUsers"])
                    .edit(Edit::Set("affectedUsers", json!("all EU customers")))
                    .edit(Edit::AddEvidence(ev("EV-103", "status-page", "Incident INC-2291 opened: card payments failing for all EU storefronts.", true))).ok(980, 910),
                v("add-evidence-eu-scope", "Status page confirms all EU storefronts affected").kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence", "state.affectedUsers"])
                    .edit(Edit::Set("affectedUsers", json!("all EU customers")))
                    .edit(Edit::AddEvidence(ev("EV-103", "status-page", "Incident INC-2291 opened: card payments failing for all EU storefronts.", true))).ok(970, 900).rep(1),
                v("resolve-evidence-rollback", "Rollback completed and checkout restored").kind(CONTRAST, "resolve-evidence").not_more(50).allow(&["state.evidence", "state.checkoutStatus", "state.mitigation"])
                    .edit(Edit::Set("checkoutStatus", json!("restored")))
                    .edit(Edit::AddEvidence(ev("EV-104", "status-page", "INC-2291 resolved: checkout success rate back to 99.8% for 30 minutes.", true)))
                    .edit(Edit::Set("mitigation", json!("Payment service rolled back to the previous release at 10:02 UTC."))).ok(180, 800),
                v("remove-scope-evidence", "Monitor evidence and affected-user scope removed").kind(ABLATION, "remove-evidence").routes(ROUTES_REVIEW_PASS).allow(&["state.evidence", "state.affectedUsers"])
                    .edit(Edit::Remove("affectedUsers")).edit(Edit::RemoveEvidence("EV-101")).ok(930, 700),
                v("paraphrase-scope-drift", "Paraphrase (also rewrote the affected users)").kind(QUESTION, "paraphrase").q(Q_PARA_FACTS).std_inv().allow(&["question"])
                    .edit(Edit::Set("affectedUsers", json!("all EU customers"))).ok(970, 900),
            ],
        },
        RichCase {
            id: "login-failures-002",
            question: Q0,
            state: json!({
                "ticketId": "T-48230",
                "channel": "chat",
                "message": "Nobody in our organisation can sign in since this morning. SSO redirects back to the login page without any error message. We are about 120 people and our support agents cannot reach their queue. We tried clearing cookies and two different browsers. Our identity provider says everything is fine on their side.",
                "affectedUsers": "about 120 staff in one organisation",
                "checkoutStatus": "operational",
                "region": "us-east",
                "durationMinutes": 50,
                "knownIncidentCount": 0,
                "account": {"plan": "enterprise", "seats": 120, "tenureMonths": 41, "csmAssigned": true},
                "evidence": [
                    ev("EV-201", "auth-logs", "SAML assertions for this tenant rejected with 'audience mismatch' since 08:12 UTC.", true),
                    ev("EV-202", "customer-report", "Customer says their identity provider status page shows no incident.", false)
                ],
                "tags": ["login", "sso"]
            }),
            src: (870, 700),
            min_margin: Some(50),
            variants: vec![
                v("question-typo", "Developer typo in the question").kind(QUESTION, "typo").q(Q_TYPO_PROB).std_inv().allow(&["question"]).ok(910, 720),
                v("concise-phrasing", "Concise question, same proposition").kind(QUESTION, "concise-phrasing").q(Q_CONCISE_0).std_inv().allow(&["question"]).ok(860, 690),
                v("reorder-fields", "State fields in reverse order").kind(NOISE, "reorder-fields").std_inv().allow(&[]).edit(Edit::ReverseKeys).ok(880, 710),
                v("add-evidence-expired-cert", "Auth logs show the tenant's SAML certificate expired").kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence"])
                    .edit(Edit::AddEvidence(ev("EV-203", "auth-logs", "Signing certificate for this tenant expired at 08:10 UTC; every SSO login fails.", true))).ok(950, 830),
            ],
        },
        RichCase {
            id: "billing-double-charge-003",
            question: Q0,
            state: json!({
                "ticketId": "T-48244",
                "channel": "web-form",
                "message": "I was charged twice for my annual subscription this morning, both charges show as completed in my bank app. It is a lot of money for a small business like mine and I need one of them reversed. Can someone confirm what happened? I do not want to cancel my card if I can avoid it.",
                "affectedUsers": "1 customer",
                "checkoutStatus": "operational",
                "region": "ap-southeast",
                "durationMinutes": 180,
                "knownIncidentCount": 0,
                "account": {"plan": "starter", "seats": 3, "tenureMonths": 26, "csmAssigned": false},
                "evidence": [
                    ev("EV-301", "billing-ledger", "Two captured charges of the same amount 41 seconds apart for invoice INV-88213.", true)
                ],
                "tags": ["billing", "refund"],
                "browserUserAgent": UA_SAFARI
            }),
            src: (620, 740),
            min_margin: Some(50),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(600, 720),
                v("irrelevant-campaign-tag", "Irrelevant campaign tag added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.campaignTag"])
                    .edit(Edit::Set("campaignTag", json!("autumn-renewal-2026"))).ok(480, 700),
                v("remove-user-agent", "Browser user agent removed").kind(NOISE, "remove-irrelevant-field").std_inv().allow(&["state.browserUserAgent"])
                    .edit(Edit::Remove("browserUserAgent")).ok(630, 750),
                v("refund-issued", "Ledger shows the duplicate charge refunded").kind(CONTRAST, "resolve-evidence").not_more(50).allow(&["state.evidence"])
                    .edit(Edit::AddEvidence(ev("EV-302", "billing-ledger", "Refund RF-5521 for the duplicate charge issued at 11:40 UTC, pending bank settlement.", true))).ok(710, 700),
                v("question-inert-character", "Question pasted from a rich-text editor").family_only(QUESTION).q(inert_question).std_inv().allow(&["question"]).ok(610, 740),
            ],
        },
        RichCase {
            id: "slow-dashboard-004",
            question: Q_NOSCOPE,
            state: json!({
                "ticketId": "T-48251",
                "channel": "email",
                "message": "The analytics dashboard has been really slow today, charts take 20-30 seconds to load and sometimes time out. It is not blocking us right now, we can still export the numbers, but our weekly review is on Thursday so it would be good to have it fixed by then.",
                "affectedUsers": "1 team",
                "checkoutStatus": "operational",
                "region": "eu-central",
                "durationMinutes": 240,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 18, "tenureMonths": 8, "csmAssigned": false},
                "evidence": [
                    ev("EV-401", "apm", "p95 dashboard query latency for this workspace is 14.2 s (baseline 1.8 s).", true)
                ],
                "tags": ["performance", "dashboard"],
                "browserUserAgent": UA_CHROME
            }),
            src: (220, 810),
            min_margin: Some(100),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_NOSCOPE_PARA).std_inv().allow(&["question"]).ok(250, 800),
                v("explicit-scope", "Question limited to the supplied state").kind(QUESTION, "explicit-scope").q(Q0).std_inv().allow(&["question"]).ok(200, 830),
                v("irrelevant-trace-label", "Request trace label added").family_only(NOISE).std_inv().allow(&["state.requestTraceLabel"])
                    .edit(Edit::Set("requestTraceLabel", json!("trace-7f3a-synthetic"))).ok(240, 800),
                v("add-evidence-region-wide", "APM shows slow queries across the region").kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence", "state.affectedUsers"])
                    .edit(Edit::Set("affectedUsers", json!("many workspaces in eu-central")))
                    .edit(Edit::AddEvidence(ev("EV-402", "apm", "Query latency above 10 s for 38% of enterprise workspaces in eu-central since 07:50 UTC.", true))).ok(580, 700),
                v("concise-phrasing", "Concise question, same proposition").kind(QUESTION, "concise-phrasing").q(Q_NOSCOPE_CONCISE).std_inv().allow(&["question"]).answer(Answer::timeout()),
                v("remove-user-agent", "Browser user agent removed").kind(NOISE, "remove-irrelevant-field").std_inv().allow(&["state.browserUserAgent"])
                    .edit(Edit::Remove("browserUserAgent")).ok(230, 810),
            ],
        },
        RichCase {
            id: "data-export-bug-005",
            question: Q0,
            state: json!({
                "ticketId": "T-48263",
                "channel": "web-form",
                "message": "When I export the orders report to CSV, rows after 10,000 are silently dropped. The on-screen total says 12,431 orders but the file only has 10,000 lines. We need the complete file for our accountant at month end, which is next week. Is this a known limit?",
                "affectedUsers": "1 customer",
                "checkoutStatus": "operational",
                "region": "us-west",
                "durationMinutes": 1440,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 12, "tenureMonths": 30, "csmAssigned": false},
                "evidence": [
                    ev("EV-501", "support-repro", "Reproduced: CSV export truncates at exactly 10,000 rows on the orders report.", true),
                    ev("EV-502", "docs", "Help centre article lists no row limit for CSV export.", true)
                ],
                "tags": ["export", "reports"],
                "diagnosticUiTheme": "light"
            }),
            src: (410, 660),
            min_margin: Some(100),
            variants: vec![
                v("question-typo", "Developer typo in the question").kind(QUESTION, "typo").q(Q_TYPO_SUPPLIED).std_inv().allow(&["question"]).ok(440, 640),
                v("reorder-fields", "State fields in reverse order").family_only(NOISE).std_inv().allow(&[]).edit(Edit::ReverseKeys).ok(390, 670),
                v("remove-repro-evidence", "Reproduction evidence removed").kind(ABLATION, "remove-evidence").routes(ROUTES_REVIEW_PASS).allow(&["state.evidence"])
                    .edit(Edit::RemoveEvidence("EV-501")).ok(300, 550),
                v("remove-ui-theme", "UI theme removed (also dropped an evidence item)").kind(NOISE, "remove-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"])
                    .edit(Edit::Remove("diagnosticUiTheme")).edit(Edit::RemoveEvidence("EV-502")).ok(350, 600),
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"])
                    .answer(Answer::failed(Outcome::Error, "HTTP 503 Service Unavailable", 214)),
            ],
        },
        RichCase {
            id: "password-reset-delay-006",
            question: Q0,
            state: json!({
                "ticketId": "T-48270",
                "channel": "email",
                "message": "Password reset emails are taking 30-45 minutes to arrive. Two of my colleagues are locked out after their passwords expired and cannot work until the email comes. It happened yesterday too. Please speed this up or give us another way to reset.",
                "affectedUsers": "2 users",
                "checkoutStatus": "operational",
                "region": "eu-west",
                "durationMinutes": 45,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 30, "tenureMonths": 14, "csmAssigned": true},
                "evidence": [
                    ev("EV-601", "email-provider", "Median delivery time for transactional email is 38 minutes over the last hour (normal: under 1 minute).", true),
                    ev("EV-602", "customer-report", "Customer says the same delay happened yesterday afternoon.", false)
                ],
                "tags": ["email", "password-reset"]
            }),
            src: (580, 570),
            min_margin: Some(50),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(530, 550),
                v("irrelevant-ui-metadata", "Irrelevant UI theme added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"])
                    .edit(Edit::Set("diagnosticUiTheme", json!("dark"))).ok(600, 580),
                v("add-evidence-provider-incident", "Email provider confirms a queue backlog").kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence"])
                    .edit(Edit::AddEvidence(ev("EV-603", "email-provider", "Provider incident EM-771: transactional queue backlog affecting about 12% of all password-reset emails.", true))).ok(710, 660),
                v("remove-delivery-evidence", "Delivery-time evidence removed").kind(ABLATION, "remove-evidence").routes(ROUTES_REVIEW_PASS).allow(&["state.evidence"])
                    .edit(Edit::RemoveEvidence("EV-601")).ok(500, 490),
            ],
        },
        RichCase {
            id: "feature-request-007",
            question: Q0,
            state: json!({
                "ticketId": "T-48288",
                "channel": "web-form",
                "message": "Would it be possible to add a dark theme to the PDF invoices? Our brand is mostly black and the white invoices look a bit out of place. No rush at all, just an idea for the roadmap. Thanks for the great product!",
                "affectedUsers": "none reported",
                "checkoutStatus": "operational",
                "region": "eu-north",
                "durationMinutes": 0,
                "knownIncidentCount": 0,
                "account": {"plan": "starter", "seats": 2, "tenureMonths": 5, "csmAssigned": false},
                "evidence": [],
                "tags": ["feature-request", "invoices"]
            }),
            src: (40, 930),
            min_margin: Some(100),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(50, 920),
                v("irrelevant-ui-metadata", "Irrelevant UI theme added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"])
                    .edit(Edit::Set("diagnosticUiTheme", json!("dark"))).ok(30, 940),
                v("important-not-urgent", "Paraphrase that swaps 'urgent intervention' for 'important attention'").kind(QUESTION, "paraphrase").q(Q_IMPORTANT).std_inv().allow(&["question"]).ok(310, 700),
                v("concise-phrasing", "Concise question, same proposition").kind(QUESTION, "concise-phrasing").q(Q_CONCISE_0).std_inv().allow(&["question"])
                    .answer(Answer::failed(Outcome::InvalidResponse, "response is not valid JSON: unexpected end of input at line 1 column 23", 2210)),
            ],
        },
        RichCase {
            id: "api-rate-limiting-008",
            question: Q0,
            state: json!({
                "ticketId": "T-48295",
                "channel": "email",
                "message": "Since we moved to the new plan yesterday our integration gets HTTP 429 responses on about a third of calls to the orders API. Our nightly sync failed and this morning's orders are not reaching the warehouse. We are retrying with backoff but the backlog is growing. Did our rate limit change?",
                "affectedUsers": "1 merchant and its warehouse partner",
                "checkoutStatus": "operational",
                "region": "us-east",
                "durationMinutes": 600,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 25, "tenureMonths": 22, "csmAssigned": true},
                "evidence": [
                    ev("EV-801", "api-gateway", "34% of this key's requests rejected with 429 in the last hour; limit is 100 requests per minute.", true),
                    ev("EV-802", "billing-ledger", "Plan changed from Enterprise to Business on 2026-11-27.", true)
                ],
                "tags": ["api", "rate-limit", "integration"]
            }),
            src: (710, 690),
            min_margin: Some(100),
            variants: vec![
                Rv { runner: Some(json!({"host": "ci-7", "attempt": 2})), ..v("question-paraphrase", "Equivalent question wording") }
                    .kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(680, 700),
                v("question-typo", "Developer typo in the question").kind(QUESTION, "typo").q(Q_TYPO_PROB).std_inv().allow(&["question"]).ok(740, 660),
                v("add-evidence-warehouse", "Warehouse partner reports missing orders").kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence"])
                    .edit(Edit::AddEvidence(ev("EV-803", "warehouse", "Warehouse partner reports 212 orders not received since 06:00 UTC.", true))).ok(620, 600),
                v("remove-plan-evidence", "Plan-change evidence removed").kind(ABLATION, "remove-evidence").routes(ROUTES_REVIEW_PASS).allow(&["state.evidence"])
                    .edit(Edit::RemoveEvidence("EV-802")).ok(660, 620),
                v("concise-phrasing", "Concise question, same proposition").kind(QUESTION, "concise-phrasing").q(Q_CONCISE_0).std_inv().allow(&["question"])
                    .answer(Answer {
                        outcome: Outcome::InvalidResponse,
                        p: Some(1300),
                        c: Some(800),
                        error: Some("probability 1.3 is outside the range 0 to 1"),
                        latency: Some(1460),
                    }),
            ],
        },
        RichCase {
            id: "resolved-incident-009",
            question: Q_NOSCOPE,
            state: json!({
                "ticketId": "T-48301",
                "channel": "email",
                "message": "Following up on this morning's checkout problem: everything seems to work again on our side. Could you send us a short summary of what happened for our management? No urgency, we just need it by the end of the week.",
                "affectedUsers": "no currently affected customers",
                "checkoutStatus": "restored",
                "region": "eu-west",
                "durationMinutes": 70,
                "knownIncidentCount": 1,
                "account": {"plan": "enterprise", "seats": 300, "tenureMonths": 52, "csmAssigned": true},
                "evidence": [
                    ev("EV-901", "status-page", "INC-2291 resolved at 10:45 UTC; checkout success rate normal since.", true)
                ],
                "tags": ["checkout", "post-incident"],
                "browserUserAgent": UA_CHROME
            }),
            src: (120, 840),
            min_margin: Some(100),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_NOSCOPE_PARA).std_inv().allow(&["question"]).ok(140, 820),
                v("remove-user-agent", "Browser user agent removed").kind(NOISE, "remove-irrelevant-field").std_inv().allow(&["state.browserUserAgent"])
                    .edit(Edit::Remove("browserUserAgent")).ok(110, 850),
                v("post-incident-report", "Post-incident report and mitigation added").family_only(CONTRAST).not_more(50).allow(&["state.evidence", "state.mitigation"])
                    .edit(Edit::AddEvidence(ev("EV-902", "incident-tracker", "Post-incident report PIR-2291 published; no recurrence in 6 hours.", true)))
                    .edit(Edit::Set("mitigation", json!("Payment service rolled back; permanent fix deployed at 14:20 UTC."))).ok(90, 880),
                v("explicit-scope", "Question limited to the supplied state").kind(QUESTION, "explicit-scope").q(Q0).std_inv().allow(&["question"]).ok(350, 700),
                v("question-typo", "Developer typo in the question").kind(QUESTION, "typo").q(Q_NOSCOPE_TYPO).std_inv().allow(&["question"])
                    .source(Answer::timeout()).ok(130, 830),
            ],
        },
        RichCase {
            id: "vague-ticket-010",
            question: Q0,
            state: json!({
                "ticketId": "T-48317",
                "channel": "chat",
                "message": "it's broken again. please fix asap",
                "affectedUsers": "unknown",
                "checkoutStatus": "unknown",
                "region": "unknown",
                "durationMinutes": null,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 60, "tenureMonths": 11, "csmAssigned": false},
                "evidence": [],
                "tags": ["needs-info"]
            }),
            src: (560, 380),
            min_margin: Some(50),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(490, 410),
                v("question-typo", "Developer typo in the question").kind(QUESTION, "typo").q(Q_TYPO_PROB).std_inv().allow(&["question"]).ok(570, 360),
                Rv { route_bug: Some(Route::Review), ..v("add-evidence-monitor", "Monitor shows checkout API errors") }
                    .kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence", "state.checkoutStatus"])
                    .edit(Edit::Set("checkoutStatus", json!("failing")))
                    .edit(Edit::AddEvidence(ev("EV-1001", "synthetic-monitor", "Checkout API 5xx rate 18% across all regions for the last 15 minutes.", true))).ok(900, 710),
                v("remove-impact-scope", "Affected-user field removed").kind(ABLATION, "remove-evidence").routes(ROUTES_REVIEW_PASS).allow(&["state.affectedUsers"])
                    .edit(Edit::Remove("affectedUsers")).ok(440, 300),
                v("concise-phrasing", "Concise question, same proposition").kind(QUESTION, "concise-phrasing").q(Q_CONCISE_0).std_inv().allow(&["question"]).ok(600, 400),
            ],
        },
        RichCase {
            id: "mobile-app-crash-011",
            question: Q_NOSCOPE,
            state: json!({
                "ticketId": "T-48322",
                "channel": "phone-transcript",
                "message": "After today's app update the Android app crashes immediately on launch for our drivers. Every driver on Android 14 is affected, iOS is fine. They use the app to confirm deliveries, so right now they are writing everything on paper. Roughly 80 drivers are on the road.",
                "affectedUsers": "about 80 drivers on Android 14",
                "checkoutStatus": "operational",
                "region": "eu-west",
                "durationMinutes": 35,
                "knownIncidentCount": 0,
                "account": {"plan": "enterprise", "seats": 95, "tenureMonths": 28, "csmAssigned": true},
                "evidence": [
                    ev("EV-1101", "crash-reporting", "Crash-free sessions for Android 14 dropped from 99.6% to 3.1% after release 8.14.0.", true),
                    ev("EV-1102", "app-store", "23 one-star reviews mentioning a crash on launch in the last hour.", true)
                ],
                "tags": ["mobile", "android", "release"]
            }),
            src: (930, 790),
            min_margin: Some(20),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_NOSCOPE_PARA).std_inv().allow(&["question"]).ok(910, 800),
                v("irrelevant-ui-metadata", "Irrelevant UI theme added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"])
                    .edit(Edit::Set("diagnosticUiTheme", json!("high-contrast"))).ok(890, 770),
                v("reorder-fields", "State fields in reverse order").kind(NOISE, "reorder-fields").std_inv().allow(&[]).edit(Edit::ReverseKeys).ok(920, 780),
                Rv { verdict_bug: true, ..v("concise-phrasing", "Concise question, same proposition") }
                    .kind(QUESTION, "concise-phrasing").q(Q_NOSCOPE_CONCISE).std_inv().allow(&["question"]).ok(780, 700),
                Rv { allowed: None, ..v("explicit-scope", "Question limited to the supplied state") }
                    .kind(QUESTION, "explicit-scope").q(Q0).std_inv().ok(940, 810),
            ],
        },
        RichCase {
            id: "webhook-delivery-012",
            question: Q_NOSCOPE,
            state: json!({
                "ticketId": "T-48336",
                "channel": "email",
                "message": "Our order webhooks are arriving up to two hours late. We use them to trigger shipping, so parcels are leaving a day later than we promised our customers. It started around midnight. We checked our endpoint and it responds in under 200 ms.",
                "affectedUsers": "1 merchant",
                "checkoutStatus": "operational",
                "region": "us-west",
                "durationMinutes": 120,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 40, "tenureMonths": 17, "csmAssigned": false},
                "evidence": [
                    ev("EV-1201", "webhook-queue", "Delivery lag for this merchant's webhooks is 1 h 52 min; retries are not failing.", true)
                ],
                "tags": ["webhooks", "integration"],
                "supportWidgetVersion": "4.2.1"
            }),
            src: (770, 720),
            min_margin: Some(100),
            variants: vec![
                v("concise-phrasing", "Concise question, same proposition").kind(QUESTION, "concise-phrasing").q(Q_NOSCOPE_CONCISE).std_inv().allow(&["question"]).ok(800, 700),
                v("remove-widget-version", "Support widget version removed").family_only(NOISE).std_inv().allow(&["state.supportWidgetVersion"])
                    .edit(Edit::Remove("supportWidgetVersion")).ok(750, 730),
                v("backlog-drained", "Queue backlog drained after scaling").kind(CONTRAST, "resolve-evidence").not_more(50).allow(&["state.evidence", "state.mitigation"])
                    .edit(Edit::AddEvidence(ev("EV-1202", "webhook-queue", "Backlog drained at 09:10 UTC; current delivery lag 4 s.", true)))
                    .edit(Edit::Set("mitigation", json!("Webhook workers scaled from 4 to 12."))).ok(410, 750),
                v("explicit-scope", "Scoped question (also shortened the duration)").kind(QUESTION, "explicit-scope").q(Q0).std_inv().allow(&["question"])
                    .edit(Edit::Set("durationMinutes", json!(15))).ok(520, 660),
                v("broader-deadline", "Deadline widened to one business day").kind(QUESTION, "broaden-deadline").q(Q_NOSCOPE_DEADLINE).not_less(50).allow(&["question"]).ok(880, 740),
            ],
        },
        RichCase {
            id: "invoice-tax-error-013",
            question: Q0,
            state: json!({
                "ticketId": "T-48340",
                "channel": "email",
                "message": "The VAT on our last invoice is calculated at 25% but we are registered in Germany and should be charged 19%. Can you correct the invoice? Our bookkeeper needs it before the quarterly filing in three weeks.",
                "affectedUsers": "1 customer",
                "checkoutStatus": "operational",
                "region": "eu-central",
                "durationMinutes": 4320,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 8, "tenureMonths": 36, "csmAssigned": false},
                "evidence": [
                    ev("EV-1301", "billing-ledger", "Invoice INV-90412 applied tax rate 25% with billing country DE.", true)
                ],
                "tags": ["billing", "tax"]
            }),
            src: (330, 700),
            min_margin: Some(100),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").family_only(QUESTION).q(Q_PARA).std_inv().allow(&["question"]).ok(300, 710),
                v("irrelevant-ui-metadata", "Irrelevant UI theme added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"])
                    .edit(Edit::Set("diagnosticUiTheme", json!("dark"))).ok(360, 690),
                Rv { model: Some("jev-noul-2026-11-rc1"), ..v("question-typo", "Developer typo in the question") }
                    .kind(QUESTION, "typo").q(Q_TYPO_SUPPLIED).std_inv().allow(&["question"]).ok(520, 610),
                v("add-evidence-many-invoices", "Finance confirms hundreds of invoices affected").kind(CONTRAST, "add-evidence").not_less(50).allow(&["state.evidence", "state.affectedUsers"])
                    .edit(Edit::Set("affectedUsers", json!("412 German customers")))
                    .edit(Edit::AddEvidence(ev("EV-1302", "finance", "Tax configuration error affects 412 invoices for DE customers issued since 2026-11-01.", true))).ok(710, 660),
                Rv { sparse: true, ..v("remove-ledger-evidence", "") }
                    .kind(ABLATION, "remove-evidence").routes(ROUTES_REVIEW_PASS).allow(&["state.evidence"])
                    .edit(Edit::RemoveEvidence("EV-1301")).ok(290, 600),
            ],
        },
        RichCase {
            id: "account-lockout-014",
            question: Q0,
            state: json!({
                "ticketId": "T-48352",
                "channel": "chat",
                "message": "Our only admin account is locked after too many failed sign-in attempts and nobody else can manage users. Three new hires start tomorrow morning and need access. The unlock email never arrived.",
                "affectedUsers": "1 admin, 3 pending users",
                "checkoutStatus": "operational",
                "region": "ap-northeast",
                "durationMinutes": 90,
                "knownIncidentCount": 0,
                "account": {"plan": "business", "seats": 22, "tenureMonths": 9, "csmAssigned": false},
                "evidence": [
                    ev("EV-1401", "auth-logs", "Account locked at 07:02 UTC after 10 failed attempts; no unlock link opened.", true)
                ],
                "tags": ["login", "admin"]
            }),
            src: (900, 600),
            min_margin: Some(50),
            variants: vec![
                v("question-paraphrase", "Equivalent question wording").kind(QUESTION, "paraphrase").q(Q_PARA).std_inv().allow(&["question"]).ok(880, 580),
                v("concise-phrasing", "Concise question, same proposition").kind(QUESTION, "concise-phrasing").q(Q_CONCISE_0).std_inv().allow(&["question"]).ok(900, 610),
                v("irrelevant-ui-metadata", "Irrelevant UI theme added").kind(NOISE, "add-irrelevant-field").std_inv().allow(&["state.diagnosticUiTheme"])
                    .edit(Edit::Set("diagnosticUiTheme", json!("light"))).ok(920, 620),
                v("remove-lock-evidence", "Auth-log evidence removed").kind(ABLATION, "remove-evidence").routes(ROUTES_REVIEW).allow(&["state.evidence"])
                    .edit(Edit::RemoveEvidence("EV-1401")).ok(700, 500),
                v("admin-unlocked", "Support unlocked the admin account").kind(CONTRAST, "resolve-evidence").not_more(50).allow(&["state.evidence", "state.mitigation"])
                    .edit(Edit::AddEvidence(ev("EV-1402", "auth-logs", "Account unlocked by support at 08:15 UTC; admin signed in successfully.", true)))
                    .edit(Edit::Set("mitigation", json!("Unlock performed manually by support."))).ok(150, 800),
            ],
        },
    ]
}

/// Builds the curated records as JSON values, in file order.
fn rich_records(wording: Wording) -> Result<Vec<Value>> {
    let mut rng = Rng::new(2026);
    let mut clock = run_start();
    let mut out = Vec::new();
    let mut reasons = Vec::new();
    let mut ts = String::new();
    for case in rich_cases() {
        for rv in &case.variants {
            let exp = rv.expect.context("curated variant without expectation")?;
            let mut src = rv.src.unwrap_or(Answer::ok(case.src.0, case.src.1));
            let mut var = rv.var.context("curated variant without answer")?;
            if rv.rep > 0 {
                // Repeated source request: same inputs, slightly different answer.
                src.p = src.p.map(|p| p - 7 * rv.rep);
                src.c = src.c.map(|c| c + 6 * rv.rep);
            }
            if on_a_tolerance(&exp, case.min_margin, &src, &var) {
                bail!("{}/{} sits exactly on a tolerance", case.id, rv.id);
            }
            for a in [&mut src, &mut var] {
                if a.latency.is_none() {
                    a.latency = Some(rng.range(420, 2300));
                }
                if rv.sparse {
                    a.latency = None;
                }
            }
            let mut passed = judge(&exp, case.min_margin, &src, &var, wording, &mut reasons);
            if rv.verdict_bug {
                passed = !passed;
                reasons.clear();
            }
            clock += i64::from(rng.range(2, 9));
            ts.clear();
            write_timestamp(&mut ts, clock)?;
            let vstate = apply(&case.state, &rv.edits)?;
            let vquestion = rv.question.as_deref().unwrap_or(case.question);
            let allowed = rv.allowed.as_deref();
            let mut var_side = SideOut::new(vquestion, &vstate, &var);
            if rv.route_bug.is_some() {
                var_side.route = rv.route_bug;
            }
            let record = Record {
                case_id: case.id,
                variant_id: rv.id,
                label: rv.label.filter(|l| !l.is_empty() && !rv.sparse),
                family: rv.family,
                transformation: rv.transformation,
                contract_version: CONTRACT,
                state_schema_version: SCHEMA,
                dataset_version: (!rv.sparse).then_some(DATASET),
                policy: POLICY,
                expectation: &exp,
                minimum_boundary_margin: case.min_margin.map(milli),
                allowed_changes: allowed,
                source: SideOut::new(case.question, &case.state, &src),
                variant: var_side,
                passed,
                reasons: &reasons,
                timestamp: (!rv.sparse).then_some(ts.as_str()),
                model_id: Some(rv.model.unwrap_or("jev-noul-2026-10")),
                settings_id: (!rv.sparse).then_some("t0-json-strict"),
                repetition: rv.rep,
                runner: rv.runner.as_ref(),
            };
            out.push(serde_json::to_value(&record)?);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// camelCase samples

/// Case id, source (p, c), and four variants (id, p, c).
type BareCase = (&'static str, (u32, u32), [(&'static str, u32, u32); 4]);

/// Bare rows exactly as the reference TypeScript runner produces them:
/// source assessed once per case, minimum boundary margin 0.1, route change
/// always checked, Noul drift 0.1 and confidence drift 0.15.
fn bare_rows() -> Result<Vec<Value>> {
    let exp = Expect::Invariant {
        dp: 100,
        dc: 150,
        same_route: true,
    };
    let cases: [BareCase; 3] = [
        (
            "checkout-outage-001",
            (910, 840),
            [
                ("question-paraphrase", 900, 830),
                ("irrelevant-ui-metadata", 520, 610),
                ("concise-phrasing", 930, 850),
                ("question-typo", 890, 800),
            ],
        ),
        (
            "slow-dashboard-004",
            (220, 810),
            [
                ("question-paraphrase", 250, 800),
                ("irrelevant-ui-metadata", 240, 790),
                ("explicit-scope", 200, 830),
                ("question-typo", 580, 620),
            ],
        ),
        (
            "api-rate-limiting-008",
            (720, 690),
            [
                ("question-paraphrase", 700, 680),
                ("question-typo", 740, 700),
                ("irrelevant-request-trace", 610, 630),
                ("concise-phrasing", 750, 500),
            ],
        ),
    ];
    let mut rows = Vec::new();
    let mut reasons = Vec::new();
    for (case_id, (sp, sc), variants) in cases {
        let src = Answer::ok(sp, sc);
        for (variant_id, vp, vc) in variants {
            let var = Answer::ok(vp, vc);
            if on_a_tolerance(&exp, Some(100), &src, &var) {
                bail!("{case_id}/{variant_id} sits exactly on a tolerance");
            }
            let passed = judge(&exp, Some(100), &src, &var, Wording::Noul, &mut reasons);
            rows.push(json!({
                "caseId": case_id,
                "variantId": variant_id,
                "passed": passed,
                "reasons": reasons,
                "source": {"noul": milli(sp), "confidence": milli(sc)},
                "variant": {"noul": milli(vp), "confidence": milli(vc)},
                "sourceRoute": POLICY.route(sp),
                "variantRoute": POLICY.route(vp),
            }));
        }
    }
    Ok(rows)
}

fn rename_keys(value: &mut Value, renames: &[(&str, &str)]) {
    if let Value::Object(map) = value {
        *map = std::mem::take(map)
            .into_iter()
            .map(|(k, v)| {
                let new = renames
                    .iter()
                    .find(|(from, _)| *from == k)
                    .map_or(k, |(_, to)| (*to).to_string());
                (new, v)
            })
            .collect();
    }
}

/// Converts a snake_case record to the camelCase spelling. Payload (`state`)
/// keys are left alone. With `flatten`, response fields move onto the side.
fn camelize(mut rec: Value, flatten: bool) -> Value {
    const TOP: &[(&str, &str)] = &[
        ("case_id", "caseId"),
        ("variant_id", "variantId"),
        ("contract_version", "contractVersion"),
        ("state_schema_version", "stateSchemaVersion"),
        ("dataset_version", "datasetVersion"),
        ("minimum_boundary_margin", "minimumBoundaryMargin"),
        ("allowed_changes", "allowedChanges"),
        ("model_id", "modelId"),
        ("settings_id", "settingsId"),
    ];
    const POLICY_KEYS: &[(&str, &str)] = &[
        ("review_threshold", "reviewThreshold"),
        ("action_threshold", "actionThreshold"),
    ];
    const EXPECT_KEYS: &[(&str, &str)] = &[
        ("max_probability_drift", "maximumNoulDrift"),
        ("max_confidence_drift", "maximumConfidenceDrift"),
        ("require_same_route", "requireSameRoute"),
        (
            "permitted_probability_movement",
            "permittedProbabilityMovement",
        ),
        ("allowed_routes", "allowedRoutes"),
    ];
    if let Some(p) = rec.get_mut("policy") {
        rename_keys(p, POLICY_KEYS);
    }
    if let Some(e) = rec.get_mut("expectation") {
        rename_keys(e, EXPECT_KEYS);
    }
    for side in ["source", "variant"] {
        let Some(Value::Object(map)) = rec.get_mut(side) else {
            continue;
        };
        let mut out = Map::new();
        for (k, v) in std::mem::take(map) {
            match (k.as_str(), v) {
                ("response", Value::Object(resp)) => {
                    let mut resp = Value::Object(resp);
                    rename_keys(&mut resp, &[("probability", "noul")]);
                    if flatten {
                        if let Value::Object(fields) = resp {
                            out.extend(fields);
                        }
                    } else {
                        out.insert(k, resp);
                    }
                }
                ("latency_ms", v) => {
                    out.insert("latencyMs".to_string(), v);
                }
                (_, v) => {
                    out.insert(k, v);
                }
            }
        }
        *map = out;
    }
    rename_keys(&mut rec, TOP);
    rec
}

/// camelCase rows with payloads: one per expectation kind, a service error,
/// and one row whose response fields sit directly on each side.
fn camel_full_rows() -> Result<Vec<Value>> {
    let picks: [(&str, &str, u32, bool); 6] = [
        ("checkout-outage-001", "question-paraphrase", 0, false),
        ("checkout-outage-001", "irrelevant-ui-metadata", 0, true),
        ("checkout-outage-001", "add-evidence-eu-scope", 0, false),
        ("checkout-outage-001", "remove-scope-evidence", 0, false),
        ("resolved-incident-009", "post-incident-report", 0, false),
        ("slow-dashboard-004", "concise-phrasing", 0, false),
    ];
    let records = rich_records(Wording::Noul)?;
    let mut rows = Vec::new();
    for (case_id, variant_id, rep, flatten) in picks {
        let rec = records
            .iter()
            .find(|r| {
                r["case_id"] == case_id && r["variant_id"] == variant_id && r["repetition"] == rep
            })
            .with_context(|| format!("no curated record {case_id}/{variant_id}"))?;
        rows.push(camelize(rec.clone(), flatten));
    }
    Ok(rows)
}

// ---------------------------------------------------------------------------
// Problem file for parser tests

fn write_with_problems(out: &mut impl Write) -> Result<()> {
    let records = rich_records(Wording::Probability)?;
    let good: Vec<String> = [0usize, 2, 9, 13, 15, 20, 24, 29, 33, 38, 42, 47, 52, 58, 66]
        .iter()
        .map(|&i| {
            let rec = records
                .get(i)
                .context("curated run is shorter than expected")?;
            Ok(serde_json::to_string(rec)?)
        })
        .collect::<Result<_>>()?;
    let truncated_source = records
        .get(5)
        .context("curated run is shorter than expected")?;
    let full = serde_json::to_string(truncated_source)?;
    let mut cut = 700.min(full.len());
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }

    enum Line<'a> {
        Good(usize),
        GoodCrlf(usize),
        Raw(&'a str),
    }
    let lines = [
        Line::Good(0),
        Line::GoodCrlf(1),
        Line::Good(2),
        Line::Raw(
            r#"{"case_id": "login-failures-002", "variant_id": "question-typo", "passed": false, "reasons": ["Route changed from review to action."],}"#,
        ),
        Line::Good(3),
        Line::Raw(""),
        Line::GoodCrlf(4),
        Line::Raw(r#"["checkout-outage-001", "question-paraphrase", true]"#),
        Line::Good(5),
        Line::Raw(
            r#"{"variant_id": "question-paraphrase", "passed": true, "reasons": [], "model_id": "jev-noul-2026-10"}"#,
        ),
        Line::Good(6),
        Line::GoodCrlf(7),
        Line::Raw(
            r#"{"case_id": 42, "variant_id": "question-paraphrase", "passed": true, "reasons": []}"#,
        ),
        Line::Good(8),
        Line::Good(9),
        Line::GoodCrlf(10),
        Line::Good(11),
        Line::Good(12),
        Line::Good(13),
        Line::Good(14),
    ];
    for line in lines {
        match line {
            Line::Good(i) => writeln!(out, "{}", good[i])?,
            Line::GoodCrlf(i) => write!(out, "{}\r\n", good[i])?,
            Line::Raw(text) => writeln!(out, "{text}")?,
        }
    }
    // The writer died mid-record: no closing brace, no newline.
    out.write_all(&full.as_bytes()[..cut])?;
    Ok(())
}

// ---------------------------------------------------------------------------
// A run before and after a repair (`compare-*` profiles)

/// How many pairs of the rich run the comparison sample keeps.
const COMPARE_PAIRS: usize = 18;

fn compare_before() -> Result<Vec<Value>> {
    let mut recs = rich_records(Wording::Probability)?;
    recs.truncate(COMPARE_PAIRS);
    Ok(recs)
}

/// Give the variant the source's answer: the pair now keeps its route and
/// drifts by nothing.
fn repair(rec: &mut Value) {
    let source = rec["source"].clone();
    for k in ["response", "route", "outcome"] {
        rec["variant"][k] = source[k].clone();
    }
    if let Some(side) = rec["variant"].as_object_mut() {
        side.remove("error");
    }
    rec["passed"] = json!(true);
    rec["reasons"] = json!([]);
}

/// Move the variant's answer `by` away from the source's, into another route.
fn regress(rec: &mut Value, probability: f64, confidence: f64, route: &str, reasons: &[&str]) {
    rec["variant"]["response"] = json!({"probability": probability, "confidence": confidence});
    rec["variant"]["route"] = json!(route);
    rec["passed"] = json!(false);
    rec["reasons"] = json!(reasons);
}

/// The run after a repair, pair by pair from `compare_before` (lines 1–18):
///
/// - fixed: 3 (a state distractor) and 15 (a campaign tag) now keep the
///   source's answer;
/// - new failures: 4 and 16 drift into another route;
/// - still failing: 8, 9 (invalid both times), 11 (a boundary
///   observation both times) and 17;
/// - failing another way: 10 broke its expectation, now its variant timed out;
/// - inputs changed: 12's question was rewritten by the repair (both sides);
/// - removed: 7 is not in the new run;
/// - added: a second repetition of 18;
/// - passing in both: the rest.
fn compare_after() -> Result<Vec<Value>> {
    let before = compare_before()?;
    let mut out = Vec::new();
    for (i, rec) in before.iter().enumerate() {
        let line = i + 1;
        let mut rec = rec.clone();
        match line {
            3 | 15 => repair(&mut rec),
            4 => regress(
                &mut rec,
                0.52,
                0.61,
                "pass",
                &[
                    "Probability drift 0.440 exceeds 0.1.",
                    "Confidence drift 0.270 exceeds 0.15.",
                    "Route changed from action to pass.",
                ],
            ),
            16 => regress(
                &mut rec,
                0.93,
                0.84,
                "action",
                &[
                    "Probability drift 0.120 exceeds 0.1.",
                    "Route changed from review to action.",
                ],
            ),
            7 => continue,
            10 => {
                if let Some(side) = rec["variant"].as_object_mut() {
                    side.remove("response");
                    side.remove("route");
                    side.insert("outcome".into(), json!("timeout"));
                    side.insert("error".into(), json!("no answer within 30000 ms"));
                    side.insert("latency_ms".into(), json!(30000));
                }
                rec["passed"] = json!(false);
                rec["reasons"] = json!(["Variant request timed out."]);
            }
            12 => {
                for side in ["source", "variant"] {
                    rec[side]["question"] = json!(
                        "Based only on the supplied state, what is the probability that this ticket needs a person to act within one hour (0 = no, 1 = certainly)?"
                    );
                }
            }
            _ => {}
        }
        rec["timestamp"] = json!(format!("2026-11-29T09:{:02}:00Z", line));
        out.push(rec);
    }
    let mut again = before[COMPARE_PAIRS - 1].clone();
    again["repetition"] = json!(1);
    again["timestamp"] = json!("2026-11-29T09:30:00Z");
    out.push(again);
    Ok(out)
}

/// Decisions a reviewer made on `compare_before`: on 8 and 17 (still
/// failing, so carried into the new run), on 12 (its inputs changed, so
/// stale) and on 15 (fixed, so history).
fn write_compare_journal(out: &mut impl Write) -> Result<()> {
    let before = compare_before()?;
    let decisions = [
        (
            8,
            "missing-evidence",
            "The scope evidence is what makes it urgent; removing it should lower the probability, not flip the route.",
        ),
        (
            12,
            "boundary",
            "Source sits 0.02 from the review threshold.",
        ),
        (15, "distractor", "A marketing tag moved the answer by 0.2."),
        (
            17,
            "conflicting-evidence",
            "Refund issued but the charge is still disputed.",
        ),
    ];
    for (i, (line, category, note)) in decisions.into_iter().enumerate() {
        let rec = &before[line - 1];
        let event = json!({
            "v": 1,
            "key": triage::core::key::record_key(rec).to_string(),
            "case_id": rec["case_id"],
            "variant_id": rec["variant_id"],
            "category": category,
            "note": note,
            "reviewer": "ana",
            "at": format!("2026-11-28T14:{:02}:00Z", 10 + i),
            "source": "manual",
            "prev": null,
        });
        write_value_line(out, &event)?;
    }
    Ok(())
}
