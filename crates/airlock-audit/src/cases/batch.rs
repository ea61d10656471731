//! The cases of [`Category::Batch`]: JSON-RPC batches.

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use Category::Batch;
    vec![
        Case::line(
            "batch.two-pings",
            Batch,
            "a batch of two pings (ids 7 and 8)",
            "one -32600 with id null (batches left MCP after 2025-03-26)",
            |_| {
                text(
                    r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
                )
            },
            BATCH,
        ),
        Case::line(
            "batch.single",
            Batch,
            "a batch of one ping",
            "one -32600 with id null",
            |_| text(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#),
            BATCH,
        ),
        Case::line(
            "batch.empty",
            Batch,
            "an empty array",
            "one -32600 with id null",
            |_| text_without_id("[]"),
            BATCH_WITHOUT_REQUESTS,
        ),
        Case::line(
            "batch.nested",
            Batch,
            "a batch holding a batch",
            "one -32600 with id null",
            |_| text_without_id(r#"[[{"jsonrpc":"2.0","id":7,"method":"ping"}]]"#),
            BATCH_WITHOUT_REQUESTS,
        ),
        Case::line(
            "batch.scalars",
            Batch,
            "the array [1,2,3]",
            "one -32600 with id null",
            |_| text_without_id("[1,2,3]"),
            BATCH_WITHOUT_REQUESTS,
        ),
        Case::line(
            "batch.notifications-only",
            Batch,
            "a batch of one notification",
            "-32600 with id null, or nothing",
            |_| text_without_id(r#"[{"jsonrpc":"2.0","method":"notifications/audit_unknown"}]"#),
            BATCH_OF_NOTIFICATIONS,
        ),
        Case::line(
            "batch.duplicate-ids",
            Batch,
            "a batch of two pings that share id 7",
            "one -32600 with id null",
            |_| {
                text(
                    r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]"#,
                )
            },
            BATCH,
        ),
        Case::line(
            "batch.ten-thousand",
            Batch,
            "a batch of 10,000 pings",
            "one -32600 with id null",
            |_| big_batch(10_000),
            BATCH,
        ),
    ]
}
