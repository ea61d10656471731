//! The HTTP status of every reply carrying a JSON-RPC error: the one place it is decided.
//!
//! The error table (`error`) gives each refusal its code and text on every transport; only
//! this transport has statuses, so only it decides them. Refusals of the HTTP layer and of a
//! body that is not one JSON-RPC request have their own status in both eras. Errors answering
//! a readable request are, in the legacy era, plain JSON-RPC errors in a `200` response (as
//! the SDKs send them); in the modern era (2026-07-28) the status follows the error: `404` for
//! `-32601`, `400` for the parameter, header and version errors, `429` for quotas, `503` when
//! busy, `500` for faults. The match has no `_` arm: a new error does not compile until its
//! status is decided here.

use hyper::StatusCode;

use crate::error::{HttpRefusal, McpError};

/// The status of a reply carrying `error`, in the modern era when `modern`.
pub(super) fn of(error: &McpError, modern: bool) -> StatusCode {
    let request_level = |status: StatusCode| if modern { status } else { StatusCode::OK };
    match error {
        McpError::Http(refusal) => refused(*refusal),
        McpError::FrameTooLong { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        McpError::TooManyConnections { .. }
        | McpError::TooManyConnectionsFromAddress { .. }
        | McpError::TooManySessions { .. }
        | McpError::BodiesFull { .. }
        | McpError::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        McpError::HeaderMismatch(_) => StatusCode::BAD_REQUEST,
        McpError::Batch
        | McpError::DuplicateKey
        | McpError::InvalidId(_)
        | McpError::InvalidJsonRpcVersion
        | McpError::InvalidMethod(_)
        | McpError::NotAnObject
        | McpError::Parse(_)
        | McpError::UnknownMember => StatusCode::BAD_REQUEST,
        McpError::MethodNotFound => request_level(StatusCode::NOT_FOUND),
        McpError::AlreadyInitialized
        | McpError::ArgumentBound { .. }
        | McpError::DuplicateId
        | McpError::HandshakeUnconfirmed
        | McpError::InvalidCursor
        | McpError::InvalidMeta(_)
        | McpError::InvalidParams(_)
        | McpError::InvalidProgressToken
        | McpError::InvalidToolName
        | McpError::NotInitialized
        | McpError::NumberOutOfRange
        | McpError::UnknownTool
        | McpError::UnknownPrompt
        | McpError::UnknownResource
        | McpError::MalformedResourceUri
        | McpError::TooManySubscriptions
        | McpError::InvalidPromptArguments
        | McpError::PromptTooLarge
        | McpError::InvalidRequestState
        | McpError::InvalidInputResponse
        | McpError::UnknownTask
        | McpError::TaskEnded
        | McpError::MissingClientCapability(_)
        | McpError::MissingTasksExtension
        | McpError::UnsupportedVersion { .. } => request_level(StatusCode::BAD_REQUEST),
        McpError::RateLimited { .. } => request_level(StatusCode::TOO_MANY_REQUESTS),
        McpError::ClientBusy { .. }
        | McpError::Overloaded { .. }
        | McpError::TooManyTasks { .. } => request_level(StatusCode::SERVICE_UNAVAILABLE),
        McpError::Internal(_) | McpError::ToolPanicked => {
            request_level(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

/// The status of a refusal of the HTTP layer, in both eras.
fn refused(refusal: HttpRefusal) -> StatusCode {
    match refusal {
        HttpRefusal::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
        HttpRefusal::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        HttpRefusal::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
        HttpRefusal::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        HttpRefusal::Host => StatusCode::MISDIRECTED_REQUEST,
        HttpRefusal::Origin | HttpRefusal::Preflight | HttpRefusal::InsufficientScope => {
            StatusCode::FORBIDDEN
        }
        HttpRefusal::Unauthorized => StatusCode::UNAUTHORIZED,
        HttpRefusal::SessionRequired | HttpRefusal::VersionHeader => StatusCode::BAD_REQUEST,
        HttpRefusal::SessionNotFound => StatusCode::NOT_FOUND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::HeaderFault;
    use crate::error::tests::every_variant;

    #[test]
    fn http_statuses_follow_the_spec_for_each_era() {
        let status = |e: McpError, modern: bool| of(&e, modern).as_u16();
        assert_eq!(status(McpError::MethodNotFound, true), 404);
        assert_eq!(status(McpError::MethodNotFound, false), 200);
        assert_eq!(status(McpError::InvalidMeta("x"), true), 400);
        assert_eq!(
            status(McpError::HeaderMismatch(HeaderFault::Name), true),
            400
        );
        assert_eq!(status(McpError::Batch, false), 400);
        assert_eq!(status(McpError::FrameTooLong { limit: 1 }, false), 413);
        assert_eq!(status(McpError::Http(HttpRefusal::Origin), false), 403);
        assert_eq!(status(McpError::Http(HttpRefusal::Preflight), true), 403);
        assert_eq!(status(McpError::Http(HttpRefusal::Host), true), 421);
        assert_eq!(status(McpError::Http(HttpRefusal::Unauthorized), true), 401);
        assert_eq!(
            status(McpError::RateLimited { retry_after_ms: 1 }, true),
            429
        );
        assert_eq!(status(McpError::ToolPanicked, true), 500);
        // Issue 20: an unreachable shared store is the server's state, not the request's.
        assert_eq!(status(McpError::StoreUnavailable, true), 503);
        assert_eq!(status(McpError::StoreUnavailable, false), 503);
        for error in every_variant() {
            let code = of(&error, true).as_u16();
            assert!((200..600).contains(&code), "{error:?}");
        }
    }

    #[test]
    fn each_http_refusal_has_its_own_status_in_both_eras() {
        for (refusal, want) in [
            (HttpRefusal::NotAcceptable, 406),
            (HttpRefusal::MethodNotAllowed, 405),
            (HttpRefusal::BodyTimeout, 408),
            (HttpRefusal::UnsupportedMediaType, 415),
            (HttpRefusal::Host, 421),
            (HttpRefusal::Origin, 403),
            (HttpRefusal::Preflight, 403),
            (HttpRefusal::Unauthorized, 401),
            (HttpRefusal::InsufficientScope, 403),
            (HttpRefusal::SessionRequired, 400),
            (HttpRefusal::SessionNotFound, 404),
            (HttpRefusal::VersionHeader, 400),
        ] {
            for modern in [false, true] {
                assert_eq!(of(&McpError::Http(refusal), modern).as_u16(), want);
            }
        }
    }
}
