#!/usr/bin/env python3
"""Import cycles between the modules of each workspace crate, from its `crate::` and `super::`
paths (not a compiler: a measure for reviews and the issue-17 closing note).

    python3 tools/module-cycles.py            # the binary's src/ and every crate under crates/
    python3 tools/module-cycles.py --edges    # also print each cycle's edges with the files
    python3 tools/module-cycles.py --root DIR # another tree of the same shape (its test does)

A module's tests (`tests.rs` files and `#[cfg(test)] mod tests` blocks) are left out: a test
may use anything. So are modules declared only for tests and fuzz targets (`#[cfg(test)]`,
`#[cfg(fuzzing)]`, `#[cfg(any(test, fuzzing))]` on their `mod`), which the library never
compiles: the fuzz harnesses may reach into any module they drive. A path into an ancestor or a descendant is not counted (a module and its
submodules are one unit to their neighbours). Modules are compared at every depth: the top
level (`dispatch`, `engine`, `tools`), one below (`manifest::checked`, `manifest::risk`),
and so on down (`transport::http::body`, `transport::http::calls`): issue 37 found cycles
between siblings three deep that a comparison at two depths folded into one module.
A cycle is a strongly connected component of more than one module; the exit status is 1 when
any is found.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


TEST_ONLY = re.compile(
    r"#\[cfg\((?:test|fuzzing|any\(test,\s*fuzzing\)|any\(fuzzing,\s*test\))\)\]\s*"
    rf"(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+({IDENT})\s*;"
)


def modules(src):
    """Each `.rs` file under `src` by its module path (a tuple; the crate root is ()), but
    the modules only tests and fuzz targets compile, and what is under them."""
    found = {}
    for path in sorted(src.rglob("*.rs")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("lib", "main", "mod"):
            parts.pop()
        if parts and parts[-1] == "tests":
            continue
        found[tuple(parts)] = path
    test_only = set()
    for here, path in found.items():
        for m in TEST_ONLY.finditer(path.read_text()):
            test_only.add(here + (m.group(1),))
    return {
        here: path
        for here, path in found.items()
        if not any(here[: len(t)] == t for t in test_only)
    }


def code(path):
    """A file's text without its test module and comments."""
    text = path.read_text()
    cut = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod tests\s*\{", text, re.M)
    if cut:
        text = text[: cut.start()]
    return "\n".join(re.sub(r"//.*", "", line) for line in text.splitlines())


def expand(text):
    """Every path a `use` tree or an expression names, `{a, b::{c, d}}` groups expanded."""

    def tree(s, prefix, out):
        s = s.strip()
        m = re.match(rf"((?:{IDENT}::)*)\{{(.*)\}}$", s, re.S)
        if m:
            head = prefix + m.group(1)
            depth, part = 0, ""
            for ch in m.group(2):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                if ch == "," and depth == 0:
                    tree(part, head, out)
                    part = ""
                else:
                    part += ch
            if part.strip():
                tree(part, head, out)
        elif s:
            out.append(prefix + s.split(" as ")[0].strip())

    paths = []
    for m in re.finditer(r"\buse\s+([^;]*);", text, re.S):
        tree(m.group(1), "", paths)
    text = re.sub(r"\buse\s+[^;]*;", "", text, flags=re.S)
    paths += re.findall(rf"\b(?:crate|super)(?:::(?:super|{IDENT}))+", text)
    return paths


def target(path, here, known):
    """The module a path points into, or None when it leaves the crate."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    elif parts[0] in ("super", "self"):
        base = list(here)
        while parts and parts[0] in ("super", "self"):
            if parts.pop(0) == "super":
                base.pop()
        base, rest = tuple(base), parts
    else:
        return None
    best = base
    for i in range(1, len(rest) + 1):
        if base + tuple(rest[:i]) in known:
            best = base + tuple(rest[:i])
    return best


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def packages(root):
    """The package at the root (the binary) and each one under `crates/`."""
    found = [root] if (root / "src").is_dir() else []
    if (root / "crates").is_dir():
        found += sorted(p for p in (root / "crates").iterdir() if p.is_dir())
    return found


def main(argv):
    show_edges = "--edges" in argv
    root = ROOT
    if "--root" in argv:
        at = argv.index("--root") + 1
        if at >= len(argv):
            print("--root needs a directory", file=sys.stderr)
            return 2
        root = pathlib.Path(argv[at]).resolve()
    found_any = False
    for crate in packages(root):
        src = crate / "src"
        if not src.is_dir():
            continue
        known = modules(src)
        refs = []  # (from, to, file)
        for here, path in known.items():
            for p in expand(code(path)):
                to = target(p, here, known)
                if to is not None:
                    refs.append((here, to, path))
        deepest = max((len(here) for here in known), default=0)
        reported = set()
        for depth in range(1, deepest + 1):
            cut = lambda m: m[:depth]
            nodes, edges, why = set(), {}, {}
            for here, to, path in refs:
                a, b = cut(here), cut(to)
                if not a or not b or a == b or a == b[: len(a)] or b == a[: len(b)]:
                    continue
                nodes |= {a, b}
                edges.setdefault(a, set()).add(b)
                why.setdefault((a, b), set()).add(str(path.relative_to(root)))
            for comp in sccs(nodes, edges):
                # A module as deep as it goes is the same at every depth below: say it once.
                if frozenset(comp) in reported:
                    continue
                reported.add(frozenset(comp))
                found_any = True
                names = ["::".join(m) for m in comp]
                name = crate.name if crate != root else "(root package)"
                print(f"{name} (depth {depth}): cycle {' <-> '.join(names)}")
                if show_edges:
                    for a in comp:
                        for b in sorted(edges.get(a, ())):
                            if b in comp:
                                files = ", ".join(sorted(why[(a, b)]))
                                print(f"    {'::'.join(a)} -> {'::'.join(b)}  ({files})")
    if not found_any:
        print("no import cycles")
    return 1 if found_any else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
