//! A minimal Streamable HTTP server on the official Rust SDK (rmcp), for
//! tools/http-bench.sh: one `echo` tool, mounted at `/mcp` with axum as rmcp's own examples
//! and tests do, on tokio's multi-thread runtime (a worker per core, as airlock).
//!
//!     rmcp-echo 127.0.0.1:PORT
//!
//! Stateless (`legacy_session_mode` off: rmcp serves 2026-07-28 requests statelessly in any
//! case) with JSON replies (`json_response`: a plain `application/json` body for a call that
//! sends nothing before its result), no SSE keep-alive. Host validation keeps rmcp's default
//! (loopback names), as airlock's allow-list does.
use std::sync::Arc;

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    message: String,
}

#[derive(Clone)]
struct Echo {
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    #[tool(description = "Returns its message")]
    fn echo(&self, Parameters(EchoArgs { message }): Parameters<EchoArgs>) -> String {
        message
    }
}

#[tool_handler]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .ok_or("usage: rmcp-echo HOST:PORT")?;
    let service = StreamableHttpService::new(
        || {
            Ok(Echo {
                tool_router: Echo::tool_router(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, router).await?;
    Ok(())
}
