//! The cases of [`Category::Encoding`]: bytes that are not UTF-8, NUL, byte-order marks, line endings.

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use Category::Encoding;
    vec![
        Case::line(
            "encoding.invalid-utf8",
            Encoding,
            "the bytes FF FE inside a string",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xff\xfe\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.invalid-utf8-method",
            Encoding,
            "the method p\\xFFing",
            "-32700 with id null, or -32601/-32600 for the request (it is not ping)",
            |_| {
                bytes_line(
                    b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"p\xffing\"}",
                    Some("7"),
                )
            },
            ODD_METHOD,
        ),
        Case::line(
            "encoding.overlong-utf8",
            Encoding,
            "the overlong encoding C0 AF of '/'",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xc0\xaf\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.utf8-surrogate",
            Encoding,
            "the bytes ED A0 80 (a surrogate encoded in UTF-8)",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xed\xa0\x80\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.truncated-utf8",
            Encoding,
            "a three-byte sequence cut after two bytes",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"\xe2\x82\""),
            INVALID_UTF8,
        ),
        Case::line(
            "encoding.nul-after-message",
            Encoding,
            "a ping followed by a NUL byte on the same line",
            "-32700 with id null",
            |_| {
                bytes_line(
                    b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\x00",
                    Some("7"),
                )
            },
            PARSE,
        ),
        Case::line(
            "encoding.nul-in-string",
            Encoding,
            "a raw NUL byte inside a string",
            "-32700 with id null",
            |_| ping_with_bytes(b"\"a\x00b\""),
            PARSE,
        ),
        Case::line(
            "encoding.escaped-nul",
            Encoding,
            "the escape \\u0000 inside a string",
            "a result (an escaped NUL is valid JSON)",
            |_| ping_with(r#""a\u0000b""#),
            SERVED,
        ),
        Case::line(
            "encoding.bom",
            Encoding,
            "a UTF-8 byte-order mark before a ping",
            "-32700 with id null, or a result (RFC 8259 lets a parser ignore the mark)",
            |_| {
                bytes_line(
                    b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}",
                    Some("7"),
                )
            },
            BOM,
        ),
        Case::line(
            "encoding.utf16",
            Encoding,
            "a ping encoded in UTF-16LE with its byte-order mark",
            "-32700 with id null",
            |_| utf16_ping(),
            UTF16,
        ),
        Case::line(
            "encoding.crlf",
            Encoding,
            "a ping ending in \\r\\n",
            "a result (\\r is JSON whitespace)",
            |_| {
                bytes_line(
                    b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\r",
                    Some("7"),
                )
            },
            WHITESPACE,
        ),
        Case::line(
            "encoding.surrounding-whitespace",
            Encoding,
            "a ping with spaces and tabs around it",
            "a result",
            |_| {
                bytes_line(
                    b" \t {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"} \t ",
                    Some("7"),
                )
            },
            WHITESPACE,
        ),
        Case::line(
            "encoding.blank-lines",
            Encoding,
            "empty and whitespace-only lines",
            "nothing: no message, no answer",
            |_| Input {
                ops: vec![Op::Bytes(b"\n\n   \n\t\n\r\n".to_vec())],
                id: None,
            },
            BLANK,
        ),
        Case::line(
            "encoding.bidi-method",
            Encoding,
            "the method \"ping\\u202e\" (a right-to-left override)",
            "-32601 for the unknown method",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping\u202e"}"#),
            ODD_METHOD,
        ),
        Case::line(
            "encoding.escaped-pair",
            Encoding,
            "an escaped surrogate pair (\\ud83d\\ude00) and noncharacters",
            "a result",
            |_| ping_with(r#""\ud83d\ude00\uffff\ufffe""#),
            SERVED,
        ),
    ]
}
