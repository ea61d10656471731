#!/usr/bin/env python3
"""Every link and path reference in the repository must lead to something in it: a `.ci/run`
step (`layout`), so that the manual, the comments and the build files never send a reader (or
a build) outside the checkout, nor to a file that was moved or never committed.

    python3 tools/links.py              # check the repository; exit status 1 on a bad one
    python3 tools/links.py --self-test  # plant bad links in a scratch repository: each must fail

What is read (the files git tracks or would track, so never target/, node_modules/ or
tests/clients/.env; not the fuzz corpora and regressions, which are hostile bytes on purpose):

- Markdown: every inline link and reference definition that is not a URL must name an
  existing file or directory inside the repository, resolved from the file's directory; a
  `#fragment` must be a heading of the file it names. Every code span word that starts with a
  top-level entry of the repository (`crates/…`, `tests/…`, `SECURITY.md`) must exist
  (`<placeholder>` parts match anything; a path git ignores, such as an install folder the
  scripts create, counts as existing). A bare `NAME.md` must be a file of the repository.
- Every text file: a path with `..` in it (`../elsewhere`, `$root/../x`) must stay inside the
  repository; Rust `include!`, `include_str!`, `include_bytes!` and `#[path]`, and Cargo's
  `path = "…"`, must name an existing file inside it; a bare `NAME.md` must exist.

There is no exception: nothing in the repository may lead outside it. Absolute paths are the
host's (`/etc/passwd`, `/usr/bin`), never a reference into the repository, and are not
checked; URLs are not fetched.
"""

import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (file, the reference as written): why it may lead outside the repository.
ALLOWED_OUTSIDE: dict = {}

# Hostile inputs kept as data: their bytes are not references. This script holds the bad
# references its self-test plants.
SKIPPED_PREFIXES = ("fuzz/corpus/", "fuzz/regressions/", "fuzz/artifacts/", "tools/links.py")

# Code span words that look like paths but name MCP methods.
NOT_PATHS = {"tools/list", "tools/call"}

# (file, the text as written): values shown as what an attacker sends, not references.
NOT_REFERENCES = {
    ("docs/REVIEWER-GUIDE.md", "../outside-canary"),
    # The first session's refused call: the path an agent tries, shown refused.
    ("README.md", "../../../etc/passwd"),
}

TEXT_SUFFIXES = {
    ".md", ".rs", ".toml", ".sh", ".py", ".yml", ".yaml", ".json", ".txt", ".mjs", ".awk",
    ".dict", "",
}

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
FENCE = re.compile(r"^\s*(```|~~~)")
BARE_MD = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9_-]*\.md)\b")
DOTDOT = re.compile(
    r"""(?:(?<=^)|(?<=[\s"'`(:,\[=])|(?<=:-))"""
    r"((?:\$\{?[A-Za-z_]\w*\}?/(?:[\w.@-]+/)*?\.\./|\.\./)(?:[\w.@{}$-]+/?)*)",
    re.M,
)
RUST_INCLUDE = re.compile(r"""(?:include|include_str|include_bytes)!\(\s*"([^"]+)"\s*\)|#\[path\s*=\s*"([^"]+)"\]""")
CARGO_PATH = re.compile(r"""\bpath\s*=\s*"([^"]+)\"""")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def repository_files(root):
    """The files git tracks or would track (not ignored), relative to `root`, sorted."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")
    files = sorted({name for name in out.split("\0") if name})
    return [name for name in files if (root / name).is_file()]


def ignored(root, relative):
    """Whether git ignores `relative` (an install or build folder the scripts create)."""
    probe = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", relative], cwd=root, capture_output=True
    )
    return probe.returncode == 0


def inside(root, path):
    """`path` made absolute and normal (without following links), if it stays in `root`."""
    normal = pathlib.Path(os.path.normpath(path))
    try:
        normal.relative_to(root)
    except ValueError:
        return None
    return normal


def slug(heading):
    """The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces as dashes."""
    text = re.sub(r"`|\*\*?|__?", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    """The fragments a Markdown file's headings answer to."""
    found, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def prose_and_spans(text):
    """A Markdown text without its fenced blocks, and its code spans (outside fences)."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            kept.append("")
            continue
        kept.append("" if fenced else line)
    prose = "\n".join(kept)
    spans = [match.group(2) for match in CODE_SPAN.finditer(prose)]
    return CODE_SPAN.sub(" ", prose), spans


def exists(root, relative):
    """Whether `relative` (with `<placeholder>` parts) names something in the repository."""
    pattern = re.sub(r"<[^>]*>", "*", relative).rstrip("/")
    if "*" in pattern:
        return any(root.glob(pattern)) or ignored(root, pattern.split("*")[0] or ".")
    return (root / pattern).exists() or ignored(root, pattern)


class Checker:
    """The problems found in one repository, as `file: what` lines."""

    def __init__(self, root):
        self.root = root
        self.files = repository_files(root)
        self.names = {pathlib.PurePosixPath(name).name for name in self.files}
        self.top = {name.split("/", 1)[0] for name in self.files}
        self.problems = []
        self.anchor_cache = {}
        self.reported = set()

    def problem(self, name, text, word=None):
        if word is not None:
            if (name, word) in self.reported:
                return
            self.reported.add((name, word))
        self.problems.append(f"{name}: {text}")

    def run(self):
        for name in self.files:
            if name.startswith(SKIPPED_PREFIXES):
                continue
            path = self.root / name
            if path.suffix not in TEXT_SUFFIXES and path.name not in ("Dockerfile", "run"):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if path.suffix == ".md":
                self.markdown(name, text)
            if path.suffix == ".rs":
                self.rust(name, text)
            if path.name == "Cargo.toml":
                self.cargo(name, text)
            self.dotdot(name, text)
            self.bare_md(name, text)
        return self.problems

    def markdown(self, name, text):
        prose, spans = prose_and_spans(text)
        here = (self.root / name).parent
        for target in INLINE_LINK.findall(prose) + REFERENCE_DEF.findall(prose):
            self.link(name, here, target)
        for span in spans:
            for word in span.split():
                self.span_word(name, here, word.strip(".,;:()'\""))

    def link(self, name, here, target):
        if SCHEME.match(target):
            return
        file_part, _, fragment = target.partition("#")
        if file_part.startswith("/"):
            self.problem(name, f"link `{target}` is absolute: link relative to the file")
            return
        resolved = inside(self.root, here / file_part) if file_part else self.root / name
        if resolved is None:
            self.problem(name, f"link `{target}` leads outside the repository", file_part)
            return
        if not resolved.exists():
            self.problem(name, f"link `{target}` leads to nothing")
            return
        if fragment and resolved.suffix == ".md":
            if resolved not in self.anchor_cache:
                self.anchor_cache[resolved] = anchors(resolved)
            if fragment not in self.anchor_cache[resolved]:
                self.problem(name, f"link `{target}`: no heading `#{fragment}` there")

    def span_word(self, name, here, word):
        if (name, word) in NOT_REFERENCES:
            return
        if word.startswith("../"):
            # Paths in prose are written from the root; a link is relative to its file.
            if inside(self.root, here / word) is None or inside(self.root, self.root / word) is None:
                self.problem(name, f"`{word}` leads outside the repository", word)
            return
        first = word.split("/", 1)[0]
        if first not in self.top or word in NOT_PATHS or word.startswith(("/", "$", "~")):
            return
        if "/" not in word and first != word:
            return
        if re.search(r"[{}*…]|\.\.\.", word):
            return
        if not exists(self.root, word):
            self.problem(name, f"`{word}` names nothing in the repository")

    def rust(self, name, text):
        here = (self.root / name).parent
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        for match in RUST_INCLUDE.finditer(code):
            target = match.group(1) or match.group(2)
            resolved = inside(self.root, here / target)
            if resolved is None:
                self.problem(name, f"`{target}` leads outside the repository")
            elif not resolved.exists():
                self.problem(name, f"`{target}` leads to nothing")

    def cargo(self, name, text):
        here = (self.root / name).parent
        for target in CARGO_PATH.findall(text):
            resolved = inside(self.root, here / target)
            if resolved is None:
                self.problem(name, f"path `{target}` leads outside the repository", target)
            elif not resolved.exists():
                self.problem(name, f"path `{target}` leads to nothing")

    def dotdot(self, name, text):
        """A path with `..` must not climb out: from the file's directory, or from the
        repository's root for `$root/…` and for the words of scripts run from there."""
        if name.endswith(".rs"):
            # Rust sources hold hostile path values in their tests; includes are read above.
            return
        here = (self.root / name).parent
        if name.endswith(".md"):
            text = INLINE_LINK.sub(" ", text)
        for match in DOTDOT.finditer(text):
            word = match.group(1)
            if (name, word) in ALLOWED_OUTSIDE or (name, word) in NOT_REFERENCES:
                continue
            variable = re.match(r"\$\{?([A-Za-z_]\w*)\}?/", word)
            if variable:
                if variable.group(1).lower() not in ("root", "repo", "here", "dir"):
                    continue
                base = self.root if variable.group(1).lower() in ("root", "repo") else here
                rest = word[variable.end():]
                if inside(self.root, base / rest) is None:
                    self.problem(name, f"`{word}` leads outside the repository", word)
                continue
            from_here = inside(self.root, here / word)
            from_root = inside(self.root, self.root / word)
            # A script may run from the root or from its folder: outside from both is outside.
            # A Markdown file's words are read from the root, its links from the file.
            if (from_here is None and from_root is None) or (
                name.endswith(".md") and (from_here is None or from_root is None)
            ):
                self.problem(name, f"`{word}` leads outside the repository", word)

    def bare_md(self, name, text):
        if name.endswith(".md"):
            # Link targets are checked as links; the rest of the prose and the spans here.
            prose, spans = prose_and_spans(text)
            text = INLINE_LINK.sub(" ", prose) + "\n" + "\n".join(spans)
        for word in BARE_MD.findall(text):
            if word not in self.names:
                self.problem(name, f"`{word}` is not a file of the repository")


def self_test():
    """Plants one bad reference of each kind beside good ones: each bad one must be reported,
    and nothing else."""
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch) / "repo"
        files = {
            "README.md": "See [the guide](docs/GUIDE.md#usage), [design](docs/GUIDE.md) and "
            "`docs/GUIDE.md`, `tools/list`, `tests/clients/.env`, SECURITY.md.\n",
            "SECURITY.md": "# Security\n",
            ".gitignore": "tests/clients/.env\n",
            "docs/GUIDE.md": "# Guide\n\n## Usage\n\n[up](../README.md), "
            "[outside](../../elsewhere.md), [gone](MISSING-FILE.md), "
            "[no heading](../SECURITY.md#nowhere), data in `../elsewhere` and "
            "`crates/gone.rs`; see PEERS.md.\n\n```sh\nbash ../elsewhere/x.sh\n```\n",
            ".ci/run": 'root=$(pwd)\ndata="${DATA:-$root/../elsewhere}"\n'
            'other="$root/../other"\n',
            "Cargo.toml": '[dependencies]\nx = { path = "../x" }\ny = { path = "crates/y" }\n',
            "crates/y/Cargo.toml": "[package]\n",
            "crates/y/src/lib.rs": '#[doc = include_str!("../../../README.md")]\n'
            'const A: &str = include_str!("../../../../outside.txt");\n'
            'fn t() { let p = "../../../etc/passwd"; }\n',
            "deny.toml": "# the snapshot in ../elsewhere/supply-chain\n",
        }
        for relative, body in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        found = Checker(root).run()
        expected = [
            ("docs/GUIDE.md", "`../../elsewhere.md` leads outside"),
            ("docs/GUIDE.md", "link `../../elsewhere.md` leads outside"),
            ("docs/GUIDE.md", "link `MISSING-FILE.md` leads to nothing"),
            ("docs/GUIDE.md", "no heading `#nowhere`"),
            ("docs/GUIDE.md", "`../elsewhere` leads outside"),
            ("docs/GUIDE.md", "`crates/gone.rs` names nothing"),
            ("docs/GUIDE.md", "`PEERS.md` is not a file"),
            ("docs/GUIDE.md", "`../elsewhere/x.sh` leads outside"),
            # A shell default (`${VAR:-…}`) is a path too.
            (".ci/run", "$root/../elsewhere"),
            (".ci/run", "`$root/../other` leads outside"),
            ("Cargo.toml", "path `../x` leads outside"),
            ("crates/y/src/lib.rs", "`../../../../outside.txt` leads outside"),
            ("deny.toml", "`../elsewhere/supply-chain` leads outside"),
        ]
        missing = [
            f"{name}: {text}" for name, text in expected
            if not any(line.startswith(name + ":") and text in line for line in found)
        ]
        unexpected = [
            line for line in found
            if not any(line.startswith(name + ":") and text in line for name, text in expected)
        ]
        for line in missing:
            print(f"links self-test: NOT REPORTED: {line}", file=sys.stderr)
        for line in unexpected:
            print(f"links self-test: REPORTED WRONGLY: {line}", file=sys.stderr)
        if missing or unexpected:
            return 1
        print(f"links self-test: {len(expected)} planted bad references reported, nothing else")
        return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    problems = Checker(ROOT).run()
    for line in problems:
        print(line)
    if problems:
        print(f"links: {len(problems)} references lead outside the repository or to nothing",
              file=sys.stderr)
        return 1
    print("links: every link and path reference leads to something in the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
