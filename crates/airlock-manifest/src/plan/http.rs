//! Serving over HTTP: what the operator chose (origins, tokens, OAuth, TLS, proxies, limits,
//! the shared store) as values, and the library's [`HttpConfig`] they make, the Redis URL
//! read from its variable on the way.

use std::net::SocketAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;
use std::time::Duration;

use airlock::transport::http::{
    AllowList, Cidr, HttpConfig, JwksSource, JwksUri, OAuth, OAuthError, OriginError, ProxyHeader,
    SharedStore, StoreError, Tls, TlsError, TokenError, Tokens, TrustedProxies, Unreachable,
};
use airlock::variables::VariableName;
use airlock::{HttpLimits, Rate};
use secrecy::SecretString;

use crate::manifest::StoreSettings;

/// How `airlock serve --http` serves: every field is one of its flags (`None` or empty: not
/// given, the library's or the manifest's value holds).
#[derive(Clone, Debug)]
pub struct HttpPlan {
    /// `--http`: where to listen.
    pub addr: SocketAddr,
    /// `--allow-remote`: a bind address other than loopback is meant.
    pub allow_remote: bool,
    /// `--allow-origin`: web origins whose requests are accepted (and get CORS headers).
    pub allow_origin: Vec<String>,
    /// `--allow-host`: more names the `Host` header may carry.
    pub allow_host: Vec<String>,
    /// `--auth-token-env`: the variables holding the bearer tokens, as given (checked by
    /// [`ServePlan::check`](super::ServePlan::check) before anything is logged).
    pub auth_token_env: Vec<String>,
    /// `--max-connections`.
    pub max_connections: Option<NonZeroUsize>,
    /// `--max-connections-per-address`.
    pub max_connections_per_address: Option<NonZeroUsize>,
    /// `--client-calls-per-minute`.
    pub client_calls_per_minute: Option<NonZeroU32>,
    /// `--client-in-flight`.
    pub client_in_flight: Option<NonZeroUsize>,
    /// `--client-requests-per-minute`.
    pub client_requests_per_minute: Option<NonZeroU32>,
    /// `--max-sessions`.
    pub max_sessions: Option<NonZeroUsize>,
    /// `--max-sessions-per-client`.
    pub max_sessions_per_client: Option<NonZeroUsize>,
    /// `--trusted-proxy`: the reverse proxies believed about their clients.
    pub trusted_proxy: Vec<Cidr>,
    /// `--trusted-proxy-header`: the one forwarding header believed.
    pub trusted_proxy_header: ProxyHeader,
    /// `--tls-cert` and `--tls-key`: serve HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// `--oauth-*`: accept OAuth access tokens.
    pub oauth: Option<OAuthPlan>,
    /// `--quota-store` and `--redis-*`: where quotas and sessions are counted.
    pub store: StorePlan,
}

/// `--oauth-*`: the resource, its issuer and where the issuer's keys are.
#[derive(Clone, Debug)]
pub struct OAuthPlan {
    /// `--oauth-resource`: this server's canonical URI.
    pub resource: String,
    /// `--oauth-issuer`: the tokens' `iss`.
    pub issuer: String,
    /// `--oauth-authorization-server` (empty: the issuer).
    pub authorization_servers: Vec<String>,
    /// `--oauth-jwks-file`: the keys, read at start (preferred over the URI).
    pub jwks_file: Option<PathBuf>,
    /// `--oauth-jwks-uri`: the keys, fetched at start and refreshed.
    pub jwks_uri: Option<String>,
    /// `--oauth-jwks-ca`: what an https `jwks_uri` is checked against.
    pub jwks_ca: PathBuf,
    /// `--oauth-algorithm` (empty: the library's default).
    pub algorithms: Vec<String>,
}

/// `--quota-store` and `--redis-*`, over the manifest's `[limits]` store settings.
#[derive(Clone, Debug)]
pub struct StorePlan {
    /// `--quota-store`: `Some(true)` Redis, `Some(false)` this process, `None` the manifest's
    /// choice (Redis when it has store settings).
    pub redis: Option<bool>,
    /// `--redis-url-env`: the variable holding the Redis URL, as given.
    pub url_env: String,
    /// `--redis-namespace`.
    pub namespace: Option<String>,
    /// `--redis-unreachable`.
    pub unreachable: Option<Unreachable>,
    /// `--redis-lease-ms`.
    pub lease: Option<Duration>,
}

/// Why the HTTP plan cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum HttpPlanError {
    /// A token variable is missing or holds no usable token.
    #[error("--auth-token-env: {0}")]
    Token(#[from] TokenError),
    /// An `--allow-origin` is no origin.
    #[error("--allow-origin must be http://HOST[:PORT] or https://HOST[:PORT], not {:?}", .0.0)]
    Origin(#[from] OriginError),
    /// The certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The OAuth settings are refused.
    #[error("--oauth-*: {0}")]
    OAuth(#[from] OAuthError),
    /// OAuth without a source of keys.
    #[error("--oauth-resource needs --oauth-jwks-file or --oauth-jwks-uri")]
    NoJwks,
    /// The shared store's settings are refused.
    #[error("--quota-store redis: {0}")]
    Store(#[from] StoreError),
    /// The Redis URL's variable is unset or not UTF-8.
    #[error(
        "--quota-store redis: the variable {0} (--redis-url-env) is not set or not UTF-8; put \
         the Redis URL in it"
    )]
    StoreUrlMissing(VariableName),
    /// `--redis-url-env` is no variable name (most likely the URL itself: not shown).
    #[error("--redis-url-env takes the NAME of an environment variable, not the URL (not shown)")]
    StoreUrlVariable,
}

/// The library's HTTP configuration, and the Redis URL's variable and value when a shared
/// store is used (the value joins the redactor; no tool may receive the variable).
#[derive(Debug)]
pub struct HttpServing {
    /// What [`airlock::Server::run_http`] takes.
    pub config: HttpConfig,
    /// The Redis URL, when quotas are counted in Redis.
    pub store_url: Option<(VariableName, SecretString)>,
}

impl HttpPlan {
    /// The configuration this plan describes, over the manifest's store settings `manifest`.
    ///
    /// # Errors
    ///
    /// The first [`HttpPlanError`]; none holds a token or the Redis URL.
    pub fn config(&self, manifest: Option<&StoreSettings>) -> Result<HttpServing, HttpPlanError> {
        let tokens = Tokens::from_env(self.auth_token_env.iter().map(String::as_str))?;
        let allow = AllowList::parse(&self.allow_host, &self.allow_origin)?;
        let proxies =
            TrustedProxies::new(self.trusted_proxy.clone()).reading(self.trusted_proxy_header);
        let mut config = HttpConfig::new(allow, tokens, self.limits()).trusting(proxies);
        if let Some((cert, key)) = &self.tls {
            config = config.with_tls(Tls::from_pem_files(cert, key)?);
        }
        if let Some(oauth) = &self.oauth {
            config = config.with_oauth(oauth.oauth()?);
        }
        let redis = self.store.redis.unwrap_or(manifest.is_some());
        if !redis {
            return Ok(HttpServing {
                config,
                store_url: None,
            });
        }
        let (store, store_url) = self.store.shared(manifest)?;
        Ok(HttpServing {
            config: config.shared_store(store),
            store_url: Some(store_url),
        })
    }

    /// The library's HTTP limits, with the ones given here.
    fn limits(&self) -> HttpLimits {
        let mut limits = HttpLimits::default();
        if let Some(max) = self.max_connections {
            limits.max_connections = max;
        }
        if let Some(max) = self.max_connections_per_address {
            limits.max_connections_per_address = max;
        }
        if let Some(per_minute) = self.client_calls_per_minute {
            let burst = airlock::limits::CLIENT_CALL_RATE.burst;
            limits.client_call_rate = Some(Rate { per_minute, burst });
        }
        if let Some(max) = self.client_in_flight {
            limits.client_in_flight = max;
        }
        if let Some(per_minute) = self.client_requests_per_minute {
            let burst = airlock::limits::CLIENT_REQUEST_RATE.burst;
            limits.client_request_rate = Some(Rate { per_minute, burst });
        }
        if let Some(max) = self.max_sessions {
            limits.max_sessions = max;
        }
        if let Some(max) = self.max_sessions_per_client {
            limits.max_sessions_per_client = max;
        }
        limits
    }
}

impl OAuthPlan {
    fn oauth(&self) -> Result<OAuth, HttpPlanError> {
        let keys = match (&self.jwks_file, &self.jwks_uri) {
            (Some(file), _) => JwksSource::File(file.clone()),
            (None, Some(uri)) => JwksSource::Uri(JwksUri::parse(uri, &self.jwks_ca)?),
            (None, None) => return Err(HttpPlanError::NoJwks),
        };
        let mut oauth = OAuth::new(&self.resource, &self.issuer, keys)?;
        if !self.authorization_servers.is_empty() {
            oauth = oauth
                .authorization_servers(self.authorization_servers.iter().map(String::as_str))?;
        }
        if !self.algorithms.is_empty() {
            oauth = oauth.algorithms(self.algorithms.iter().map(String::as_str))?;
        }
        Ok(oauth)
    }
}

impl StorePlan {
    /// The Redis store, and its URL's variable and value.
    fn shared(
        &self,
        manifest: Option<&StoreSettings>,
    ) -> Result<(SharedStore, (VariableName, SecretString)), HttpPlanError> {
        let name = VariableName::parse(&self.url_env).ok_or(HttpPlanError::StoreUrlVariable)?;
        let url = std::env::var(name.as_str())
            .map_err(|_| HttpPlanError::StoreUrlMissing(name.clone()))?;
        let url = SecretString::from(url);
        let namespace = self
            .namespace
            .as_deref()
            .or(manifest.and_then(|store| store.namespace.as_deref()))
            .unwrap_or("airlock");
        let unreachable = match self.unreachable {
            Some(policy) => policy,
            None if manifest.is_some_and(|store| store.local_when_unreachable) => {
                Unreachable::LocalLimits
            }
            None => Unreachable::FailClosed,
        };
        let mut store = SharedStore::redis(url.clone(), namespace)?.when_unreachable(unreachable);
        let lease = self.lease.or(manifest.and_then(|store| store.lease_ttl));
        if let Some(lease) = lease {
            store = store.with_lease_ttl(lease)?;
        }
        Ok((store, (name, url)))
    }
}
