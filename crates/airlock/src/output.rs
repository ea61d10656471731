//! What a tool gives back: content blocks, structured content, and the failure a handler
//! reports to the model.
//!
//! A leaf: it depends on nothing but the call record's note. Text a handler returns is the
//! tool author's (trusted) text; an [`std::io::Error`] met by a handler's `?` becomes a fixed
//! sentence, so OS messages (paths, errno text) never reach the agent.

use serde_json::Value;

/// What a tool returns: content blocks, optional structured content, and whether it failed.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    pub(crate) content: Blocks,
    pub(crate) structured: Option<Value>,
    pub(crate) is_error: bool,
    /// What the call's audit record adds (a command's exit status, the limit that stopped
    /// it); never on the wire.
    pub(crate) note: crate::call_log::RunNote,
}

/// A result's content blocks: one held in place (a text result, the common case, then costs no
/// list of its own), or a list. Compared and printed as the blocks they hold, however held.
#[derive(Clone)]
pub(crate) enum Blocks {
    /// Exactly one block.
    One(Content),
    /// Any number of blocks.
    Many(Vec<Content>),
}

impl Blocks {
    /// The blocks, in order.
    pub(crate) fn as_slice(&self) -> &[Content] {
        match self {
            Self::One(block) => std::slice::from_ref(block),
            Self::Many(blocks) => blocks,
        }
    }
}

impl PartialEq for Blocks {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::fmt::Debug for Blocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

/// One content block of a tool result.
///
/// Binary data is held base64-encoded, as it goes on the wire; the constructors encode it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text(String),
    /// An image: base64 data and its MIME type.
    Image {
        /// The image, base64-encoded.
        data: String,
        /// Its MIME type (`image/png`, …).
        mime_type: String,
    },
    /// Audio (MCP 2025-03-26 and later): base64 data and its MIME type. Left out of results
    /// for clients of 2024-11-05, which has no audio blocks.
    Audio {
        /// The audio, base64-encoded.
        data: String,
        /// Its MIME type (`audio/wav`, …).
        mime_type: String,
    },
    /// An embedded resource: its URI, MIME type, and text or base64 blob.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, if known.
        mime_type: Option<String>,
        /// Its contents.
        body: ResourceBody,
    },
}

/// The contents of an embedded resource.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Binary data, base64-encoded.
    Blob(String),
}

impl ResourceBody {
    /// Text contents.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// Binary contents from raw bytes (sent base64-encoded).
    pub fn blob(bytes: &[u8]) -> Self {
        Self::Blob(base64_of(bytes))
    }
}

impl Content {
    /// Its bytes before JSON escaping: text, base64 data, or a resource's URI and body.
    fn bytes(&self) -> usize {
        match self {
            Self::Text(text) => text.len(),
            Self::Image { data, .. } | Self::Audio { data, .. } => data.len(),
            Self::Resource { uri, body, .. } => match body {
                ResourceBody::Text(text) | ResourceBody::Blob(text) => {
                    uri.len().saturating_add(text.len())
                }
            },
        }
    }

    /// An image block from raw bytes.
    pub fn image(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: base64_of(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block from raw bytes.
    pub fn audio(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: base64_of(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
        }
    }

    /// An embedded binary resource from raw bytes.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: &[u8],
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(base64_of(bytes)),
        }
    }
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl ToolOutput {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: Blocks::One(Content::Text(text.into())),
            structured: None,
            is_error: false,
            note: crate::call_log::RunNote::default(),
        }
    }

    /// A successful result made of `blocks`, in order.
    pub fn content(blocks: Vec<Content>) -> Self {
        Self {
            content: Blocks::Many(blocks),
            structured: None,
            is_error: false,
            note: crate::call_log::RunNote::default(),
        }
    }

    /// A failed result (`isError: true`) with one text block the model can read.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// A successful result carrying `value` as `structuredContent`, and as JSON text for
    /// clients of revisions without structured output.
    pub fn structured(value: Value) -> Self {
        Self {
            content: Blocks::One(Content::Text(value.to_string())),
            structured: Some(value),
            is_error: false,
            note: crate::call_log::RunNote::default(),
        }
    }

    /// Whether the result is a failure.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The same result, with what its audit record should say of the run (a command's exit
    /// status, signal, or the limit that stopped it). The note never reaches the wire.
    pub fn noting(mut self, note: crate::call_log::RunNote) -> Self {
        self.note = note;
        self
    }

    /// The bytes of its content as the tool produced it (text, base64 data, resource text and
    /// URIs), before JSON escaping: the audit record's `output_bytes`.
    pub(crate) fn content_bytes(&self) -> usize {
        self.content
            .as_slice()
            .iter()
            .map(Content::bytes)
            .fold(0, usize::saturating_add)
    }

    /// The text of the text blocks, joined by newlines (other blocks are left out).
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .as_slice()
            .iter()
            .filter_map(|block| match block {
                Content::Text(text) => Some(text.as_str()),
                Content::Image { .. } | Content::Audio { .. } | Content::Resource { .. } => None,
            })
            .collect();
        texts.join("\n")
    }

    /// The content blocks.
    pub fn blocks(&self) -> &[Content] {
        self.content.as_slice()
    }

    /// The structured content, if any.
    pub fn structured_content(&self) -> Option<&Value> {
        self.structured.as_ref()
    }
}

/// A failure a handler reports; it becomes a result with `isError: true` and this message.
///
/// The message is the tool author's: say what went wrong in words the model can act on, and
/// keep secrets and internal paths out of it. A handler returning `Result<_, ToolError>` can
/// use `?` on an [`std::io::Error`]: it becomes a fixed text, never the OS's message.
///
/// ```
/// use airlock::{IntoToolOutput, ToolError, ToolOutput};
///
/// let denied = ToolError::from(std::io::Error::other("/home/alice/.ssh: permission denied"));
/// assert!(!denied.message().contains("alice"));
/// assert_eq!(ToolError::new("no such user").into_tool_output(), ToolOutput::error("no such user"));
/// ```
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl ToolError {
    /// The message the model will read.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// The `?` of a handler on an I/O error: the model reads a fixed text, and the log holds the
/// error's kind only. The OS's message is dropped unread: it names paths, users and hosts.
impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        tracing::debug!(kind = ?error.kind(), "a tool failed on an I/O error");
        Self::new(IO_FAILURE_TEXT)
    }
}

/// What the model reads when a handler's `?` met an [`std::io::Error`].
const IO_FAILURE_TEXT: &str = "The tool failed on a system operation (file, network or process).";

impl From<ToolError> for ToolOutput {
    fn from(error: ToolError) -> Self {
        Self::error(error.message)
    }
}

/// The result of a run stopped at its deadline `limit` (a call's or a task's).
pub(crate) fn timed_out(limit: std::time::Duration) -> ToolOutput {
    ToolOutput::error(format!(
        "The tool did not finish within its time limit of {} ms and was stopped.",
        limit.as_millis()
    ))
    .noting(crate::call_log::RunNote {
        limit: Some("timeout"),
        ..crate::call_log::RunNote::default()
    })
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn truncated(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    text.get(..end).unwrap_or_default()
}
