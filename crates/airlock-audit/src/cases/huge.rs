//! The cases of [`Category::Huge`]: huge lines, numbers, strings and argument objects.

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use Category::Huge;
    vec![
        Case::line(
            "huge.line-1mib",
            Huge,
            "a ping carrying a 1 MiB string",
            "a result, or a refusal; memory within the limit",
            |_| big_string_ping(1 << 20),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.line-64mib",
            Huge,
            "a ping carrying a 64 MiB string, streamed",
            "a result, or a refusal; memory within the limit",
            |_| big_string_ping(64 << 20),
            PARSED_OR_REFUSED,
        )
        .slow()
        .budget(3),
        Case::line(
            "huge.line-512mib",
            Huge,
            "a ping carrying a 512 MiB string, streamed",
            "a result, or a refusal; memory within the limit",
            |_| big_string_ping(512 << 20),
            PARSED_OR_REFUSED,
        )
        .slow()
        .budget(6),
        Case::line(
            "huge.junk-64mib",
            Huge,
            "64 MiB of the letter a, then a newline",
            "-32700 (or -32600) with id null; memory within the limit",
            |_| junk(64 << 20),
            UNPARSEABLE,
        )
        .slow()
        .budget(3),
        Case::custom(
            "huge.no-newline-eof-8mib",
            Huge,
            "a ping carrying an 8 MiB string, no newline, then end of input",
            "no crash, memory within the limit, a clean exit",
            |session| no_newline_then_eof(session, 8 << 20),
        ),
        Case::custom(
            "huge.no-newline-eof-512mib",
            Huge,
            "a ping carrying a 512 MiB string, no newline, then end of input",
            "no crash, memory within the limit, a clean exit",
            |session| no_newline_then_eof(session, 512 << 20),
        )
        .slow()
        .budget(6),
        Case::line(
            "huge.keys-100000",
            Huge,
            "tools/call with 100,000 argument keys",
            "an error or a tool error result; memory within the limit",
            |probe| many_keys(probe, 100_000),
            BIG_CALL,
        ),
        Case::line(
            "huge.string-50mib",
            Huge,
            "tools/call with a 50 MiB string argument, streamed",
            "an error or a tool error result; memory within the limit",
            |probe| big_string_call(probe, 50 << 20),
            BIG_CALL,
        )
        .slow()
        .budget(3),
        Case::line(
            "huge.array-1000000",
            Huge,
            "a ping carrying an array of 1,000,000 zeros",
            "a result, or a refusal; memory within the limit",
            |_| big_array(1_000_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.digits-100000",
            Huge,
            "a 100,000-digit integer",
            "a result, or a refusal",
            |_| digits("", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.fraction-100000",
            Huge,
            "a number 0.000…1 with 100,000 digits",
            "a result, or a refusal",
            |_| digits("0.", 100_000),
            PARSED_OR_REFUSED,
        ),
        Case::line(
            "huge.id-digits-100000",
            Huge,
            "a request whose id has 100,000 digits",
            "an error with id null, or a result echoing the id exactly",
            |_| digit_id(100_000),
            EXACT_ID,
        ),
        Case::line(
            "huge.id-string-1mib",
            Huge,
            "a ping whose id is a 1 MiB string",
            "a result echoing it, or an error with id null",
            |_| long_string_id(1 << 20),
            LONG_ID,
        ),
        Case::line(
            "huge.resource-uri-1mib",
            Huge,
            "resources/read of a 1 MiB URI",
            "a refusal (any code); memory within the limit",
            |_| big_params("resources/read", r#"{"uri":"audit://"#, 1 << 20, r#""}"#),
            BIG_OPTIONAL,
        )
        .echo_check(),
        Case::line(
            "huge.prompt-name-1mib",
            Huge,
            "prompts/get of a prompt whose name is 1 MiB",
            "a refusal (any code); memory within the limit",
            |_| big_params("prompts/get", r#"{"name":""#, 1 << 20, r#""}"#),
            BIG_OPTIONAL,
        )
        .echo_check(),
        Case::line(
            "huge.complete-value-1mib",
            Huge,
            "completion/complete of a prompt argument whose typed value is 1 MiB",
            "an answer (a refusal, or completions); memory within the limit",
            |_| {
                big_params(
                    "completion/complete",
                    r#"{"ref":{"type":"ref/prompt","name":"audit"},"argument":{"name":"a","value":""#,
                    1 << 20,
                    r#""}}"#,
                )
            },
            BIG_CALL,
        )
        .echo_check(),
    ]
}
