//! W3C trace context: what a tool's run is told of the trace it is part of, and (with the
//! `otel` feature) the strict reading of the `traceparent` and `tracestate` a peer sends in
//! `params._meta` or in HTTP headers.
//!
//! A peer's trace context is a hint, never an instruction: a value that is not exactly the
//! W3C form is ignored (the request gets a fresh trace), never refused and never echoed. Its
//! `sampled` flag decides nothing; the server's own ratio does (`otel`).

/// The trace context of a tool's run, as a command receives it in `TRACEPARENT` and
/// `TRACESTATE`: `traceparent` names the run's own span, a child of its request's span.
/// Only a call traced by a server with traces on has one
/// ([`CallContext::trace_parent`](crate::CallContext::trace_parent)).
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct TraceParent {
    trace_id: u128,
    span_id: u64,
    tracestate: Option<std::sync::Arc<str>>,
}

impl TraceParent {
    /// `00-{trace id}-{span id}-01`, lowercase hex (made when asked: most tools never ask).
    pub fn traceparent(&self) -> String {
        format!("00-{:032x}-{:016x}-01", self.trace_id, self.span_id)
    }

    /// The vendor list the client sent with its trace context, when it sent a well-formed
    /// one (at most 512 bytes and 32 members).
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The context naming span `span_id` of trace `trace_id`, sampled.
    #[cfg(feature = "otel")]
    pub(crate) fn new(
        trace_id: u128,
        span_id: u64,
        tracestate: Option<std::sync::Arc<str>>,
    ) -> Self {
        Self {
            trace_id,
            span_id,
            tracestate,
        }
    }
}

/// A trace context a peer sent, read strictly.
#[cfg(feature = "otel")]
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) struct Remote {
    /// The trace's id, not zero.
    pub(crate) trace_id: u128,
    /// The peer's span, not zero.
    pub(crate) span_id: u64,
    /// The vendor list, when one came with it and is well formed.
    pub(crate) tracestate: Option<Box<str>>,
}

#[cfg(feature = "otel")]
impl Remote {
    /// `traceparent` (and `tracestate`) as a peer sent them; `None` unless `traceparent` is
    /// exactly the version-00 form. A malformed `tracestate` is dropped, the parent kept.
    pub(crate) fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let (trace_id, span_id) = parse_traceparent(traceparent)?;
        Some(Self {
            trace_id,
            span_id,
            tracestate: tracestate
                .filter(|state| valid_tracestate(state))
                .map(Into::into),
        })
    }
}

/// The trace and span ids of a version-00 `traceparent`: exactly 55 bytes,
/// `00-{32 hex}-{16 hex}-{2 hex}`, lowercase, neither id zero. Anything else (another version,
/// uppercase, a longer value) is `None`.
#[cfg(feature = "otel")]
fn parse_traceparent(text: &str) -> Option<(u128, u64)> {
    let bytes = text.as_bytes();
    if bytes.len() != 55 {
        return None;
    }
    let (version, rest) = bytes.split_at_checked(2)?;
    let (trace, rest) = rest.strip_prefix(b"-")?.split_at_checked(32)?;
    let (span, rest) = rest.strip_prefix(b"-")?.split_at_checked(16)?;
    let flags = rest.strip_prefix(b"-")?;
    if version != b"00" || flags.len() != 2 || !flags.iter().all(is_lower_hex) {
        return None;
    }
    let trace_id = hex(trace)?;
    let span_id = hex(span).and_then(|id| u64::try_from(id).ok())?;
    (trace_id != 0 && span_id != 0).then_some((trace_id, span_id))
}

#[cfg(feature = "otel")]
fn is_lower_hex(byte: &u8) -> bool {
    matches!(byte, b'0'..=b'9' | b'a'..=b'f')
}

/// The value of at most 32 lowercase hex digits.
#[cfg(feature = "otel")]
fn hex(digits: &[u8]) -> Option<u128> {
    if digits.len() > 32 || !digits.iter().all(is_lower_hex) {
        return None;
    }
    let text = std::str::from_utf8(digits).ok()?;
    u128::from_str_radix(text, 16).ok()
}

/// Whether `state` is a W3C `tracestate` list this server passes on: at most
/// [`MAX_TRACESTATE_BYTES`](crate::limits::MAX_TRACESTATE_BYTES) and
/// [`MAX_TRACESTATE_MEMBERS`](crate::limits::MAX_TRACESTATE_MEMBERS), each member
/// `key=value` with a key of lowercase letters, digits and `_-*/` (one `@` for a tenant) and a
/// value of printable ASCII but `,` and `=`, not ending in a space. No empty member.
#[cfg(feature = "otel")]
fn valid_tracestate(state: &str) -> bool {
    use crate::limits::{MAX_TRACESTATE_BYTES, MAX_TRACESTATE_MEMBERS};
    if state.is_empty() || state.len() > MAX_TRACESTATE_BYTES {
        return false;
    }
    let mut members = 0_usize;
    for member in state.split(',') {
        members = members.saturating_add(1);
        if members > MAX_TRACESTATE_MEMBERS {
            return false;
        }
        let member = member.trim_matches(|c| c == ' ' || c == '\t');
        let Some((key, value)) = member.split_once('=') else {
            return false;
        };
        if !valid_key(key) || !valid_value(value) {
            return false;
        }
    }
    true
}

#[cfg(feature = "otel")]
fn valid_key(key: &str) -> bool {
    let key_char = |c: u8| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/');
    let part = |part: &str, max: usize| {
        let bytes = part.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= max
            && bytes
                .first()
                .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && bytes.iter().all(|c| key_char(*c))
    };
    match key.split_once('@') {
        None => part(key, 256),
        Some((tenant, system)) => part(tenant, 241) && part(system, 14),
    }
}

#[cfg(feature = "otel")]
fn valid_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 256
        && bytes.last() != Some(&b' ')
        && bytes
            .iter()
            .all(|c| matches!(c, 0x20..=0x7e) && *c != b',' && *c != b'=')
}

#[cfg(all(test, feature = "otel"))]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_version_00_traceparent_gives_its_ids() {
        let remote = Remote::parse(GOOD, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"))
            .expect("well formed");
        assert_eq!(remote.trace_id, 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736);
        assert_eq!(remote.span_id, 0x00f0_67aa_0ba9_02b7);
        assert_eq!(
            remote.tracestate.as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
    }

    #[test]
    fn every_malformed_traceparent_is_ignored() {
        for bad in [
            "",
            "garbage",
            // Another version, uppercase hex, zero ids, a longer value, wrong separators.
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-é",
        ] {
            assert_eq!(Remote::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn a_malformed_tracestate_is_dropped_and_the_parent_kept() {
        let long = format!("a={}", "x".repeat(600));
        let many = (0..33)
            .map(|n| format!("k{n}=v"))
            .collect::<Vec<_>>()
            .join(",");
        for bad in [
            "",
            "novalue",
            "Upper=1",
            "a=b,,c=d",
            "a=b=c",
            "a=\u{7f}",
            "a=line\nbreak",
            "t@toolongsystemname=1",
            long.as_str(),
            many.as_str(),
        ] {
            let remote = Remote::parse(GOOD, Some(bad)).expect("the parent is kept");
            assert_eq!(remote.tracestate, None, "{bad:?}");
        }
        for good in ["a=1", "a=1 , b=2", "tenant@vendor=x_-*/", "k=v with spaces"] {
            let remote = Remote::parse(GOOD, Some(good)).expect("well formed");
            assert_eq!(remote.tracestate.as_deref(), Some(good), "{good:?}");
        }
    }

    proptest::proptest! {
        /// Whatever a peer sends, reading it never panics, and what is kept is exactly the
        /// version-00 form of non-zero ids, with a tracestate only of the W3C grammar.
        #[test]
        fn only_the_exact_form_is_kept(
            traceparent in "(00|01|ff)?-?[0-9a-fA-F-]{0,60}|\\PC{0,80}",
            tracestate in "[a-z0-9_@*/=, -]{0,64}|\\PC{0,64}",
        ) {
            if let Some(remote) = Remote::parse(&traceparent, Some(&tracestate)) {
                proptest::prop_assert!(remote.trace_id != 0 && remote.span_id != 0);
                let shown = format!("00-{:032x}-{:016x}-", remote.trace_id, remote.span_id);
                proptest::prop_assert!(traceparent.starts_with(&shown), "{}", traceparent);
                if let Some(state) = remote.tracestate.as_deref() {
                    proptest::prop_assert!(state.len() <= 512);
                    proptest::prop_assert!(state.bytes().all(|b| (0x20..=0x7e).contains(&b)));
                }
            }
        }

        /// Every well-formed context is read back as it was written.
        #[test]
        fn a_well_formed_context_is_read_as_written(
            trace_id in 1_u128..,
            span_id in 1_u64..,
            flags in 0_u8..,
        ) {
            let text = format!("00-{trace_id:032x}-{span_id:016x}-{flags:02x}");
            let remote = Remote::parse(&text, None);
            proptest::prop_assert_eq!(
                remote.map(|remote| (remote.trace_id, remote.span_id)),
                Some((trace_id, span_id))
            );
        }
    }

    #[test]
    fn a_run_is_told_its_own_span() {
        let parent = TraceParent::new(0xab, 0xcd, Some("a=1".into()));
        assert_eq!(
            parent.traceparent(),
            "00-000000000000000000000000000000ab-00000000000000cd-01"
        );
        assert_eq!(parent.tracestate(), Some("a=1"));
        let (trace, span) = parse_traceparent(&parent.traceparent()).expect("round trip");
        assert_eq!((trace, span), (0xab, 0xcd));
    }
}
