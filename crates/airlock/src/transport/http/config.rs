//! The public configuration of an HTTP server ([`HttpConfig`]) and, with the `redis`
//! feature, of the shared store it counts in ([`SharedStore`], [`StoreError`],
//! [`Unreachable`]).
//!
//! Trusts the operator. Owns no check of its own: each part is checked where it is built
//! (`AllowList`, `Tokens`, `Tls`, `SharedStore`) or where the server starts. The `redis`
//! feature shows here only as the public items it adds; which store runs is `store`'s.

use crate::limits::HttpLimits;

use super::auth::Tokens;
use super::headers::AllowList;
#[cfg(feature = "oauth")]
use super::oauth::OAuth;
use super::proxies::TrustedProxies;
use super::store;
#[cfg(feature = "redis")]
pub use super::store::{SharedStore, StoreError, Unreachable};
use super::tls::Tls;

/// How an HTTP server is reached and what it lets in.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Hosts and origins allowed besides the loopback names.
    pub allow: AllowList,
    /// Bearer tokens; none means no authentication (acceptable on loopback only).
    pub tokens: Tokens,
    /// Connection, session, timeout and per-client limits.
    pub limits: HttpLimits,
    /// Reverse proxies whose forwarding headers say who a client is; none by default.
    pub proxies: TrustedProxies,
    /// TLS: HTTPS on the listener when set, plain HTTP otherwise.
    pub tls: Option<Tls>,
    /// OAuth access tokens accepted besides the static tokens (`oauth` feature).
    #[cfg(feature = "oauth")]
    pub oauth: Option<OAuth>,
    /// Where quotas, in-flight caps and legacy sessions are counted when replicas share them;
    /// none (the default): in this process.
    #[cfg(feature = "redis")]
    pub store: Option<SharedStore>,
}

impl HttpConfig {
    /// A configuration with the given allow-list, tokens and limits, trusting no proxy.
    pub fn new(allow: AllowList, tokens: Tokens, limits: HttpLimits) -> Self {
        Self {
            allow,
            tokens,
            limits,
            proxies: TrustedProxies::default(),
            tls: None,
            #[cfg(feature = "oauth")]
            oauth: None,
            #[cfg(feature = "redis")]
            store: None,
        }
    }

    /// The same, keying requests from `proxies` by the client address they forward.
    #[must_use]
    pub fn trusting(mut self, proxies: TrustedProxies) -> Self {
        self.proxies = proxies;
        self
    }

    /// This configuration accepting the OAuth access tokens `oauth` checks (besides any
    /// static token), serving its protected resource metadata and scoping tool calls.
    #[cfg(feature = "oauth")]
    #[must_use]
    pub fn with_oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Whether requests must carry a credential: a static token or an OAuth access token.
    pub(crate) fn authenticates(&self) -> bool {
        #[cfg(feature = "oauth")]
        if self.oauth.is_some() {
            return true;
        }
        !self.tokens.is_empty()
    }

    /// This configuration serving HTTPS with `tls`.
    #[must_use]
    pub fn with_tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// This configuration counting its quotas, in-flight caps and legacy sessions in `store`,
    /// with every other replica that uses the same store and namespace.
    #[cfg(feature = "redis")]
    #[must_use]
    pub fn shared_store(mut self, store: SharedStore) -> Self {
        self.store = Some(store);
        self
    }

    /// The shared store's configuration, taken out for the listener to start it; none
    /// without one (or without the `redis` feature).
    pub(super) fn take_store(&mut self) -> Option<store::Config> {
        #[cfg(feature = "redis")]
        return self.store.take();
        #[cfg(not(feature = "redis"))]
        None
    }
}
