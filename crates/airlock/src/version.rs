//! The MCP protocol revisions airlock speaks, and what each one allows on the wire.
//!
//! The specification has two eras: **legacy** revisions start with an `initialize` handshake
//! and hold the negotiated version for the session; the **modern** revision (2026-07-28) names
//! its version in every request's `_meta`. Output that a revision does not define (a tool's
//! `title` before 2025-06-18, say) is left out for clients that negotiated it.

/// A protocol revision this server implements.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub(crate) enum ProtocolVersion {
    /// The first released revision.
    V2024_11_05,
    /// Adds tool annotations and audio content.
    V2025_03_26,
    /// Adds tool `title`, `outputSchema` and `structuredContent`.
    V2025_06_18,
    /// The last legacy revision.
    V2025_11_25,
    /// The first modern (stateless) revision.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Legacy revisions, newest first: the order in which we prefer them.
    pub(crate) const LEGACY: [Self; 4] = [
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// The newest legacy revision: our counter-offer to an `initialize` we cannot match.
    pub(crate) const NEWEST_LEGACY: Self = Self::V2025_11_25;

    /// Modern revisions we serve, as they appear in `supportedVersions` and `-32022` data.
    pub(crate) const MODERN_NAMES: [&'static str; 1] = ["2026-07-28"];

    /// The revision string.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// A legacy revision by its exact name.
    pub(crate) fn legacy(name: &str) -> Option<Self> {
        Self::LEGACY.into_iter().find(|v| v.as_str() == name)
    }

    /// A modern revision by its exact name.
    pub(crate) fn modern(name: &str) -> Option<Self> {
        (name == Self::V2026_07_28.as_str()).then_some(Self::V2026_07_28)
    }

    /// Whether this revision is stateless (per-request `_meta`, no handshake).
    pub(crate) fn is_modern(self) -> bool {
        self >= Self::V2026_07_28
    }

    /// Whether tool `annotations` exist in this revision.
    pub(crate) fn has_tool_annotations(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether tool `title`, `outputSchema` and `structuredContent` exist in this revision.
    pub(crate) fn has_structured_output(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// Whether a `tools/call` may carry `task` (task augmentation, 2025-11-25 only: the modern
    /// era moved tasks to an extension).
    pub(crate) fn has_tasks(self) -> bool {
        self == Self::V2025_11_25
    }

    /// Whether `serverInfo` may carry `title`.
    pub(crate) fn has_implementation_title(self) -> bool {
        self >= Self::V2025_06_18
    }
}

/// A protocol version string sent by a client, proven short and plain.
///
/// MCP 2026-07-28 asks the server to echo the requested version in `-32022` data. Echoing
/// peer text is otherwise forbidden here, so only a token of at most 32 characters from
/// `[0-9A-Za-z._-]` is kept; anything else is a malformed `_meta` and is refused with `-32602`.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct VersionToken(String);

impl VersionToken {
    /// Longest version token kept for echo.
    pub const MAX_BYTES: usize = 32;

    /// Checks `text` is a short version token.
    pub fn parse(text: &str) -> Option<Self> {
        let plain = text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        (plain && !text.is_empty() && text.len() <= Self::MAX_BYTES).then(|| Self(text.to_owned()))
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The 2026-07-28 tasks extension's name, as a client declares it in its capabilities'
/// `extensions` and the server in `server/discover`'s (the draft of
/// `modelcontextprotocol/ext-tasks`).
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_names_round_trip_and_modern_is_separate() {
        for version in ProtocolVersion::LEGACY {
            assert_eq!(ProtocolVersion::legacy(version.as_str()), Some(version));
            assert!(!version.is_modern());
        }
        assert_eq!(ProtocolVersion::legacy("2026-07-28"), None);
        assert_eq!(
            ProtocolVersion::modern("2026-07-28"),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(ProtocolVersion::modern("2025-11-25"), None);
    }

    #[test]
    fn features_appear_in_the_revision_that_added_them() {
        assert!(!ProtocolVersion::V2024_11_05.has_tool_annotations());
        assert!(ProtocolVersion::V2025_03_26.has_tool_annotations());
        assert!(!ProtocolVersion::V2025_03_26.has_structured_output());
        assert!(ProtocolVersion::V2025_06_18.has_structured_output());
        assert!(ProtocolVersion::V2026_07_28.has_structured_output());
    }

    #[test]
    fn version_tokens_are_short_and_plain() {
        assert!(VersionToken::parse("2099-01-01").is_some());
        assert!(VersionToken::parse("").is_none());
        assert!(VersionToken::parse("2025-11-25\n").is_none());
        assert!(VersionToken::parse("<script>").is_none());
        assert!(VersionToken::parse(&"9".repeat(33)).is_none());
    }
}
