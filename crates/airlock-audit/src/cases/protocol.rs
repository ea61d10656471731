//! The cases of [`Category::Protocol`]: the MCP lifecycle and methods used wrongly.

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use Category::Protocol;
    vec![
        Case::line(
            "protocol.ping-before-initialize",
            Protocol,
            "a ping before initialize",
            "a result (ping is allowed at any time)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#),
            PING_ANY_TIME,
        )
        .before_handshake(),
        Case::line(
            "protocol.list-before-initialize",
            Protocol,
            "tools/list before initialize",
            "an answer with id 7 (an error or the list)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            ANSWERED,
        )
        .before_handshake(),
        Case::line(
            "protocol.call-before-initialize",
            Protocol,
            "tools/call before initialize",
            "an error with id 7",
            valid_call,
            CALL_BEFORE_INITIALIZE,
        )
        .before_handshake(),
        Case::line(
            "protocol.initialized-before-initialize",
            Protocol,
            "notifications/initialized before initialize",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            SILENT,
        )
        .before_handshake(),
        Case::line(
            "protocol.second-initialize",
            Protocol,
            "initialize again after the handshake",
            "an error with id 7",
            |_| initialize_line(&serde_json::json!(super::super::session::PROTOCOL_VERSION)),
            SECOND_INITIALIZE,
        ),
        Case::custom(
            "protocol.unsupported-version",
            Protocol,
            "initialize asking for protocol version 1999-01-01",
            "a result offering a version the server supports, or -32602",
            unsupported_version,
        )
        .before_handshake(),
        Case::line(
            "protocol.version-not-string",
            Protocol,
            "initialize with \"protocolVersion\":20251125",
            "an error with id 7",
            |_| initialize_line(&serde_json::json!(20_251_125)),
            BAD_INITIALIZE,
        )
        .before_handshake(),
        Case::line(
            "protocol.initialize-without-params",
            Protocol,
            "initialize without params",
            "an error with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#),
            BAD_INITIALIZE,
        )
        .before_handshake(),
        Case::line(
            "protocol.unknown-method",
            Protocol,
            "the method audit/no_such_method",
            "-32601 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"audit/no_such_method"}"#),
            UNKNOWN_METHOD,
        ),
        Case::line(
            "protocol.unknown-tool",
            Protocol,
            "tools/call of a tool that does not exist",
            "-32602 with id 7",
            |_| unknown_tool_call(),
            UNKNOWN_TOOL_ARMS,
        ),
        Case::line(
            "protocol.call-without-name",
            Protocol,
            "tools/call whose params have no name",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#),
            BAD_CALL,
        ),
        Case::line(
            "protocol.call-name-number",
            Protocol,
            "tools/call with \"name\":42",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":42}}"#),
            BAD_CALL,
        ),
        Case::line(
            "protocol.call-without-params",
            Protocol,
            "tools/call without params",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#),
            BAD_CALL,
        ),
        Case::line(
            "protocol.call-arguments-string",
            Protocol,
            "tools/call of the probe tool with \"arguments\":\"x\"",
            "-32602, or a tool error result",
            |probe| call_with(probe, "\"x\""),
            BAD_ARGUMENTS,
        ),
        Case::line(
            "protocol.call-arguments-array",
            Protocol,
            "tools/call of the probe tool with \"arguments\":[]",
            "-32602, or a tool error result",
            |probe| call_with(probe, "[]"),
            BAD_ARGUMENTS,
        ),
        Case::line(
            "protocol.list-bad-cursor",
            Protocol,
            "tools/list with a cursor the server never gave",
            "-32602 with id 7",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"audit-not-a-cursor"}}"#,
                )
            },
            BAD_CURSOR,
        ),
        Case::line(
            "protocol.list-cursor-number",
            Protocol,
            "tools/list with \"cursor\":5",
            "-32602 with id 7",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":5}}"#),
            BAD_CURSOR,
        ),
        Case::line(
            "protocol.unsolicited-result",
            Protocol,
            "a response (result) to a request the server never sent",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","id":"audit-unsolicited","result":{}}"#),
            SILENT,
        ),
        Case::line(
            "protocol.unsolicited-error",
            Protocol,
            "an error response to a request the server never sent",
            "nothing (answering it would start a ping-pong between two such peers)",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","id":"audit-unsolicited","error":{"code":-32601,"message":"x"}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.error-with-null-id",
            Protocol,
            "an error response with id null",
            "nothing",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.cancel-unknown-id",
            Protocol,
            "notifications/cancelled for an id never sent",
            "nothing",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"audit-unknown"}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.cancel-bad-params",
            Protocol,
            "notifications/cancelled with \"params\":\"x\"",
            "nothing (or -32600 with id null)",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#,
                )
            },
            SILENT_OR_INVALID,
        ),
        Case::line(
            "protocol.progress-unknown-token",
            Protocol,
            "notifications/progress for a token never issued",
            "nothing",
            |_| {
                text_without_id(
                    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"audit","progress":1}}"#,
                )
            },
            SILENT,
        ),
        Case::line(
            "protocol.initialized-twice",
            Protocol,
            "notifications/initialized a second time",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            SILENT,
        ),
        Case::line(
            "protocol.roots-changed-without-roots",
            Protocol,
            "notifications/roots/list_changed from a client without roots",
            "nothing",
            |_| text_without_id(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#),
            SILENT,
        ),
        // The methods beyond tools: a server that does not offer one answers -32601.
        Case::line(
            "protocol.resource-read-without-uri",
            Protocol,
            "resources/read whose params have no uri",
            "-32602 (or -32601 where resources are not offered)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}"#),
            BAD_OPTIONAL,
        ),
        Case::line(
            "protocol.resource-uri-number",
            Protocol,
            "resources/read with \"uri\":42",
            "-32602 (or -32601 where resources are not offered)",
            |_| text(r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":42}}"#),
            BAD_OPTIONAL,
        ),
        Case::line(
            "protocol.resource-unknown",
            Protocol,
            "resources/read of audit://no-such-resource",
            "-32602 (or -32601 where resources are not offered)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"audit://no-such-resource"}}"#,
                )
            },
            NO_SUCH_ITEM,
        ),
        Case::line(
            "protocol.resource-uri-control",
            Protocol,
            "resources/read of a URI holding NUL, CR, LF and a bidirectional override",
            "-32602 (or -32601 where resources are not offered)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"audit://x\u0000\r\n\u202e/y"}}"#,
                )
            },
            NO_SUCH_ITEM,
        ),
        Case::line(
            "protocol.prompt-unknown",
            Protocol,
            "prompts/get of a prompt that does not exist",
            "-32602 (or -32601 where prompts are not offered)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"audit/no-such-prompt"}}"#,
                )
            },
            NO_SUCH_ITEM,
        ),
        Case::line(
            "protocol.prompt-arguments-string",
            Protocol,
            "prompts/get with \"arguments\":\"a\"",
            "-32602 (or -32601 where prompts are not offered)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"audit","arguments":"a"}}"#,
                )
            },
            BAD_OPTIONAL,
        ),
        Case::line(
            "protocol.complete-unknown-ref",
            Protocol,
            "completion/complete for a reference of type ref/audit",
            "-32602 (or -32601 where completion is not offered)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/audit","name":"x"},"argument":{"name":"a","value":"b"}}}"#,
                )
            },
            NO_SUCH_ITEM,
        ),
        Case::line(
            "protocol.complete-without-argument",
            Protocol,
            "completion/complete for a prompt without the argument to complete",
            "-32602 (or -32601 where completion is not offered)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"audit"}}}"#,
                )
            },
            BAD_OPTIONAL,
        ),
        Case::line(
            "protocol.log-level-unknown",
            Protocol,
            "logging/setLevel to the level \"audit\"",
            "-32602 (or -32601 where logging is not offered)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"audit"}}"#,
                )
            },
            BAD_LEVEL,
        ),
        Case::line(
            "protocol.unsubscribe-never-subscribed",
            Protocol,
            "resources/unsubscribe of a URI never subscribed",
            "an answer with id 7 (an error, or an empty result)",
            |_| {
                text(
                    r#"{"jsonrpc":"2.0","id":7,"method":"resources/unsubscribe","params":{"uri":"audit://never"}}"#,
                )
            },
            ANSWERED,
        ),
    ]
}
