//! The cases of [`Category::Flood`]: floods, slow writers and end of input at bad moments.

use super::*;

/// This category's cases, in report order.
pub(super) fn cases() -> Vec<Case> {
    use Category::Flood;
    vec![
        Case::custom(
            "flood.pings-100000",
            Flood,
            "100,000 pings written back to back",
            "each answered exactly once (results, or rate-limit errors)",
            |session| {
                flood(
                    session,
                    "ping",
                    vec![Op::Pings {
                        first: 1,
                        count: 100_000,
                    }],
                    100_000,
                )
            },
        )
        .budget(6),
        Case::custom(
            "flood.calls-10000",
            Flood,
            "10,000 tools/call of the probe tool written back to back",
            "each answered exactly once; the first error code is reported",
            call_flood,
        )
        .budget(6),
        Case::custom(
            "flood.subscriptions-10000",
            Flood,
            "10,000 resources/subscribe, each for its own URI, written back to back",
            "each answered exactly once (an error, or a result); memory within the limit; a server \
             without subscriptions (-32601 to a first subscribe) is not flooded",
            subscription_flood,
        )
        .budget(6),
        Case::line(
            "flood.slow-partial-line",
            Flood,
            "half a ping, a 2 s pause, then the rest one byte every 20 ms",
            "a result once the line is complete",
            |_| slow_ping(),
            SERVED,
        )
        .budget(2),
        Case::custom(
            "flood.eof-at-start",
            Flood,
            "end of input before anything else",
            "a clean exit (status 0)",
            eof_at_start,
        )
        .before_handshake(),
        Case::custom(
            "flood.eof-mid-message",
            Flood,
            "half a request, then end of input",
            "a clean exit (status 0), with at most a -32700",
            eof_mid_message,
        ),
        Case::custom(
            "flood.eof-call-in-flight",
            Flood,
            "a tools/call of the probe tool and end of input right after it",
            "the call answered, then a clean exit",
            eof_call_in_flight,
        ),
        Case::custom(
            "flood.pings-unread",
            Flood,
            "500,000 pings while not reading stdout for 3 s, then reading",
            "memory stays within the limit while the replies wait; each answered once",
            unread_pings,
        )
        .slow()
        .budget(12),
    ]
}
