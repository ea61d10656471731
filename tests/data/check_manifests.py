"""Validates manifests against `airlock schema`, for tests/it/setup.rs.

    check_manifests.py SCHEMA MANIFEST...

Reads each MANIFEST as TOML (tomllib) and validates it with `jsonschema` against SCHEMA
(draft 2020-12, itself checked first). Prints one JSON object: each manifest's path and its
list of errors (empty when it validates). Exits 0 whenever it could do all that.
"""
import json
import sys
import tomllib

import jsonschema

schema_path, *manifests = sys.argv[1:]
with open(schema_path, encoding="utf-8") as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
found = {}
for path in manifests:
    with open(path, "rb") as f:
        manifest = tomllib.load(f)
    found[path] = [
        f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(manifest)
    ]
print(json.dumps(found))
