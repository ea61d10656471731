//! The Redis store's record of a legacy session: a typed, versioned line of text.
//!
//! Trusts nothing it reads: a record comes from a store anyone who reaches Redis can write
//! (`SECURITY.md`). Owns the record's formats, which replicas of different releases share
//! during a rolling upgrade:
//!
//! - **format 2** (written): `2 <protocol> <0|1> <capabilities> <identity or ->`. The
//!   capabilities are `e`, `s`, `r` in that order for elicitation, sampling and roots, or `-`
//!   for none. The identity is a token's variable name (never a space in it, never `-`), and
//!   is last: the `TOUCH` script restarts a session's idle timer only when the record ends
//!   with the caller's identity.
//! - **format 1** (read, never written): `1 <protocol> <0|1> <identity or ->`, what replicas
//!   of releases before the capabilities field write. It reads as a session whose client
//!   declared no capability (its questions are refused as for a client that cannot answer
//!   them); the first change of its handshake rewrites it in format 2.
//! - anything else is refused with a [`RecordError`]: a record of an unknown format (a later
//!   release's) or malformed is, to this replica, no session at all (`404` on a request that
//!   names it, and a session it held is ended), never a guess at what it meant.

use std::sync::Arc;

use crate::asking::ClientCan;
use crate::version::ProtocolVersion;

use super::SessionState;

/// The formats of a session record, by the number that starts it.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(super) enum RecordFormat {
    /// No capabilities field (written by earlier releases; read only).
    V1,
    /// With the capabilities field.
    V2,
}

impl RecordFormat {
    /// The format this release writes.
    pub(super) const CURRENT: Self = Self::V2;

    /// The number that starts a record of this format.
    fn number(self) -> &'static str {
        match self {
            Self::V1 => "1",
            Self::V2 => "2",
        }
    }
}

/// Why a text is not a session record this server reads. Its texts never quote the record.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub(super) enum RecordError {
    /// The first field is not a format this release reads.
    #[error("a session record of an unknown format")]
    UnknownFormat,
    /// Too few or too many fields for its format.
    #[error("a session record with the wrong number of fields")]
    Fields,
    /// Not a legacy protocol version.
    #[error("a session record naming no legacy protocol version")]
    Protocol,
    /// The handshake field is not `0` or `1`.
    #[error("a session record whose handshake field is not 0 or 1")]
    Confirmed,
    /// Not the capability letters this server writes.
    #[error("a session record with malformed capabilities")]
    Capabilities,
    /// An empty identity.
    #[error("a session record with an empty identity")]
    Identity,
}

/// A session record: its format and what it holds.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(super) struct SessionRecord {
    /// The format it was read in, or is written in.
    pub(super) format: RecordFormat,
    /// The session.
    pub(super) state: SessionState,
}

impl SessionRecord {
    /// The record of `state` in the format this release writes.
    pub(super) fn current(state: SessionState) -> Self {
        Self {
            format: RecordFormat::CURRENT,
            state,
        }
    }

    /// The record's text, in its format (a format 1 record has no capabilities to write).
    pub(super) fn encode(&self) -> String {
        let state = &self.state;
        let identity = state.identity.as_deref().unwrap_or("-");
        let confirmed = u8::from(state.confirmed);
        let (format, protocol) = (self.format.number(), state.protocol.as_str());
        match self.format {
            RecordFormat::V1 => format!("{format} {protocol} {confirmed} {identity}"),
            RecordFormat::V2 => {
                let capabilities = capabilities_field(state.client_can);
                format!("{format} {protocol} {confirmed} {capabilities} {identity}")
            }
        }
    }

    /// The record of `text`.
    ///
    /// # Errors
    ///
    /// A [`RecordError`] for a text of an unknown format, or not exactly as this server
    /// writes that format.
    pub(super) fn decode(text: &str) -> Result<Self, RecordError> {
        // At most one field more than a record has: enough to refuse, bounded whatever Redis
        // holds.
        let fields: Vec<&str> = text.splitn(6, ' ').collect();
        let (format, rest) = match fields.split_first() {
            Some((&"1", rest)) => (RecordFormat::V1, rest),
            Some((&"2", rest)) => (RecordFormat::V2, rest),
            _ => return Err(RecordError::UnknownFormat),
        };
        let (protocol, confirmed, client_can, identity) = match (format, rest) {
            (RecordFormat::V1, [protocol, confirmed, identity]) => {
                (*protocol, *confirmed, ClientCan::default(), *identity)
            }
            (RecordFormat::V2, [protocol, confirmed, capabilities, identity]) => (
                *protocol,
                *confirmed,
                parse_capabilities(capabilities).ok_or(RecordError::Capabilities)?,
                *identity,
            ),
            _ => return Err(RecordError::Fields),
        };
        let protocol = ProtocolVersion::legacy(protocol).ok_or(RecordError::Protocol)?;
        let confirmed = match confirmed {
            "0" => false,
            "1" => true,
            _ => return Err(RecordError::Confirmed),
        };
        let identity = match identity {
            "-" => None,
            "" => return Err(RecordError::Identity),
            name => Some(Arc::from(name)),
        };
        Ok(Self {
            format,
            state: SessionState {
                protocol,
                confirmed,
                identity,
                client_can,
            },
        })
    }
}

/// A record's capabilities field: `e`, `s`, `r` in that order, or `-` for none.
fn capabilities_field(can: ClientCan) -> String {
    let field: String = [(can.elicit, 'e'), (can.sample, 's'), (can.roots, 'r')]
        .into_iter()
        .filter_map(|(declared, letter)| declared.then_some(letter))
        .collect();
    if field.is_empty() {
        "-".to_owned()
    } else {
        field
    }
}

/// The capabilities of a record's field, exactly as [`capabilities_field`] writes them: any
/// other text is not a record this server wrote.
fn parse_capabilities(field: &str) -> Option<ClientCan> {
    let can = ClientCan {
        elicit: field.contains('e'),
        sample: field.contains('s'),
        roots: field.contains('r'),
    };
    (capabilities_field(can) == field).then_some(can)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn state(
        protocol: ProtocolVersion,
        confirmed: bool,
        identity: Option<&str>,
        client_can: ClientCan,
    ) -> SessionState {
        SessionState {
            protocol,
            confirmed,
            identity: identity.map(Arc::from),
            client_can,
        }
    }

    #[test]
    fn records_are_written_in_the_current_format_and_read_back() {
        let can = ClientCan {
            elicit: true,
            sample: false,
            roots: true,
        };
        let record = SessionRecord::current(state(
            ProtocolVersion::V2025_06_18,
            true,
            Some("ALICE"),
            can,
        ));
        assert_eq!(record.format, RecordFormat::V2);
        assert_eq!(record.encode(), "2 2025-06-18 1 er ALICE");
        assert_eq!(SessionRecord::decode(&record.encode()), Ok(record));
        let anonymous = SessionRecord::current(state(
            ProtocolVersion::V2025_11_25,
            false,
            None,
            ClientCan::default(),
        ));
        assert_eq!(anonymous.encode(), "2 2025-11-25 0 - -");
        assert_eq!(SessionRecord::decode(&anonymous.encode()), Ok(anonymous));
    }

    /// A record an earlier release wrote: no capabilities field, so none declared.
    #[test]
    fn a_format_1_record_reads_as_declaring_no_capability() {
        let earlier = SessionRecord::decode("1 2025-06-18 1 ALICE");
        let expected = SessionRecord {
            format: RecordFormat::V1,
            state: state(
                ProtocolVersion::V2025_06_18,
                true,
                Some("ALICE"),
                ClientCan::default(),
            ),
        };
        assert_eq!(earlier, Ok(expected));
    }

    #[test]
    fn unknown_formats_and_malformed_records_are_refused_by_kind() {
        for (bad, error) in [
            ("", RecordError::UnknownFormat),
            ("3 2025-06-18 1 - ALICE", RecordError::UnknownFormat),
            ("0 2025-06-18 1 ALICE", RecordError::UnknownFormat),
            ("02 2025-06-18 1 - ALICE", RecordError::UnknownFormat),
            ("2", RecordError::Fields),
            ("1 2026-07-28 1 ALICE", RecordError::Protocol),
            ("1 2025-06-18 2 ALICE", RecordError::Confirmed),
            ("1 2025-06-18 1", RecordError::Fields),
            ("1 2025-06-18 1 ALICE extra", RecordError::Fields),
            ("1 2025-06-18 1 ", RecordError::Identity),
            ("1 2025-06-18 1 e ALICE", RecordError::Fields),
            ("2 2025-06-18 1 ALICE", RecordError::Fields),
            ("2 2025-06-18 1 re ALICE", RecordError::Capabilities),
            ("2 2025-06-18 1 ee ALICE", RecordError::Capabilities),
            ("2 2025-06-18 1 x ALICE", RecordError::Capabilities),
            ("2 2025-06-18 1  ALICE", RecordError::Capabilities),
            ("2 2025-06-18 1 -e ALICE", RecordError::Capabilities),
            ("2 2025-06-18 1 esr ALICE extra", RecordError::Fields),
            (
                "2 2025-06-18 1 esr ALICE extra more words",
                RecordError::Fields,
            ),
            ("2 2025-06-18 1 esr ", RecordError::Identity),
        ] {
            assert_eq!(SessionRecord::decode(bad), Err(error), "{bad:?}");
        }
    }

    fn any_state() -> impl Strategy<Value = SessionState> {
        (
            proptest::sample::select(ProtocolVersion::LEGACY.to_vec()),
            any::<bool>(),
            proptest::option::of("[A-Z_][A-Z0-9_]{0,24}"),
            any::<(bool, bool, bool)>(),
        )
            .prop_map(|(protocol, confirmed, identity, (elicit, sample, roots))| {
                let can = ClientCan {
                    elicit,
                    sample,
                    roots,
                };
                state(protocol, confirmed, identity.as_deref(), can)
            })
    }

    proptest! {
        /// Whatever a session holds, its record reads back as the same record.
        #[test]
        fn every_record_round_trips(state in any_state()) {
            let record = SessionRecord::current(state);
            prop_assert_eq!(SessionRecord::decode(&record.encode()), Ok(record));
        }

        /// A format 1 record reads back as written, with no capability declared.
        #[test]
        fn format_1_records_round_trip_without_capabilities(state in any_state()) {
            let record = SessionRecord {
                format: RecordFormat::V1,
                state: SessionState { client_can: ClientCan::default(), ..state },
            };
            prop_assert_eq!(SessionRecord::decode(&record.encode()), Ok(record));
        }

        /// Any text either is refused or reads as a record that writes back to that text:
        /// one record, one spelling.
        #[test]
        fn a_text_is_refused_or_is_exactly_a_record(text in "[0-9a-z -]{0,40}|[12] 2025-06-18 [01] [-esr]{0,4} [-A-Z ]{0,6}") {
            if let Ok(record) = SessionRecord::decode(&text) {
                prop_assert_eq!(record.encode(), text);
            }
        }
    }
}
