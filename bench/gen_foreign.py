#!/usr/bin/env python3
"""Write large result files of other tools for bench/foreign.sh, by
repeating the rows of the fixtures the real tools wrote
(tests/fixtures/formats/) under new ids until a file reaches SIZE_MB:

  promptfoo.json   keyword/results.json's results, as one document
  promptfoo.jsonl  the same results, one a line
  inspect.json     urgency.json's samples, as one JSON log
  inspect.eval     the same log as an .eval archive (deflated members)
  multivon.jsonl   validations.jsonl's records (their digests no longer
                   match the new ids: each record is also a problem)
  checklist.json   sentiment-brittle.json's tests, repeated
  context-probe.jsonl  demo-results.jsonl's trials under new case ids

Usage: gen_foreign.py OUT_DIR SIZE_MB [KIND...]
  (KIND: promptfoo, inspect, multivon, checklist, context_probe; all by default)
"""
import copy
import json
import os
import sys
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "formats")


def load(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def rename(value, old, new):
    """Every string equal to, or starting with, an id of the copy renamed."""
    if isinstance(value, dict):
        return {k: rename(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [rename(v, old, new) for v in value]
    if isinstance(value, str) and value.startswith(old):
        return new + value[len(old):]
    return value


def promptfoo(out, size):
    """Written as it is made (the rows of a 1 GB file do not fit a Python list)."""
    doc = load("promptfoo/keyword/results.json")
    rows = doc["results"]["results"]
    ntests = 1 + max(r["testIdx"] for r in rows)
    doc["results"]["results"] = "@@RESULTS@@"
    before, after = json.dumps(doc).split('"@@RESULTS@@"')
    written = 0
    copy_n = 0
    with open(os.path.join(out, "promptfoo.json"), "w") as whole, \
            open(os.path.join(out, "promptfoo.jsonl"), "w") as lines:
        whole.write(before + "[")
        while written < size:
            for r in rows:
                r2 = copy.deepcopy(r)
                r2["testIdx"] = r["testIdx"] + copy_n * ntests
                meta = r2["testCase"].setdefault("metadata", {})
                for k in ("case_id", "base_id"):
                    if k in meta:
                        meta[k] = f"{meta[k]}-{copy_n}"
                # A base without metadata is named by its description.
                r2["testCase"]["description"] = f"{r2['testCase'].get('description', '')}-{copy_n}"
                r2["id"] = f"{r['id']}-{copy_n}"
                line = json.dumps(r2)
                whole.write((", " if written else "") + line)
                lines.write(line + "\n")
                written += len(line)
            copy_n += 1
        whole.write("]" + after)


def inspect(out, size):
    log = load("inspect/urgency.json")
    samples = log["samples"]
    new = []
    written = 0
    copy_n = 0
    while written < size:
        for s in samples:
            s2 = copy.deepcopy(s)
            s2["id"] = f"{s['id']}-{copy_n}"
            if s2.get("metadata", {}).get("base_id"):
                s2["metadata"]["base_id"] = f"{s2['metadata']['base_id']}-{copy_n}"
            new.append(s2)
            written += len(json.dumps(s2))
        copy_n += 1
    log["samples"] = new
    with open(os.path.join(out, "inspect.json"), "w") as f:
        json.dump(log, f)
    header = dict(log)
    header.pop("samples")
    with zipfile.ZipFile(os.path.join(out, "inspect.eval"), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header))
        for s in new:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))


def multivon(out, size):
    with open(os.path.join(ROOT, "multivon/validations.jsonl")) as f:
        records = [json.loads(l) for l in f if l.strip()]
    written = 0
    copy_n = 0
    with open(os.path.join(out, "multivon.jsonl"), "w") as f:
        while written < size:
            for r in records:
                r2 = copy.deepcopy(r)
                for side in ("base", "candidate"):
                    r2[side]["case_id"] = f"{r[side]['case_id']}-{copy_n}"
                    r2[side]["source_id"] = f"{r[side].get('source_id')}-{copy_n}"
                line = json.dumps(r2)
                f.write(line + "\n")
                written += len(line) + 1
            copy_n += 1


def checklist(out, size):
    doc = load("checklist/sentiment-brittle.json")
    tests = doc["tests"]
    new = []
    written = 0
    copy_n = 0
    while written < size:
        for t in tests:
            t2 = copy.deepcopy(t)
            t2["name"] = f"{t['name']} #{copy_n}"
            for tc in t2["testcases"]:
                for ex in tc["examples"]:
                    for side in ("old", "new"):
                        if ex.get(side):
                            ex[side]["text"] = f"{ex[side]['text']} ({copy_n})"
            new.append(t2)
            written += len(json.dumps(t2))
        copy_n += 1
    doc["tests"] = new
    with open(os.path.join(out, "checklist.json"), "w") as f:
        json.dump(doc, f)


def context_probe(out, size):
    with open(os.path.join(ROOT, "context-probe/demo-results.jsonl")) as f:
        trials = [json.loads(l) for l in f if l.strip()]
    written = 0
    copy_n = 0
    with open(os.path.join(out, "context-probe.jsonl"), "w") as f:
        while written < size:
            for t in trials:
                t2 = dict(t)
                t2["case_id"] = f"{t['case_id']}-{copy_n}"
                t2["trial_id"] = f"{t['trial_id']}-{copy_n}"
                line = json.dumps(t2)
                f.write(line + "\n")
                written += len(line) + 1
            copy_n += 1


def main():
    out, size = sys.argv[1], int(float(sys.argv[2]) * 1024 * 1024)
    os.makedirs(out, exist_ok=True)
    makers = (promptfoo, inspect, multivon, checklist, context_probe)
    wanted = sys.argv[3:]
    for make in makers:
        if not wanted or make.__name__ in wanted:
            make(out, size)


main()
