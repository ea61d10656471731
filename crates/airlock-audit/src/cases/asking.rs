//! The cases of [`Category::Asking`]: hostile answers to the server's own questions
//! (elicitation, sampling, roots) in both eras, judged by canaries and by what the server
//! does with state that fails integrity (see `crate::asking`).

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use crate::asking::Variant;
    vec![
        Case::asking(
            "asking.legacy-extra-field",
            "answers each elicitation/create with content holding a field its requestedSchema \
             lacks (carrying a canary)",
            "the answer refused or the field dropped: the canary never in a tool's result",
            Variant::ExtraField,
        ),
        Case::asking(
            "asking.legacy-wrong-type",
            "answers elicitation, sampling and roots with values of the wrong type (carrying a \
             canary): an object for a text field, text for a boolean, a list for a sampled text \
             or a root's URI",
            "the answer refused: the canary never in a tool's result",
            Variant::WrongType,
        ),
        Case::asking(
            "asking.legacy-huge-string",
            "a 1 MiB string (after a canary) in every text of every answer",
            "stays within memory and time; the canary in a result only if the form allows it",
            Variant::HugeString,
        ),
        Case::asking(
            "asking.legacy-deep-nesting",
            "answers whose value sits under 10,000 nested arrays (around a canary)",
            "the answer refused, the server alive, the canary never in a tool's result",
            Variant::DeepNesting,
        ),
        Case::asking(
            "asking.legacy-result-and-error",
            "a response with both result (carrying a canary) and error, then a valid one a \
             second later",
            "the malformed response not taken: the canary never in a tool's result",
            Variant::ResultAndError,
        ),
        Case::asking(
            "asking.legacy-unasked-id",
            "an answer (carrying a canary) under an id the server never asked, then the right one",
            "the stray answer ignored and not answered: the canary never in a tool's result",
            Variant::UnaskedId,
        ),
        Case::asking(
            "asking.legacy-answer-twice",
            "every answer sent twice, the second one different (carrying a canary)",
            "the first answer taken, the second ignored: the call answered exactly once",
            Variant::Twice,
        ),
        Case::asking(
            "asking.legacy-sampling-image",
            "a sampling/createMessage answer with an image block whose data is a canary, not \
             base64",
            "the answer refused (or the image not passed on as text)",
            Variant::SamplingImage,
        ),
        Case::asking(
            "asking.legacy-roots-non-file",
            "a roots/list answer whose root is https://CANARY.example/, not a file: URI",
            "the root refused: the canary never in a tool's result",
            Variant::RootsNonFile,
        ),
        Case::asking(
            "asking.modern-extra-field",
            "2026-07-28: a call ending input_required retried with inputResponses whose \
             elicitation content holds a field the form lacks (carrying a canary)",
            "-32602 (or asked again), the canary in no complete result and no error",
            Variant::ModernExtraField,
        ),
        Case::asking(
            "asking.modern-wrong-type",
            "2026-07-28: a call ending input_required retried with inputResponses of the wrong \
             type (carrying a canary)",
            "-32602 (or asked again), the canary in no complete result and no error",
            Variant::ModernWrongType,
        ),
        Case::asking(
            "asking.modern-state-appended",
            "2026-07-28: valid inputResponses with the requestState plus four bytes",
            "refused (-32602): a state that fails integrity never completes a call",
            Variant::StateAppended,
        ),
        Case::asking(
            "asking.modern-state-byte-changed",
            "2026-07-28: valid inputResponses with one byte of the requestState changed",
            "refused (-32602): a state that fails integrity never completes a call",
            Variant::StateByteChanged,
        ),
        Case::asking(
            "asking.modern-state-truncated",
            "2026-07-28: valid inputResponses with the requestState cut short",
            "refused (-32602): a state that fails integrity never completes a call",
            Variant::StateTruncated,
        ),
        Case::asking(
            "asking.modern-state-other-tool",
            "2026-07-28: valid answers to one tool's input requests with another tool's \
             requestState",
            "refused (-32602): a state belongs to its own call",
            Variant::StateOtherTool,
        ),
    ]
}
