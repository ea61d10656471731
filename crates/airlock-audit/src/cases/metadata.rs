//! The cases of [`Category::Metadata`]: what the server tells the model (see
//! `crate::metadata`). All but `metadata.results` judge the catalog learned once before the
//! battery and start no server; `metadata.results` calls the tools the audit may call and
//! reviews the text of their results.

use super::*;
use crate::metadata::Check;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::metadata(
            "metadata.hidden-text",
            "reads every name, title, description, schema and the instructions the server lists \
             for characters a reviewer does not see",
            "no format (Cf), bidi or tag character, no stray variation selector, no terminal \
             escape or control character, no long blank run",
            Check::HiddenText,
        ),
        Case::metadata(
            "metadata.model-instructions",
            "reads the same text for sentences addressed to the model (rule set v1)",
            "no instruction to read or pass on secrets, to hide something from the user, to \
             ignore other instructions or to call other tools, no text marked for the model",
            Check::ModelInstructions,
        ),
        Case::metadata(
            "metadata.shadowing",
            "reads the same text for references to tools",
            "every tool the text names is one the server lists",
            Check::Shadowing,
        ),
        Case::metadata(
            "metadata.input-schemas",
            "reads each tool's input schema for string inputs that ask for a secret or a path",
            "such inputs bounded (maxLength, pattern or enum); secrets not asked of the model",
            Check::InputSchemas,
        ),
        Case::metadata(
            "metadata.oversized",
            "measures every description and the instructions",
            "descriptions within 4096 bytes, instructions within 16384",
            Check::Oversized,
        ),
        Case::metadata(
            "metadata.results",
            "calls the tools the audit may call (read-only ones, or --call-tool) and reads the \
             text of their results",
            "no hidden characters, terminal escapes or model-addressed instructions in what a \
             tool returns",
            Check::Results,
        )
        .budget(3),
    ]
}
