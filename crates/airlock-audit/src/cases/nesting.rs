//! The cases of [`Category::Nesting`]: deep nesting.

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use Category::Nesting;
    vec![
        Case::line(
            "nesting.arrays-10",
            Nesting,
            "arrays nested 10 deep",
            "a result (ordinary nesting)",
            |_| nested(b"[", b"]", 10),
            SHALLOW,
        ),
        Case::line(
            "nesting.arrays-100",
            Nesting,
            "arrays nested 100 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 100),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-1000",
            Nesting,
            "arrays nested 1,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 1000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-10000",
            Nesting,
            "arrays nested 10,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 10_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-100000",
            Nesting,
            "arrays nested 100,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"[", b"]", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.arrays-1000000",
            Nesting,
            "arrays nested 1,000,000 deep (a 2 MB line)",
            "a result, or -32700/-32600 with id null",
            |_| nested(b"[", b"]", 1_000_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.objects-100000",
            Nesting,
            "objects nested 100,000 deep",
            "a result, or -32700 with id null",
            |_| nested(b"{\"a\":", b"}", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "nesting.unclosed-1000000",
            Nesting,
            "1,000,000 opening brackets that never close",
            "-32700 (or -32600) with id null",
            |_| unclosed(1_000_000),
            UNPARSEABLE,
        ),
        Case::line(
            "nesting.id-100000",
            Nesting,
            "an id that is an array nested 100,000 deep",
            "an error with id null",
            |_| nested_id(100_000),
            ID_WRONG_TYPE,
        ),
        Case::line(
            "nesting.tool-arguments-10000",
            Nesting,
            "tools/call with arguments nested 10,000 deep",
            "an error or a tool error result",
            |probe| nested_arguments(probe, 10_000),
            BIG_CALL,
        ),
    ]
}
