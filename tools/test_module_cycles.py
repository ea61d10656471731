#!/usr/bin/env python3
"""The import-cycle checker (tools/module-cycles.py) against planted trees: it must find a cycle
at every depth, in the binary's package as in a crate, and must not see one in what the
compiler would not build into the library (tests, comments, a module's own descendants).

    python3 tools/test_module_cycles.py
"""

import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).resolve().parent / "module-cycles.py"


def plant(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def check(files):
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        plant(root, files)
        run = subprocess.run(
            [sys.executable, str(CHECKER), "--root", str(root)],
            capture_output=True,
            text=True,
            check=False,
        )
        return run.returncode, run.stdout


# Three deep, as issue 37 found it: `transport::http::body` and `transport::http::calls`
# import each other; at depth one or two both are `transport`.
DEEP = {
    "crates/demo/src/lib.rs": "mod transport;\n",
    "crates/demo/src/transport/mod.rs": "mod http;\n",
    "crates/demo/src/transport/http/mod.rs": "mod body;\nmod calls;\n",
    "crates/demo/src/transport/http/body.rs": "use super::calls::Slots;\npub struct Body;\n",
    "crates/demo/src/transport/http/calls.rs": "use crate::transport::http::{body::Body};\npub struct Slots;\n",
}


class Checker(unittest.TestCase):
    def test_a_clean_tree_passes(self):
        status, out = check({
            "crates/demo/src/lib.rs": "mod a;\nmod b;\n",
            "crates/demo/src/a.rs": "use crate::b::B;\npub struct A;\n",
            "crates/demo/src/b.rs": "pub struct B;\n",
        })
        self.assertEqual(status, 0, out)
        self.assertIn("no import cycles", out)

    def test_a_cycle_between_top_modules_fails(self):
        status, out = check({
            "crates/demo/src/lib.rs": "mod a;\nmod b;\n",
            "crates/demo/src/a.rs": "use crate::b::B;\npub struct A;\n",
            "crates/demo/src/b.rs": "pub fn f() -> crate::a::A { todo() }\n",
        })
        self.assertEqual(status, 1, out)
        self.assertIn("demo (depth 1): cycle a <-> b", out)

    def test_a_cycle_three_deep_fails(self):
        status, out = check(DEEP)
        self.assertEqual(status, 1, out)
        self.assertIn("(depth 3): cycle transport::http::body <-> transport::http::calls", out)

    def test_a_cycle_through_a_third_module_fails(self):
        status, out = check({
            "crates/demo/src/lib.rs": "mod a;\nmod b;\nmod c;\n",
            "crates/demo/src/a.rs": "use crate::b::B;\npub struct A;\n",
            "crates/demo/src/b.rs": "use crate::{c::{C}};\npub struct B;\n",
            "crates/demo/src/c.rs": "use super::a::A as Renamed;\npub struct C;\n",
        })
        self.assertEqual(status, 1, out)
        self.assertIn("cycle a <-> b <-> c", out)

    def test_the_binary_package_is_checked(self):
        status, out = check({
            "src/main.rs": "mod cli;\nmod serve;\n",
            "src/cli/mod.rs": "use crate::serve::Plan;\npub struct Flags;\n",
            "src/serve.rs": "use crate::cli::Flags;\npub struct Plan;\n",
        })
        self.assertEqual(status, 1, out)
        self.assertIn("(root package) (depth 1): cycle cli <-> serve", out)

    def test_tests_comments_and_descendants_are_not_cycles(self):
        status, out = check({
            "crates/demo/src/lib.rs": "mod a;\nmod b;\n#[cfg(test)]\nmod fixtures;\n",
            "crates/demo/src/a.rs": (
                "use crate::b::B;\nmod inner;\npub struct A;\n"
                "#[cfg(test)]\nmod tests {\n    use crate::fixtures::F;\n}\n"
            ),
            "crates/demo/src/a/inner.rs": "use super::A;\n",
            "crates/demo/src/b.rs": "// use crate::a::A; a comment is not an import\npub struct B;\n",
            "crates/demo/src/b/tests.rs": "use crate::a::A;\n",
            "crates/demo/src/fixtures.rs": "use crate::a::A;\nuse crate::b::B;\n",
        })
        self.assertEqual(status, 0, out)

    def test_edges_name_the_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            plant(root, DEEP)
            run = subprocess.run(
                [sys.executable, str(CHECKER), "--edges", "--root", str(root)],
                capture_output=True, text=True, check=False,
            )
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertIn("crates/demo/src/transport/http/body.rs", run.stdout)


if __name__ == "__main__":
    unittest.main()
