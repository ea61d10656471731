"""Checks the reports `airlock audit` wrote, for tests/it/audit_reports.rs.

    check_reports.py SCHEMA SARIF JUNIT

Validates SARIF against the SARIF 2.1.0 JSON schema (draft 4) with `jsonschema`, and
validates a copy broken on purpose too (so a validator that accepts anything is caught);
parses JUNIT with xml.etree. Prints one JSON object: the schema errors, the broken copy's
error count, and the JUnit structure. Exits 0 whenever it could do all that.
"""
import copy
import json
import sys
import xml.etree.ElementTree as ET

import jsonschema

schema_path, sarif_path, junit_path = sys.argv[1:4]
with open(schema_path, encoding="utf-8") as f:
    schema = json.load(f)
with open(sarif_path, encoding="utf-8") as f:
    sarif = json.load(f)

validator = jsonschema.Draft4Validator(schema)
jsonschema.Draft4Validator.check_schema(schema)
errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(sarif)]

broken = copy.deepcopy(sarif)
broken["version"] = "2.0.0"
for run in broken.get("runs", []):
    for result in run.get("results", []):
        result["level"] = "severe"
        result.pop("message", None)
broken_errors = sum(1 for _ in validator.iter_errors(broken))

root = ET.parse(junit_path).getroot()
suites = []
for suite in root.findall("testsuite"):
    cases = []
    for case in suite.findall("testcase"):
        failure = case.find("failure")
        error = case.find("error")
        out = case.find("system-out")
        cases.append({
            "name": case.get("name"),
            "classname": case.get("classname"),
            "time": case.get("time"),
            "failure": None if failure is None else {
                "type": failure.get("type"),
                "message": failure.get("message"),
                "text": failure.text,
            },
            "error": None if error is None else error.get("message"),
            "system_out": None if out is None else out.text,
        })
    suites.append({
        "name": suite.get("name"),
        "tests": suite.get("tests"),
        "failures": suite.get("failures"),
        "cases": cases,
    })

print(json.dumps({
    "sarif_errors": errors,
    "broken_sarif_errors": broken_errors,
    "junit": {
        "tag": root.tag,
        "tests": root.get("tests"),
        "failures": root.get("failures"),
        "errors": root.get("errors"),
        "suites": suites,
    },
}))
