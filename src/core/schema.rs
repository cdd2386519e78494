//! The fields of a run file, declared once.
//!
//! Each keyed object the loader reads — the top level of a line, a side
//! (`source` or `variant`), a side's `response`, the `policy` and the
//! `expectation` — has one table here. A row of a table is one field: its
//! slot (a small index, the same whatever the spelling), its spellings (the
//! run format's snake_case, the TypeScript runner's camelCase and aliases
//! such as `noul`) and the JSON type the slow path expects of it.
//!
//! Both parse paths read these tables:
//!
//! - the slow path ([`super::record::map_record`]) asks for a field by its
//!   row ([`Field::spellings`]); the first spelling that is present and not
//!   `null` is the one read, so the order of the spellings matters;
//! - the fast path ([`super::load::fast`]) keeps one value per slot, found through
//!   the generated `*_slot` functions (`top_slot`, `side_slot`, ...): each is
//!   a plain `match` on the spellings as byte strings, which the compiler
//!   turns into the same code as a hand-written one.
//!
//! The record key ([`super::key`]) reads the spellings of the fields it
//! leaves out (a side's latency, the timestamp) from here too.

/// The JSON a field is expected to hold, as the slow path reads it.
///
/// What the slow path does with a value of another type is in
/// [`super::record`]: a field warning and "not recorded" for optional
/// fields, a problem for the ids. The fast path declines such a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Json {
    /// A required string: a line without it, or with another type, is a
    /// problem rather than a pair.
    Id,
    /// A string; a number is read as its text.
    Text,
    /// A finite number.
    Number,
    /// A finite number in `[0, 1]` (a probability or a confidence).
    Unit,
    /// `true` or `false`.
    Bool,
    /// An object whose members have a table of their own.
    Object,
    /// A list whose items are read as strings (other items as their JSON
    /// text), or a single string.
    Strings,
    /// A route as a string: `action`, `review` or `pass`.
    Route,
    /// A list of routes, read as [`Json::Strings`] and each item as a
    /// [`Json::Route`].
    Routes,
    /// An outcome word (`ok`, `error`, ...), read as [`Json::Text`].
    Outcome,
    /// A string; any other JSON value is kept as its pretty-printed text
    /// (with a warning).
    Question,
    /// Any JSON value, kept as it is.
    Any,
}

/// One field of a keyed object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Its slot: the index of its row in the table.
    pub slot: usize,
    /// The name of its slot constant (`T_CASE`, `S_STATE`, ...).
    pub name: &'static str,
    /// Its spellings, in the order the slow path looks for them.
    pub spellings: &'static [&'static str],
    /// What it holds.
    pub json: Json,
}

impl Field {
    /// The field's first spelling, the one messages name.
    pub const fn canonical(&self) -> &'static str {
        self.spellings[0]
    }
}

/// A JSON object whose members are kept as written, read by the
/// spellings of [`Field`]s: how a line's raw inputs are read again (the
/// slow path's inputs digest, a comparison of two runs' inputs).
#[derive(serde::Deserialize)]
pub struct RawMembers<'a>(
    #[serde(borrow)]
    pub  std::collections::BTreeMap<std::borrow::Cow<'a, str>, &'a serde_json::value::RawValue>,
);

impl<'a> RawMembers<'a> {
    /// The first spelling of `field` that is recorded (present and not
    /// `null`), as written.
    pub fn get(&self, field: &Field) -> Option<&'a serde_json::value::RawValue> {
        field
            .spellings
            .iter()
            .find_map(|k| self.0.get(*k).copied())
            .filter(|v| v.get() != "null")
    }
}

/// A spelling written as a byte string (for the `match`), as a `&str`.
const fn text(b: &'static [u8]) -> &'static str {
    match std::str::from_utf8(b) {
        Ok(s) => s,
        Err(_) => panic!("a spelling is UTF-8"),
    }
}

/// The number of spellings of all the fields of a table.
pub const fn spellings(table: &[Field]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < table.len() {
        n += table[i].spellings.len();
        i += 1;
    }
    n
}

/// Checked when the crate compiles: every row sits at its slot, and no
/// field is without a spelling.
const fn check(table: &[Field]) {
    let mut i = 0;
    while i < table.len() {
        assert!(table[i].slot == i, "a table's rows are in slot order");
        assert!(!table[i].spellings.is_empty(), "a field has a spelling");
        i += 1;
    }
}

/// Declares the tables: for each keyed object, its slot constants, their
/// count, its table of [`Field`]s and its `*_slot` function.
macro_rules! schema {
    ($(
        $(#[$meta:meta])*
        $table:ident, $count:ident, $slot_fn:ident, $what:literal {
            $(
                $(#[$fmeta:meta])*
                $name:ident = $value:literal, $json:ident: $($spelling:literal)|+;
            )+
        }
    )+) => {$(
        $(
            $(#[$fmeta])*
            pub const $name: usize = $value;
        )+

        #[doc = concat!("The number of slots of ", $what, ".")]
        pub const $count: usize = [$($value),+].len();

        $(#[$meta])*
        pub const $table: [Field; $count] = [$(
            Field {
                slot: $name,
                name: stringify!($name),
                spellings: &[$(text($spelling)),+],
                json: Json::$json,
            },
        )+];

        const _: () = check(&$table);

        #[doc = concat!("The slot of a member of ", $what, ", from the text of its key")]
        #[doc = "between the quotes, escapes not decoded; `None` for a key the loader"]
        #[doc = concat!("does not read. The spellings of [`", stringify!($table), "`] (a spelling")]
        #[doc = "listed twice would be an unreachable pattern, which the lints refuse)."]
        #[inline]
        pub fn $slot_fn(k: &[u8]) -> Option<usize> {
            Some(match k {
                $($($spelling)|+ => $name,)+
                _ => return None,
            })
        }
    )+};
}

/// The top-level member in which a record converted from another tool's
/// file names that tool (see [`crate::core::formats`]). The record does not
/// read it (it stays among the pair's other fields), but its inputs are
/// then not compared across repetitions: a converter may carry context in
/// the question or state, such as a context-probe baseline's answer, that
/// differs between trials by design.
pub const CONVERTED_FROM: &str = "format";

schema! {
    /// The top level of a line. Keys not listed here are kept in the pair's
    /// `extra` by the slow path.
    TOP, N_TOP, top_slot, "the top level of a line" {
        /// The pair's case id.
        T_CASE = 0, Id: b"case_id" | b"caseId";
        /// The pair's variant id (not to be confused with [`T_VARIANT`],
        /// the variant side).
        T_VARIANT_ID = 1, Id: b"variant_id" | b"variantId";
        T_LABEL = 2, Text: b"label";
        T_FAMILY = 3, Text: b"family";
        T_TRANSFORMATION = 4, Text: b"transformation";
        T_CONTRACT = 5, Text: b"contract_version" | b"contractVersion";
        T_SCHEMA = 6, Text: b"state_schema_version" | b"stateSchemaVersion";
        /// Seed 000 (section 4) names it `sourceDatasetVersion` in the
        /// source case's metadata.
        T_DATASET = 7, Text: b"dataset_version"
            | b"datasetVersion"
            | b"source_dataset_version"
            | b"sourceDatasetVersion";
        /// The thresholds, an object read by [`POLICY`].
        T_POLICY = 8, Object: b"policy";
        /// The review threshold at the top level, read only without a
        /// `policy` (some runners put the thresholds there).
        T_REVIEW = 9, Number: b"review_threshold" | b"reviewThreshold";
        /// The action threshold at the top level, as [`T_REVIEW`].
        T_ACTION = 10, Number: b"action_threshold" | b"actionThreshold";
        /// An object read by [`EXPECTATION`].
        T_EXPECTATION = 11, Object: b"expectation";
        T_MARGIN = 12, Number: b"minimum_boundary_margin" | b"minimumBoundaryMargin";
        /// Seed 001 writes it `allowed`.
        T_ALLOWED = 13, Strings: b"allowed_changes" | b"allowedChanges" | b"allowed";
        /// The source side, an object read by [`SIDE`].
        T_SOURCE = 14, Object: b"source";
        /// The variant side, an object read by [`SIDE`].
        T_VARIANT = 15, Object: b"variant";
        /// The source's route outside the side, read when the side has none.
        T_SOURCE_ROUTE = 16, Route: b"sourceRoute" | b"source_route";
        /// The variant's route outside the side, as [`T_SOURCE_ROUTE`].
        T_VARIANT_ROUTE = 17, Route: b"variantRoute" | b"variant_route";
        T_PASSED = 18, Bool: b"passed";
        T_REASONS = 19, Strings: b"reasons";
        T_TIMESTAMP = 20, Text: b"timestamp";
        T_MODEL = 21, Text: b"model_id" | b"modelId";
        T_SETTINGS = 22, Text: b"settings_id" | b"settingsId";
        /// A whole number of at least zero (any other number is read as not
        /// recorded, without a warning).
        T_REPETITION = 23, Number: b"repetition";
        /// A validator's recorded verdict on the variant (`valid`,
        /// `invalid`, `unknown`): `invalid` and `unknown` decide the
        /// pair's validity whatever the diff shows (multivon, seed 004).
        T_VALIDATION = 24, Text: b"validation_status" | b"validationStatus";
        /// Written only where approval was not the expected decision:
        /// whether the variant approved anyway (context-probe, seed 002).
        T_UNSAFE = 25, Bool: b"unsafe_approval" | b"unsafeApproval";
        /// The source case's human label (seed 000, section 4:
        /// `SensitivityCaseMetadata.goldUrgent`).
        T_GOLD = 26, Bool: b"gold_urgent" | b"goldUrgent";
        /// When a person reviewed the source case (`humanReviewedAt`).
        T_REVIEWED = 27, Text: b"human_reviewed_at" | b"humanReviewedAt";
        /// The source case's notes (`notes`).
        T_NOTES = 28, Text: b"notes";
    }

    /// A side, `source` or `variant`. A bare row puts the response's
    /// members on the side itself; they are read there when the side has no
    /// `response`, or its `response` lacks them.
    SIDE, N_SIDE, side_slot, "`source` or `variant`" {
        S_QUESTION = 0, Question: b"question" | b"prompt";
        S_STATE = 1, Any: b"state" | b"payload";
        /// An object read by [`RESPONSE`].
        S_RESPONSE = 2, Object: b"response" | b"assessment";
        S_PROBABILITY = 3, Unit: b"probability" | b"noul" | b"p";
        S_CONFIDENCE = 4, Unit: b"confidence" | b"c";
        S_ROUTE = 5, Route: b"route";
        S_OUTCOME = 6, Outcome: b"outcome" | b"status";
        S_ERROR = 7, Text: b"error" | b"error_message" | b"errorMessage";
        /// Left out of the record key, with every spelling.
        S_LATENCY = 8, Number: b"latency_ms" | b"latencyMs" | b"latency";
        S_DECISION = 9, Text: b"decision";
    }

    /// A side's `response`.
    RESPONSE, N_RESPONSE, response_slot, "a side's `response`" {
        R_PROBABILITY = 0, Unit: b"probability" | b"noul" | b"p";
        R_CONFIDENCE = 1, Unit: b"confidence" | b"c";
    }

    /// The `policy`: both thresholds, or the policy is not recorded.
    POLICY, N_POLICY, policy_slot, "`policy`" {
        P_REVIEW = 0, Number: b"review_threshold" | b"reviewThreshold" | b"review";
        P_ACTION = 1, Number: b"action_threshold" | b"actionThreshold" | b"action";
    }

    /// The `expectation`: its kind, and the bounds that kind reads.
    EXPECTATION, N_EXP, expectation_slot, "`expectation`" {
        E_KIND = 0, Text: b"kind" | b"type";
        /// Read by an `invariant` expectation.
        E_MAX_P = 1, Number: b"max_probability_drift"
            | b"maximumNoulDrift"
            | b"maximumProbabilityDrift"
            | b"maxProbabilityDrift"
            | b"max_noul_drift";
        /// Read by an `invariant` expectation.
        E_MAX_C = 2, Number: b"max_confidence_drift" | b"maximumConfidenceDrift" | b"maxConfidenceDrift";
        /// Read by an `invariant` expectation (`true` when not recorded).
        E_SAME_ROUTE = 3, Bool: b"require_same_route" | b"requireSameRoute";
        /// Read by `not-less-urgent` and `not-more-urgent` (0 when not
        /// recorded).
        E_MOVEMENT = 4, Number: b"permitted_probability_movement" | b"permittedProbabilityMovement";
        /// Read by `allowed-routes`.
        E_ROUTES = 5, Routes: b"allowed_routes" | b"allowedRoutes";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::load::fast::LineReader;
    use crate::core::model::PairRecord;
    use crate::core::record::map_record;
    use serde_json::{Map, Value, json};

    /// A table's name, its fields and its slot function.
    type Table = (&'static str, &'static [Field], fn(&[u8]) -> Option<usize>);

    const TABLES: [Table; 5] = [
        ("top", &TOP, top_slot),
        ("side", &SIDE, side_slot),
        ("response", &RESPONSE, response_slot),
        ("policy", &POLICY, policy_slot),
        ("expectation", &EXPECTATION, expectation_slot),
    ];

    #[test]
    fn every_spelling_maps_to_its_slot() {
        for (table, fields, slot_of) in TABLES {
            let mut seen = std::collections::HashSet::new();
            for f in fields {
                for s in f.spellings {
                    assert!(seen.insert(*s), "{table}: `{s}` spelled twice");
                    assert_eq!(slot_of(s.as_bytes()), Some(f.slot), "{table}.{s}");
                    // A near miss is not a spelling.
                    for other in [s.to_uppercase(), format!("{s}_"), format!(" {s}")] {
                        if !seen.contains(other.as_str()) {
                            assert_eq!(slot_of(other.as_bytes()), None, "{table}.{other}");
                        }
                    }
                }
            }
            assert_eq!(slot_of(b""), None);
            assert_eq!(
                slot_of(b"\\u0063ase_id"),
                None,
                "keys are matched as written"
            );
        }
    }

    #[test]
    fn slot_constants_are_todays() {
        assert_eq!(
            (
                T_CASE,
                T_SOURCE,
                T_VARIANT_ROUTE,
                T_REPETITION,
                T_NOTES,
                N_TOP
            ),
            (0, 14, 17, 23, 28, 29)
        );
        assert_eq!(
            (S_QUESTION, S_STATE, S_LATENCY, S_DECISION, N_SIDE),
            (0, 1, 8, 9, 10)
        );
        assert_eq!((E_KIND, E_ROUTES, N_EXP), (0, 5, 6));
        assert_eq!((N_RESPONSE, N_POLICY), (2, 2));
        assert_eq!(spellings(&TOP), 49);
    }

    proptest::proptest! {
        /// Nothing but the table's spellings has a slot.
        #[test]
        fn only_spellings_have_slots(k in "[a-zA-Z_]{0,12}") {
            for (table, fields, slot_of) in TABLES {
                let spelled = fields.iter().find(|f| f.spellings.contains(&k.as_str()));
                proptest::prop_assert_eq!(slot_of(k.as_bytes()), spelled.map(|f| f.slot), "{}", table);
            }
        }
    }

    /// Where a field of a table is written: its object within a line.
    fn object_of<'a>(line: &'a mut Map<String, Value>, table: &str) -> &'a mut Map<String, Value> {
        let path: &[&str] = match table {
            "top" => &[],
            "side" => &["source"],
            "response" => &["source", "response"],
            "policy" => &["policy"],
            _ => &["expectation"],
        };
        let mut obj = line;
        for key in path {
            obj = obj
                .entry(key.to_string())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .unwrap();
        }
        obj
    }

    /// A line with `f` of `table` written as `spelling` (none: left out),
    /// with a value of its type and what the field needs to be read (the
    /// other threshold, the expectation's kind).
    fn line_with(table: &str, f: &Field, spelling: Option<&str>) -> String {
        let mut line = Map::new();
        for id in [&TOP[T_CASE], &TOP[T_VARIANT_ID]] {
            if !(table == "top" && id.slot == f.slot) {
                line.insert(id.canonical().into(), json!(id.name));
            }
        }
        let obj = object_of(&mut line, table);
        let value = match (table, f.slot) {
            ("top", T_POLICY) => json!({"review_threshold": 0.5, "action_threshold": 0.8}),
            ("top", T_EXPECTATION) => json!({"kind": "invariant", "max_probability_drift": 0.1}),
            ("top", T_SOURCE | T_VARIANT) => json!({"probability": 0.5, "route": "review"}),
            ("top", T_REVIEW) => {
                obj.insert(TOP[T_ACTION].canonical().into(), json!(0.9));
                json!(0.3)
            }
            ("top", T_ACTION) => {
                obj.insert(TOP[T_REVIEW].canonical().into(), json!(0.1));
                json!(0.7)
            }
            ("side", S_RESPONSE) => json!({"probability": 0.4, "confidence": 0.6}),
            ("policy", P_REVIEW) => {
                obj.insert(POLICY[P_ACTION].canonical().into(), json!(0.8));
                json!(0.5)
            }
            ("policy", P_ACTION) => {
                obj.insert(POLICY[P_REVIEW].canonical().into(), json!(0.2));
                json!(0.5)
            }
            ("expectation", E_KIND) => json!("invariant"),
            ("expectation", slot) => {
                let kind = match slot {
                    E_MOVEMENT => "not-less-urgent",
                    E_ROUTES => "allowed-routes",
                    _ => "invariant",
                };
                obj.insert(EXPECTATION[E_KIND].canonical().into(), json!(kind));
                match slot {
                    E_ROUTES => json!(["pass", "review"]),
                    E_SAME_ROUTE => json!(false),
                    _ => json!(0.125),
                }
            }
            _ => match f.json {
                Json::Id | Json::Text => json!(format!("{} text", f.name)),
                Json::Number => json!(3),
                Json::Unit => json!(0.25),
                Json::Bool => json!(false),
                Json::Strings => json!(["a", "b"]),
                Json::Route => json!("pass"),
                Json::Outcome => json!("error"),
                Json::Question => json!("a question"),
                Json::Any => json!({"a": 1, "b": [2]}),
                Json::Object | Json::Routes => unreachable!("{table}.{}", f.name),
            },
        };
        if let Some(spelling) = spelling {
            obj.insert(spelling.into(), value);
        }
        Value::Object(line).to_string()
    }

    fn slow(line: &str) -> PairRecord {
        map_record(serde_json::from_str(line).unwrap()).unwrap()
    }

    /// What the fast path keeps of a pair, from either path.
    fn kept(r: &PairRecord) -> String {
        let side = |s: &crate::core::model::Side| {
            format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                s.probability, s.confidence, s.route, s.outcome, s.error, s.latency_ms, s.decision
            )
        };
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} | {} | {} | {:?}",
            r.family,
            r.transformation,
            r.policy,
            r.expectation,
            r.minimum_boundary_margin,
            r.allowed_changes,
            r.passed,
            r.reasons,
            r.repetition,
            side(&r.source),
            side(&r.variant),
            r.field_warnings,
        )
    }

    /// Every spelling of every field: the slow path reads it (the record is
    /// the one its first spelling gives, and not the one without it), and
    /// the fast path takes the line and keeps what the slow path read.
    #[test]
    fn each_spelling_reads_the_same_field_by_both_paths() {
        let mut checked = 0;
        let mut reader = LineReader::new();
        for (table, fields, _) in TABLES {
            for f in fields {
                let first = line_with(table, f, Some(f.canonical()));
                let expected = slow(&first);
                assert!(expected.extra.is_empty(), "{first}");
                assert!(expected.field_warnings.is_empty(), "{first}");
                if f.json != Json::Id {
                    let without = slow(&line_with(table, f, None));
                    assert_ne!(without, expected, "{table}.{} is read: {first}", f.name);
                }
                for spelling in f.spellings {
                    let line = line_with(table, f, Some(spelling));
                    let r = slow(&line);
                    assert_eq!(r, expected, "{line}");
                    let fast = reader
                        .parse(&line)
                        .unwrap_or_else(|| panic!("fast: {line}"));
                    assert_eq!(kept(&fast.record), kept(&r), "{line}");
                    assert_eq!(fast.case_id, r.case_id.as_str(), "{line}");
                    assert_eq!(fast.variant_id, r.variant_id.as_str(), "{line}");
                    assert_eq!(fast.contract.as_deref(), r.contract_version.as_deref());
                    assert_eq!(fast.schema.as_deref(), r.state_schema_version.as_deref());
                    assert_eq!(fast.model.as_deref(), r.model_id.as_deref());
                    checked += 1;
                }
            }
        }
        assert_eq!(
            checked,
            TABLES.iter().map(|t| spellings(t.1)).sum::<usize>()
        );
    }

    /// Two spellings of one field are one field to both paths: the slow path
    /// reads the first spelling that is present, the fast path declines.
    #[test]
    fn two_spellings_of_one_field_are_one_field() {
        let mut reader = LineReader::new();
        for (table, fields, _) in TABLES {
            for f in fields.iter().filter(|f| f.spellings.len() > 1) {
                for (i, a) in f.spellings.iter().enumerate() {
                    for b in &f.spellings[i + 1..] {
                        let mut line: Map<String, Value> =
                            serde_json::from_str(&line_with(table, f, Some(a))).unwrap();
                        let obj = object_of(&mut line, table);
                        let value = obj[*a].clone();
                        obj.insert(b.to_string(), json!(null));
                        let with_null = Value::Object(line.clone()).to_string();
                        let obj = object_of(&mut line, table);
                        obj.insert(b.to_string(), value);
                        let line = Value::Object(line).to_string();
                        assert!(reader.parse(&line).is_none(), "{line}");
                        let read = map_record(serde_json::from_str(&line).unwrap());
                        let first = map_record(serde_json::from_str(&with_null).unwrap());
                        assert_eq!(read, first, "{line}");
                    }
                }
            }
        }
    }

    /// Every field name the seeds' runners write into a record, each with
    /// the object it is written in: seed 000's metadata, expectations,
    /// policy, assessments and results (sections 4 and 5, and the record
    /// list of section 5), and seed 001's `allowed`.
    const SEED_NAMES: [(&str, &str); 37] = [
        ("top", "caseId"),
        ("top", "variantId"),
        ("top", "label"),
        ("top", "contractVersion"),
        ("top", "stateSchemaVersion"),
        ("top", "sourceDatasetVersion"),
        ("top", "humanReviewedAt"),
        ("top", "goldUrgent"),
        ("top", "notes"),
        ("top", "policy"),
        ("top", "expectation"),
        ("top", "minimumBoundaryMargin"),
        ("top", "allowedChanges"),
        ("top", "allowed"),
        ("top", "source"),
        ("top", "variant"),
        ("top", "sourceRoute"),
        ("top", "variantRoute"),
        ("top", "passed"),
        ("top", "reasons"),
        ("top", "timestamp"),
        ("side", "question"),
        ("side", "state"),
        ("side", "noul"),
        ("side", "confidence"),
        ("side", "latency"),
        ("side", "latencyMs"),
        ("side", "outcome"),
        ("response", "noul"),
        ("policy", "reviewThreshold"),
        ("policy", "actionThreshold"),
        ("expectation", "kind"),
        ("expectation", "maximumNoulDrift"),
        ("expectation", "maximumConfidenceDrift"),
        ("expectation", "requireSameRoute"),
        ("expectation", "permittedProbabilityMovement"),
        ("expectation", "allowedRoutes"),
    ];

    #[test]
    fn every_field_name_of_the_seeds_has_a_slot() {
        for (object, name) in SEED_NAMES {
            let (_, _, slot_of) = TABLES.iter().find(|t| t.0 == object).copied().unwrap();
            assert!(slot_of(name.as_bytes()).is_some(), "{object}.{name}");
        }
    }

    /// Records written with the seeds' names: both paths read them alike,
    /// every name lands in its field (nothing is left in `extra`), and a
    /// `goldUrgent` that is not a boolean is a field warning.
    #[test]
    fn records_in_the_seeds_names_are_read_by_both_paths() {
        let path = format!(
            "{}/tests/fixtures/stats/seed-names.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let first = slow(lines[0]);
        assert!(first.extra.is_empty(), "{:?}", first.extra);
        assert!(
            first.field_warnings.is_empty(),
            "{:?}",
            first.field_warnings
        );
        assert_eq!(first.dataset_version.as_deref(), Some("eval-2026-11"));
        assert_eq!(first.gold_urgent, Some(true));
        assert_eq!(
            first.human_reviewed_at.as_deref(),
            Some("2026-11-20T15:04:00Z")
        );
        assert_eq!(
            first.notes.as_deref(),
            Some("Confirmed outage; the on-call engineer labelled it urgent.")
        );
        assert_eq!(first.allowed_changes, Some(vec!["question".to_string()]));
        assert_eq!(first.source.probability, Some(0.91));
        let bad = slow(lines[2]);
        assert_eq!(bad.gold_urgent, None);
        assert_eq!(
            bad.field_warnings,
            ["`goldUrgent` should be true or false but is a string; treated as not recorded"]
        );
        let mut reader = LineReader::new();
        for line in &lines[..2] {
            let fast = reader.parse(line).unwrap_or_else(|| panic!("fast: {line}"));
            assert_eq!(kept(&fast.record), kept(&slow(line)), "{line}");
        }
        assert!(reader.parse(lines[2]).is_none(), "the slow path warns");

        use crate::core::derive::ValidityCode;
        use crate::core::index::{OpenOptions, load_run_with};
        use crate::core::load::line::ParseMode;
        let run = |mode| {
            load_run_with(std::slice::from_ref(&path), &OpenOptions::default(), mode).unwrap()
        };
        let (fast, slow) = (run(ParseMode::Fast), run(ParseMode::Slow));
        assert_eq!(format!("{:?}", fast.rows), format!("{:?}", slow.rows));
        assert_eq!(fast.problems, slow.problems);
        assert_eq!(fast.problems.len(), 1);
        // `allowed` declares the changes: the pairs are judged valid.
        assert!(
            fast.rows
                .iter()
                .all(|r| r.validity() == ValidityCode::Valid)
        );
    }
}
