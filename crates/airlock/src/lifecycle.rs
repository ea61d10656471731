//! Which protocol revision answers a request: the legacy session state machine, and the
//! modern per-request protocol fields.
//!
//! A request whose `params._meta` carries `io.modelcontextprotocol/protocolVersion` is modern:
//! it is answered on its own, whatever came before on the stream, and never changes session
//! state. Any other request is legacy and goes through [`Lifecycle`]: `initialize` first, then
//! `notifications/initialized`, then operations; `ping` is allowed at any time.

use serde_json::Value;

use crate::envelope::RequestMethod;
use crate::error::McpError;
use crate::log_level::LogLevel;
use crate::version::{ProtocolVersion, VersionToken};

/// The reserved `_meta` keys of MCP 2026-07-28.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// RFC 5424 level names, as MCP logging spells them.
const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The legacy session state.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub(crate) enum Lifecycle {
    /// Nothing yet: only `initialize` and `ping` are served.
    #[default]
    AwaitingInitialize,
    /// `initialize` was answered; waiting for `notifications/initialized`.
    AwaitingInitialized(ProtocolVersion),
    /// Handshake complete: operations are served in the negotiated revision.
    Ready(ProtocolVersion),
}

impl Lifecycle {
    /// The revision a legacy request is answered in, if the session state allows it.
    ///
    /// # Errors
    ///
    /// `-32602` for an operation before the handshake (a different message once `initialize`
    /// was answered: it says to send `notifications/initialized`), `-32600` for a second
    /// `initialize`, `-32601` for a modern-only method.
    pub(crate) fn admit(self, method: RequestMethod) -> Result<ProtocolVersion, McpError> {
        use Lifecycle::{AwaitingInitialize, AwaitingInitialized, Ready};
        use RequestMethod::{Initialize, Ping, ServerDiscover};
        match (self, method) {
            (_, ServerDiscover) => Err(McpError::MethodNotFound),
            (AwaitingInitialize, Initialize) => Ok(ProtocolVersion::NEWEST_LEGACY),
            (AwaitingInitialized(_) | Ready(_), Initialize) => Err(McpError::AlreadyInitialized),
            (AwaitingInitialize, Ping) => Ok(ProtocolVersion::NEWEST_LEGACY),
            (AwaitingInitialized(version) | Ready(version), Ping) => Ok(version),
            // Every other method is an operation (tools, prompts, resources).
            (Ready(version), _) => Ok(version),
            (AwaitingInitialize, _) => Err(McpError::NotInitialized),
            // The client read our `initialize` reply: tell it the one step it missed.
            (AwaitingInitialized(_), _) => Err(McpError::HandshakeUnconfirmed),
        }
    }

    /// The negotiated revision, once `initialize` was answered.
    #[cfg(feature = "http")]
    pub(crate) fn version(self) -> Option<ProtocolVersion> {
        match self {
            Self::AwaitingInitialize => None,
            Self::AwaitingInitialized(version) | Self::Ready(version) => Some(version),
        }
    }

    /// Records an answered `initialize`.
    pub(crate) fn initialized(&mut self, version: ProtocolVersion) {
        if *self == Self::AwaitingInitialize {
            *self = Self::AwaitingInitialized(version);
        }
    }

    /// Handles `notifications/initialized`; out of order, it is ignored.
    pub(crate) fn confirmed(&mut self) {
        if let Self::AwaitingInitialized(version) = *self {
            *self = Self::Ready(version);
        }
    }
}

/// The protocol version a request's `_meta` (given here) claims, as sent: present means the
/// request is modern, whether or not the value is one we serve (that is [`modern_version`]'s
/// to judge).
pub(crate) fn claimed_version(meta: Option<&Value>) -> Option<&Value> {
    meta.and_then(Value::as_object)
        .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
}

/// The level a modern request asks its log messages at (`_meta.logLevel`, already checked
/// by [`modern_version`]): none when it sets none, and then none are sent.
pub(crate) fn requested_log_level(meta: Option<&Value>) -> Option<LogLevel> {
    meta?
        .get(META_LOG_LEVEL)?
        .as_str()
        .and_then(LogLevel::parse)
}

/// A modern request's `_meta.clientCapabilities`, when `_meta` is an object that has it.
pub(crate) fn client_capabilities(meta: Option<&Value>) -> Option<&Value> {
    meta?.get(META_CLIENT_CAPABILITIES)
}

/// Whether a request is modern: `Some(version)` when its `_meta` (given here) names a protocol
/// version.
///
/// # Errors
///
/// `-32602` for a `_meta` that is not an object, a malformed version or missing client
/// capabilities; `-32022` for a version we do not serve.
pub(crate) fn modern_version(meta: Option<&Value>) -> Result<Option<ProtocolVersion>, McpError> {
    let Some(meta) = meta else {
        return Ok(None);
    };
    let Value::Object(meta) = meta else {
        return Err(McpError::InvalidParams("_meta must be an object"));
    };
    let Some(requested) = meta.get(META_PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let requested =
        requested
            .as_str()
            .and_then(VersionToken::parse)
            .ok_or(McpError::InvalidMeta(
                "protocolVersion must be a version string",
            ))?;
    let Some(version) = ProtocolVersion::modern(requested.as_str()) else {
        return Err(McpError::UnsupportedVersion { requested });
    };
    if !meta
        .get(META_CLIENT_CAPABILITIES)
        .is_some_and(Value::is_object)
    {
        return Err(McpError::InvalidMeta(
            "clientCapabilities must be an object",
        ));
    }
    if meta
        .get(META_CLIENT_INFO)
        .is_some_and(|info| !info.is_object())
    {
        return Err(McpError::InvalidMeta("clientInfo must be an object"));
    }
    if let Some(level) = meta.get(META_LOG_LEVEL)
        && !level
            .as_str()
            .is_some_and(|level| LOG_LEVELS.contains(&level))
    {
        return Err(McpError::InvalidMeta("logLevel must be a known level"));
    }
    Ok(Some(version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The `_meta` of a params object.
    fn params(value: Value) -> Value {
        value["_meta"].clone()
    }

    #[test]
    fn legacy_operations_wait_for_the_handshake() {
        let mut state = Lifecycle::default();
        assert_eq!(
            state.admit(RequestMethod::ToolsList),
            Err(McpError::NotInitialized)
        );
        assert_eq!(
            state.admit(RequestMethod::Ping),
            Ok(ProtocolVersion::V2025_11_25)
        );
        assert!(state.admit(RequestMethod::Initialize).is_ok());
        state.initialized(ProtocolVersion::V2025_03_26);
        assert_eq!(
            state.admit(RequestMethod::ToolsCall),
            Err(McpError::HandshakeUnconfirmed)
        );
        assert_eq!(
            state.admit(RequestMethod::ToolsList),
            Err(McpError::HandshakeUnconfirmed)
        );
        assert_eq!(
            state.admit(RequestMethod::Initialize),
            Err(McpError::AlreadyInitialized)
        );
        state.confirmed();
        assert_eq!(
            state.admit(RequestMethod::ToolsCall),
            Ok(ProtocolVersion::V2025_03_26)
        );
        assert_eq!(
            state.admit(RequestMethod::ServerDiscover),
            Err(McpError::MethodNotFound)
        );
        state.initialized(ProtocolVersion::V2024_11_05);
        assert_eq!(state, Lifecycle::Ready(ProtocolVersion::V2025_03_26));
    }

    #[test]
    fn modern_fields_are_checked() {
        let ok = params(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }}));
        assert_eq!(
            modern_version(Some(&ok)),
            Ok(Some(ProtocolVersion::V2026_07_28))
        );
        assert_eq!(
            modern_version(Some(&params(json!({"_meta": {}})))),
            Ok(None)
        );
        assert_eq!(modern_version(None), Ok(None));
        assert!(matches!(
            modern_version(Some(&params(json!({"_meta": 3})))),
            Err(McpError::InvalidParams(_))
        ));
        let missing =
            params(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
        assert!(matches!(
            modern_version(Some(&missing)),
            Err(McpError::InvalidMeta(_))
        ));
        let future =
            params(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}));
        assert!(matches!(
            modern_version(Some(&future)),
            Err(McpError::UnsupportedVersion { requested }) if requested.as_str() == "2099-01-01"
        ));
        let hostile =
            params(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "<img src=x>"}}));
        assert!(matches!(
            modern_version(Some(&hostile)),
            Err(McpError::InvalidMeta(_))
        ));
        let level = params(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "loud"
        }}));
        assert!(matches!(
            modern_version(Some(&level)),
            Err(McpError::InvalidMeta(_))
        ));
    }
}
