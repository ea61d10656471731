//! The listener: accepts connections under the server-wide and per-address caps, gives each
//! one a task running the connection driver, and sweeps idle sessions and quiet clients.
//!
//! Trusts the operator's configuration; of a peer, only its address (as `proxies` says who
//! it is). Owns the accept loop, the refusal of a connection past a cap (a `503` with no task
//! and no buffer spent on it) and the sweeper.

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};

use crate::engine::Shared;
use crate::error::McpError;
use crate::response;

use super::store::Store;
use super::{HttpConfig, State, connection};

/// How often idle sessions and quiet clients' quota state are swept.
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// Serves MCP over HTTP on `listener` until `shutdown` resolves.
///
/// # Errors
///
/// Only a failure to read the listener's own address; accept errors are logged and retried.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    config: HttpConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let mut config = config;
    let store = Store::start(config.take_store()).await?;
    #[cfg(feature = "metrics")]
    if let (Some(store), Some(metrics)) = (&store, &shared.metrics) {
        store.count_in(metrics);
    }
    let state = State::with_store(shared, config, store);
    #[cfg(feature = "oauth")]
    if let Some(verifier) = &state.oauth
        && let Err(error) = verifier.load().await
    {
        // No keys, no tokens: the server does not start rather than refuse every client.
        tracing::error!(%error, "OAuth: cannot start without the JWKS");
        return Err(io::Error::other("the JWKS could not be loaded"));
    }
    let builder = connection::builder(&state.limits);
    let sweeper = tokio::spawn(sweep(Arc::clone(&state)));
    tracing::info!(
        addr = %local,
        auth = !state.tokens.is_empty(),
        oauth = state.oauth_on(),
        tls = state.tls.is_some(),
        "serving MCP over HTTP at /mcp"
    );
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors and the like: wait a moment instead of spinning.
                tracing::warn!(kind = ?error.kind(), "accepting a connection failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let trusted_proxy = state.proxies.trusts(peer.ip());
        let slot = match state.connections.enter(peer.ip(), trusted_proxy) {
            Ok(slot) => slot,
            Err(error) => {
                // On a TLS port a plain-text 503 would only garble the handshake: just closed.
                if state.tls.is_none() {
                    refuse_connection(&stream, &error);
                }
                continue;
            }
        };
        let state = Arc::clone(&state);
        let builder = builder.clone();
        tokio::spawn(async move {
            // Held for the connection's life: dropped after it, when this task ends.
            let _slot = slot;
            connection::serve(state, &builder, stream, peer.ip()).await
        });
    }
    sweeper.abort();
    tracing::info!("HTTP server stopped");
    Ok(())
}

async fn sweep(state: Arc<State>) {
    let mut every = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        every.tick().await;
        state.sessions.sweep();
        state.clients.sweep();
        state.refusals.sweep();
        state.shares.sweep();
        state.bodies.sweep();
        state.sweep_shared_sessions().await;
    }
}

/// A connection past a cap: `503` written if the socket takes it at once, then closed. No
/// task and no buffer are spent on it.
fn refuse_connection(stream: &TcpStream, error: &McpError) {
    let mut body = Vec::new();
    response::write_error(&mut body, None, error);
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&body);
    if stream.try_write(&bytes).is_err() {
        tracing::debug!("a connection past the cap closed before its 503");
    }
    tracing::trace!(%error, "connection refused");
}
