//! The Answers section of another tool's pair: what the model answered on
//! each side (its parsed answer and its output text), the target, and every
//! score the tool gave, as that tool's own viewer shows them. The converters
//! write these as side fields the native record has no slot for
//! (`expected`, `answer`, `output`, `scores`), so they are read from the
//! record as written.

use serde_json::Value;

use super::{Builder, VALUE_CAP, cap, s};
use crate::tui::style::inert_spans;

/// How many lines of a side's output text are shown; the raw view has all.
const OUTPUT_LINES: usize = 8;

/// The section, when either side of `raw` carries an answer, output,
/// expected answer or scores.
pub(super) fn answers(b: &mut Builder, raw: &Value) {
    let sides = [("source ", &raw["source"]), ("variant", &raw["variant"])];
    let has = |side: &Value| {
        ["expected", "answer", "output", "scores"]
            .iter()
            .any(|k| side.get(k).is_some_and(|v| !v.is_null()))
    };
    if !sides.iter().any(|(_, side)| has(side)) {
        return;
    }
    let t = b.t;
    b.heading("Answers");
    let target = |side: &Value| {
        side.get("expected")
            .filter(|v| !v.is_null())
            .map(expected_text)
    };
    match (target(sides[0].1), target(sides[1].1)) {
        (Some(a), Some(v)) if a == v => {
            let mut l = vec![s("target   ", t.dim)];
            l.extend(inert_spans(&cap(&a, VALUE_CAP), t.base, t));
            b.push(l);
        }
        (a, v) => {
            for (name, text) in [("source ", a), ("variant", v)] {
                let mut l = vec![s(format!("target   {name} "), t.dim)];
                match text {
                    Some(x) => l.extend(inert_spans(&cap(&x, VALUE_CAP), t.base, t)),
                    None => l.push(super::not_recorded(t)),
                }
                b.push(l);
            }
        }
    }
    let answer = |side: &Value| {
        side.get("answer")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let changed = matches!(
        (answer(sides[0].1), answer(sides[1].1)),
        (Some(a), Some(v)) if a != v
    );
    for (name, side) in sides {
        let mut l = vec![s(format!("{name}  "), t.dim)];
        let mut first = true;
        let mut sep = |l: &mut Vec<_>| {
            if !first {
                l.push(s(" · ", t.dim));
            }
            first = false;
        };
        if let Some(a) = answer(side) {
            sep(&mut l);
            l.push(s("answer ", t.dim));
            l.extend(inert_spans(&cap(&a, VALUE_CAP), t.title, t));
            if changed && name == "variant" {
                l.push(s("  CHANGED", t.fail));
            }
        }
        let scored = scores(side.get("scores"));
        if !scored.is_empty() {
            sep(&mut l);
            l.push(s("scores ", t.dim));
            for (i, (k, v)) in scored.iter().enumerate() {
                if i > 0 {
                    l.push(s(", ", t.dim));
                }
                l.extend(inert_spans(&cap(k, VALUE_CAP), t.dim, t));
                l.push(s(" ", t.dim));
                l.extend(inert_spans(&cap(v, VALUE_CAP), t.base, t));
            }
        }
        if first {
            l.push(s("no answer or score", t.dim));
        }
        b.push_indent(l, 9);
        match side.get("output").filter(|v| !v.is_null()) {
            Some(o) => {
                let text = match o {
                    Value::String(x) => x.clone(),
                    other => other.to_string(),
                };
                let lines: Vec<&str> = text.lines().collect();
                for line in lines.iter().take(OUTPUT_LINES) {
                    let mut l = vec![s("         │ ", t.dim)];
                    l.extend(inert_spans(&cap(line, VALUE_CAP), t.base, t));
                    b.push_indent(l, 11);
                }
                if lines.len() > OUTPUT_LINES {
                    b.push_indent(
                        vec![s(
                            format!(
                                "         │ … {} more lines in the raw view (r)",
                                lines.len() - OUTPUT_LINES
                            ),
                            t.dim,
                        )],
                        11,
                    );
                }
            }
            None => b.push_indent(vec![s("         no output", t.dim)], 11),
        }
    }
}

/// An expected answer as text: a string as it is, a promptfoo assertion
/// `{type, value}` as `type value`, anything else as compact JSON.
fn expected_text(v: &Value) -> String {
    match v {
        Value::String(x) => x.clone(),
        Value::Object(o) => match (o.get("type").and_then(Value::as_str), o.get("value")) {
            (Some(kind), Some(Value::String(x))) if o.len() == 2 => format!("{kind} {x}"),
            (Some(kind), Some(x)) if o.len() == 2 => format!("{kind} {x}"),
            _ => v.to_string(),
        },
        other => other.to_string(),
    }
}

/// Every score, flattened to `name value` (a nested object's names are
/// its own: promptfoo's named scores).
fn scores(v: Option<&Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(Value::Object(m)) = v else {
        return out;
    };
    for (k, v) in m {
        match v {
            Value::Object(inner) => {
                for (ik, iv) in inner {
                    out.push((ik.clone(), value_text(iv)));
                }
            }
            other => out.push((k.clone(), value_text(other))),
        }
    }
    out
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(x) => x.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.fract() != 0.0 => format!("{}", (x * 1000.0).round() / 1000.0),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}
