//! The cases of [`Category::Exposure`]: hostile values in every string argument of the tools
//! a server lets the audit call, judged by canaries (see `crate::exposure`).

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use crate::exposure;
    vec![
        Case::exposure(
            "exposure.traversal",
            "../outside-canary and kin in every string argument of every tool",
            "the canary outside the served directory never read back",
            exposure::traversal,
        ),
        Case::exposure(
            "exposure.absolute",
            "the outside canary's absolute path in every string argument",
            "the canary never read back (paths outside the served directory refused)",
            exposure::absolute,
        ),
        Case::exposure(
            "exposure.symlink",
            "symlinks the audit planted (link-out, link-parent/…) in every string argument",
            "the canary never read back through them",
            exposure::symlinks,
        ),
        Case::exposure(
            "exposure.option-injection",
            "--output=…, -o…, -fprint=…, --files0-from=…, --file=…, -f…, @file, -exec",
            "no file created outside, the canary never read back: values are never options",
            exposure::options,
        ),
        Case::exposure(
            "exposure.shell-substitution",
            "$(touch …), `touch …`, $(cat canary) in every string argument",
            "nothing run: values never reach a shell",
            exposure::substitution,
        ),
        Case::exposure(
            "exposure.shell-separators",
            "a; touch …, a | touch …, a && touch …, || touch …, a newline, ; cat canary",
            "nothing run: values never reach a shell",
            exposure::separators,
        ),
        Case::exposure(
            "exposure.resource-uris",
            "../outside-canary, its absolute path and the planted symlinks in every variable of \
             every resource template (as is, percent-encoded, encoded twice), and as file: URIs",
            "the canary outside the served directory never read back",
            exposure::resource_values,
        )
        .in_resource_uris(),
    ]
}
