#!/usr/bin/env python3
"""Counts the public API of the `airlock` library from rustdoc's JSON output.

    cargo +nightly rustdoc -p airlock --all-features -- -Z unstable-options --output-format json
    python3 tools/public-items.py [target/doc/airlock.json] [--list]

Walks from the crate root through public modules and re-exports (`pub use`), skipping items
marked `#[doc(hidden)]` (the `__private` module of internals for benchmarks and fuzz targets)
and re-exported crates (`schemars`, `serde_json`, `secrecy`). Prints the public modules, the
top-level items (the `limits` constants apart from the rest) and the methods, fields and
variants those items carry; `--list` names every top-level item.
"""

import json
import sys


def hidden(item):
    for attr in item.get("attrs", []):
        text = attr if isinstance(attr, str) else json.dumps(attr)
        if "hidden" in text and "doc" in text:
            return True
    return False


def kind(item):
    return next(iter(item["inner"]), "?") if isinstance(item["inner"], dict) else item["inner"]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = args[0] if args else "target/doc/airlock.json"
    listing = "--list" in sys.argv
    with open(path, encoding="utf-8") as file:
        doc = json.load(file)
    index = doc["index"]

    def get(item_id):
        return index.get(str(item_id))

    modules = []
    top = {}  # id -> (path, kind)
    seen_modules = set()

    def walk(module_id, prefix):
        if module_id in seen_modules:
            return
        seen_modules.add(module_id)
        module = get(module_id)
        for child_id in module["inner"]["module"]["items"]:
            child = get(child_id)
            if child is None or child.get("visibility") != "public" or hidden(child):
                continue
            k = kind(child)
            if k == "use":
                use = child["inner"]["use"]
                target = get(use["id"]) if use.get("id") is not None else None
                if target is None:
                    continue  # a re-exported crate, or an item of another crate
                if hidden(target):
                    continue
                name = use["name"]
                tk = kind(target)
                if tk == "module":
                    if use.get("is_glob"):
                        walk(use["id"], prefix)
                    continue  # a re-exported crate module
                top.setdefault(str(use["id"]), (f"{prefix}{name}", tk))
            elif k == "module":
                modules.append(f"{prefix}{child['name']}")
                walk(child_id, f"{prefix}{child['name']}::")
            else:
                top.setdefault(str(child_id), (f"{prefix}{child['name']}", k))

    walk(doc["root"], "")

    def members(item_id):
        item = get(item_id)
        k = kind(item)
        inner = item["inner"][k]
        count = 0
        if k == "struct":
            fields = inner.get("kind", {})
            if isinstance(fields, dict):
                plain = fields.get("plain", {})
                for field_id in plain.get("fields", []) if isinstance(plain, dict) else []:
                    field = get(field_id)
                    count += bool(field and field.get("visibility") == "public")
        if k == "enum":
            count += len(inner.get("variants", []))
        if k == "trait":
            count += len(inner.get("items", []))
        for impl_id in inner.get("impls", []):
            impl = get(impl_id)
            if impl is None:
                continue
            body = impl["inner"]["impl"]
            if body.get("trait") is not None or body.get("synthetic") or body.get("blanket_impl"):
                continue
            for method_id in body.get("items", []):
                method = get(method_id)
                if method and method.get("visibility") == "public" and not hidden(method):
                    count += 1
        return count

    constants = sorted(p for p, k in top.values() if p.startswith("limits::") and k == "constant")
    others = sorted((p, k) for p, k in top.values() if not (p.startswith("limits::") and k == "constant"))
    total_members = sum(members(i) for i in top)
    print(f"public modules: {len(modules)} ({', '.join(sorted(modules))})")
    print(f"top-level items: {len(top)} = {len(constants)} limits constants + {len(others)} others")
    print(f"methods, fields and variants of them: {total_members}")
    if listing:
        for p, k in others:
            print(f"  {k:10} {p}")


if __name__ == "__main__":
    main()
