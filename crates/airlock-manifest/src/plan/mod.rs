//! The serving plan: what `airlock serve` was asked to serve, as values, and the steps that
//! turn it into a running server. Which manifest is served, what the sandbox must hold before
//! it starts, which variables no tool may receive, the command line's limits over the
//! manifest's, the audit record, the HTTP configuration and the Redis URL, the reload on
//! SIGHUP. The program fills a [`ServePlan`] from its flags and runs it; nothing here reads a
//! flag.
//!
//! # Layout
//!
//! - `vetting`: what a manifest must pass besides its own checks (the sandbox gate, the
//!   variables kept from tools), at start and at every reload.
//! - `reload`: the server with its reload hook.
//! - [`audit_log`]: the audit record's file and hash key.
//! - [`http`]: the HTTP configuration and the shared store.

use std::net::SocketAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use airlock::metrics::Metrics;
use airlock::otel::Traces;
use airlock::transport::http::{AllowList, HttpConfig};
use airlock::transport::metrics::{Endpoint, EndpointError};
use airlock::variables::VariableName;
use airlock::{BuildError, CallLog, Limits, Rate, Server};

use crate::manifest::{self, Manifest, ManifestError};
use crate::sandbox;

pub mod audit_log;
pub mod http;
mod reload;
mod vetting;

use audit_log::{AuditLogError, AuditLogPlan};
use http::{HttpPlan, HttpPlanError, HttpServing};
use reload::{Reloading, built};
use vetting::Vetting;

/// The file `serve` and `check` use when none is named.
pub const LOCAL_MANIFEST: &str = "airlock.toml";

/// The manifest at `path`, else `./airlock.toml` if it exists (said at WARN: whoever controls
/// the working directory chooses the tools), else the embedded default.
///
/// # Errors
///
/// The [`ManifestError`] of the file read.
pub fn load(path: Option<&Path>) -> Result<Manifest, ManifestError> {
    match path {
        Some(path) => manifest::load(path),
        None if Path::new(LOCAL_MANIFEST).is_file() => {
            // Whoever controls the working directory chooses the tools: say so.
            tracing::warn!(
                manifest = LOCAL_MANIFEST,
                "serving the manifest found in the working directory"
            );
            manifest::load(Path::new(LOCAL_MANIFEST))
        }
        None => manifest::load_default(),
    }
}

/// Limits given on the command line; they override the manifest's.
#[derive(Clone, Debug, Default)]
pub struct LimitOverrides {
    /// Quota on tools/call across the server: calls per minute, sustained.
    pub calls_per_minute: Option<NonZeroU32>,
    /// Quota on tools/call: calls admitted back to back (with `calls_per_minute` only).
    pub call_burst: Option<NonZeroU32>,
    /// Quota on cheap methods: requests per minute.
    pub cheap_per_minute: Option<NonZeroU32>,
    /// Most tool calls running at once.
    pub max_in_flight: Option<NonZeroUsize>,
    /// Deadline of a tool call that sets none of its own.
    pub tool_timeout: Option<Duration>,
}

impl LimitOverrides {
    /// `limits` with these overrides applied: a rate given without its burst keeps the
    /// manifest's burst, else the library's.
    pub fn apply(&self, limits: &mut Limits) {
        if let Some(per_minute) = self.calls_per_minute {
            let burst = self
                .call_burst
                .or(limits.tool_call_rate.map(|rate| rate.burst))
                .unwrap_or(airlock::limits::TOOL_CALL_RATE.burst);
            limits.tool_call_rate = Some(Rate { per_minute, burst });
        }
        if let Some(per_minute) = self.cheap_per_minute {
            let burst = limits
                .cheap_method_rate
                .map_or(airlock::limits::CHEAP_METHOD_RATE.burst, |rate| rate.burst);
            limits.cheap_method_rate = Some(Rate { per_minute, burst });
        }
        if let Some(max) = self.max_in_flight {
            limits.max_in_flight = max;
        }
        if let Some(timeout) = self.tool_timeout {
            limits.tool_timeout = timeout;
        }
    }
}

/// What `airlock serve` was asked to serve.
#[derive(Clone, Debug)]
pub struct ServePlan {
    /// The manifest (none: `./airlock.toml` if it exists, else the embedded default).
    pub manifest: Option<PathBuf>,
    /// How strictly the kernel sandbox is held.
    pub sandbox: sandbox::Mode,
    /// The command line's limits over the manifest's.
    pub limits: LimitOverrides,
    /// Where the per-call audit record goes.
    pub audit_log: AuditLogPlan,
    /// Serve over HTTP (none: stdio).
    pub http: Option<HttpPlan>,
    /// Serve Prometheus metrics (none: none are kept).
    pub metrics: Option<MetricsPlan>,
    /// Export OpenTelemetry traces (none: no request is traced).
    pub otlp: Option<OtlpPlan>,
}

/// Where OpenTelemetry traces go (`--otlp`).
#[derive(Clone, Debug)]
pub struct OtlpPlan {
    /// The collector's OTLP/HTTP endpoint (`http://HOST[:PORT][/PATH]`; spans go to
    /// `PATH/v1/traces`).
    pub endpoint: String,
    /// The share of requests traced, in (0, 1].
    pub sample_ratio: f64,
}

/// Where Prometheus metrics are served (`--metrics`).
#[derive(Clone, Debug)]
pub struct MetricsPlan {
    /// The endpoint's own listener.
    pub addr: SocketAddr,
    /// Whether an address other than loopback is allowed.
    pub allow_remote: bool,
    /// Hosts a request's `Host` may name besides the loopback names.
    pub allow_host: Vec<String>,
}

/// A plan refused before anything is logged: what it would log could be a secret, or the
/// operator should hear it before the server does anything (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An `--auth-token-env` value is no variable name: most likely the token, never shown.
    #[error(
        "--auth-token-env takes the NAME of an environment variable that holds the token \
         ([A-Za-z_][A-Za-z0-9_]*, at most {bytes} bytes), never the token itself; the value of \
         --auth-token-env number {position} is not one (it is not shown). Put the token in a \
         variable and pass its name: MY_TOKEN=… airlock serve --http ADDR --auth-token-env \
         MY_TOKEN",
        bytes = airlock::limits::MAX_TOKEN_VARIABLE_BYTES
    )]
    TokenVariable {
        /// Which `--auth-token-env`, counting from 1.
        position: usize,
    },
    /// A bind address that is not loopback, without `--allow-remote`.
    #[error(
        "{0} is not a loopback address; add --allow-remote to serve it (and --auth-token-env or \
         --oauth-resource to require a token)"
    )]
    NotLoopback(SocketAddr),
}

/// Why a plan was not served (each said at ERROR by whoever runs it, but
/// [`ServeError::Refused`], whose reasons are said as they are found).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The plan itself is refused.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The audit record cannot be kept.
    #[error(transparent)]
    AuditLog(#[from] AuditLogError),
    /// The manifest cannot be read or is refused.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The HTTP configuration is refused.
    #[error(transparent)]
    Http(#[from] HttpPlanError),
    /// The manifest failed its plan's checks (the sandbox gate, the variables kept from
    /// tools); the lines at ERROR before say why.
    #[error("the manifest was refused (the lines before say why)")]
    Refused,
    /// The server cannot be built from the manifest's tools.
    #[error("the manifest's tools were refused: {0}")]
    Build(#[from] BuildError),
    /// The metrics endpoint cannot be bound or started.
    #[error(transparent)]
    Metrics(#[from] EndpointError),
    /// Traces cannot be exported as asked (`--otlp`).
    #[error("--otlp: {0}")]
    Otlp(#[from] airlock::otel::OtlpError),
}

/// A manifest that passed every check of its plan, to build.
#[derive(Debug)]
pub struct Vetted {
    manifest: Manifest,
    /// The file a reload reads again.
    reload_path: Option<PathBuf>,
    reloading: Reloading,
    log: Arc<CallLog>,
    /// Where and how it is served over HTTP (none: stdio).
    http: Option<(SocketAddr, Box<HttpConfig>)>,
    /// The metrics kept and their endpoint, bound (none: no metrics).
    metrics: Option<(Arc<Metrics>, Endpoint)>,
    /// Where traced requests go (none: no traces).
    traces: Option<Arc<Traces>>,
}

impl Vetted {
    /// Whether it is served on stdin and stdout.
    pub fn is_stdio(&self) -> bool {
        self.http.is_none()
    }

    /// The server, with its reload hook when the manifest came from a file.
    ///
    /// # Errors
    ///
    /// [`ServeError::Build`].
    pub fn build(self) -> Result<Prepared, ServeError> {
        let counted = self
            .metrics
            .as_ref()
            .map(|(metrics, _)| Arc::clone(metrics));
        let server = built(
            self.manifest,
            self.reload_path,
            self.reloading,
            self.log,
            counted,
            self.traces,
        )?;
        if let Some((metrics, endpoint)) = self.metrics {
            metrics.launchers(|| {
                let (idle, busy) = sandbox::launchers();
                airlock::metrics::Launchers {
                    idle: u64::try_from(idle).unwrap_or(u64::MAX),
                    busy: u64::try_from(busy).unwrap_or(u64::MAX),
                }
            });
            endpoint.spawn(metrics)?;
        }
        Ok(match self.http {
            None => Prepared::Stdio(server),
            Some((addr, config)) => Prepared::Http {
                server,
                addr,
                config,
            },
        })
    }
}

/// A server ready to run, on its transport.
#[derive(Debug)]
pub enum Prepared {
    /// Over stdin and stdout.
    Stdio(Server),
    /// Over HTTP at `addr`.
    Http {
        /// The server.
        server: Server,
        /// Where it listens.
        addr: SocketAddr,
        /// Its HTTP configuration (boxed: most of this value's size).
        config: Box<HttpConfig>,
    },
}

impl Prepared {
    /// Serves until the end of input (stdio) or a signal, as [`Server::run_stdio`] and
    /// [`Server::run_http`] say.
    pub fn run(self) -> ExitCode {
        match self {
            Self::Stdio(server) => server.run_stdio(),
            Self::Http {
                server,
                addr,
                config,
            } => server.run_http(addr, *config),
        }
    }
}

impl ServePlan {
    /// The refusals made before anything is logged or opened.
    ///
    /// # Errors
    ///
    /// The first [`PlanError`].
    pub fn check(&self) -> Result<(), PlanError> {
        let Some(http) = &self.http else {
            return self.check_metrics();
        };
        // A value that cannot name a variable is most likely the token itself, and must not
        // reach the log or the terminal.
        if let Some(index) = http
            .auth_token_env
            .iter()
            .position(|name| VariableName::parse(name).is_none())
        {
            return Err(PlanError::TokenVariable {
                position: index.saturating_add(1),
            });
        }
        if !http.addr.ip().is_loopback() && !http.allow_remote {
            return Err(PlanError::NotLoopback(http.addr));
        }
        self.check_metrics()
    }

    /// The metrics endpoint's address is loopback unless allowed, as `--http`'s.
    fn check_metrics(&self) -> Result<(), PlanError> {
        match &self.metrics {
            Some(metrics) if !metrics.addr.ip().is_loopback() && !metrics.allow_remote => {
                Err(PlanError::NotLoopback(metrics.addr))
            }
            _ => Ok(()),
        }
    }

    /// The manifest this plan serves, vetted: the audit record opened, the manifest loaded
    /// with the command line's limits, the HTTP configuration made, and the manifest checked
    /// against all of it (the sandbox gate, the variables kept from tools). Raises the soft descriptor limit first, binds the metrics
    /// endpoint (`--metrics`, else the manifest's `[server] metrics`), and keeps tools from
    /// reaching a listener of airlock's own (MCP over HTTP, metrics) through the network proxy.
    ///
    /// # Errors
    ///
    /// A [`ServeError`].
    pub fn vet(self) -> Result<Vetted, ServeError> {
        self.check()?;
        raise_descriptor_limit();
        let opened = self.audit_log.open()?;
        // The file a reload reads again: the one served (`--manifest`, or ./airlock.toml found
        // now); the embedded default has nothing to reload, and SIGHUP ends that server.
        let reload_path = match &self.manifest {
            Some(path) => Some(path.clone()),
            None if Path::new(LOCAL_MANIFEST).is_file() => Some(PathBuf::from(LOCAL_MANIFEST)),
            None => None,
        };
        let mut manifest = load(self.manifest.as_deref())?;
        self.limits.apply(&mut manifest.limits);
        // The manifest's `[server] metrics` when no --metrics was given, with --allow-remote
        // and --allow-host as given.
        let metrics_plan = self.metrics.clone().or_else(|| {
            manifest.metrics.map(|addr| MetricsPlan {
                addr,
                allow_remote: self.http.as_ref().is_some_and(|http| http.allow_remote),
                allow_host: self
                    .http
                    .as_ref()
                    .map(|http| http.allow_host.clone())
                    .unwrap_or_default(),
            })
        });
        if let Some(plan) = &metrics_plan
            && !plan.addr.ip().is_loopback()
            && !plan.allow_remote
        {
            return Err(PlanError::NotLoopback(plan.addr).into());
        }
        // Bound now: a busy port fails the start, and port 0 becomes the port to keep tools
        // from.
        let metrics = match &metrics_plan {
            Some(plan) => {
                let allow = AllowList::new(&plan.allow_host, &[]);
                let endpoint = Endpoint::bind(plan.addr, allow)?;
                let addr = endpoint.local_addr().unwrap_or(plan.addr);
                tracing::info!(metrics = %addr, "metrics endpoint bound");
                Some((Metrics::new(), endpoint, addr))
            }
            None => None,
        };
        // No tool's command may reach airlock's own listeners (MCP, metrics) through the
        // network proxy, unless its manifest names the address.
        let own: Vec<SocketAddr> = self
            .http
            .iter()
            .map(|http| http.addr)
            .chain(metrics.iter().map(|(_, _, addr)| *addr))
            .collect();
        if !own.is_empty() {
            sandbox::destinations::set_own_listeners(own);
        }
        let metrics = metrics.map(|(metrics, endpoint, _)| (metrics, endpoint));
        // The exporter's thread starts now; a refused endpoint fails the start. The resource
        // names the server as its clients see it. `--otlp` wins over `[server] otlp`.
        let otlp = self.otlp.clone().or_else(|| {
            manifest.otlp.clone().map(|endpoint| OtlpPlan {
                endpoint,
                sample_ratio: 1.0,
            })
        });
        let traces = match &otlp {
            Some(plan) => {
                let traces = Traces::to_otlp(
                    &plan.endpoint,
                    &manifest.name,
                    &manifest.version,
                    plan.sample_ratio,
                )?;
                tracing::info!(
                    endpoint = plan.endpoint.as_str(),
                    ratio = plan.sample_ratio,
                    "traces exported over OTLP/HTTP"
                );
                Some(traces)
            }
            None => None,
        };
        tracing::info!(
            manifest = manifest.source.as_str(),
            tools = manifest.tools.len(),
            "manifest loaded"
        );
        let vetting = Vetting::new(self.sandbox, opened.hash_key_env);
        let Some(http) = self.http else {
            if !vetting.passes(&manifest) {
                return Err(ServeError::Refused);
            }
            return Ok(Vetted {
                manifest,
                reload_path,
                reloading: Reloading::new(vetting, self.limits, Vec::new()),
                log: opened.log,
                http: None,
                metrics,
                traces,
            });
        };
        let HttpServing { config, store_url } = http.config(manifest.shared_store.as_ref())?;
        // No token passthrough: a tool that would receive a token's variable is refused; nor
        // the Redis URL's: it may hold the store's password.
        let token_envs = http
            .auth_token_env
            .iter()
            .filter_map(|name| VariableName::parse(name))
            .collect();
        let vetting = vetting
            .keeping_http_secrets(token_envs, store_url.as_ref().map(|(name, _)| name.clone()));
        if !vetting.passes(&manifest) {
            return Err(ServeError::Refused);
        }
        // The tokens (and the Redis URL) join the redactor: one that reaches a command's output
        // is replaced there.
        let mut known: Vec<(String, secrecy::SecretString)> = config
            .tokens
            .secrets()
            .map(|(name, token)| (name.to_owned(), token.clone()))
            .collect();
        known.extend(store_url.map(|(name, url)| (name.to_string(), url)));
        Ok(Vetted {
            manifest,
            reload_path,
            reloading: Reloading::new(vetting, self.limits, known),
            log: opened.log,
            http: Some((http.addr, Box::new(config))),
            metrics,
            traces,
        })
    }
}

/// Raises the soft limit on open descriptors to the hard one: connections, pipes of running
/// calls and proxied connections are all airlock's descriptors, and a common soft limit of
/// 1,024 is what a few busy calls use (every bound on them is counted against the limit in
/// force: `sandbox::proxy`). Commands get their own limit from their policy.
fn raise_descriptor_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum
        && setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )
        .is_err()
    {
        tracing::debug!("the soft descriptor limit could not be raised");
    }
}

#[cfg(test)]
mod tests {
    use airlock::transport::http::ProxyHeader;

    use super::*;
    use crate::plan::http::StorePlan;

    fn http(addr: &str) -> HttpPlan {
        HttpPlan {
            addr: addr.parse().unwrap(),
            allow_remote: false,
            allow_origin: Vec::new(),
            allow_host: Vec::new(),
            auth_token_env: Vec::new(),
            max_connections: None,
            max_connections_per_address: None,
            client_calls_per_minute: None,
            client_in_flight: None,
            client_requests_per_minute: None,
            max_sessions: None,
            max_sessions_per_client: None,
            trusted_proxy: Vec::new(),
            trusted_proxy_header: ProxyHeader::XForwardedFor,
            tls: None,
            oauth: None,
            store: StorePlan {
                redis: None,
                url_env: "AIRLOCK_REDIS_URL".to_owned(),
                namespace: None,
                unreachable: None,
                lease: None,
            },
        }
    }

    fn plan(http: Option<HttpPlan>) -> ServePlan {
        ServePlan {
            manifest: None,
            sandbox: sandbox::Mode::Required,
            limits: LimitOverrides::default(),
            audit_log: AuditLogPlan::default(),
            http,
            metrics: None,
            otlp: None,
        }
    }

    #[test]
    fn a_token_given_for_its_variable_is_refused_by_position_and_not_shown() {
        let mut served = http("127.0.0.1:8080");
        served.auth_token_env = vec!["GOOD_NAME".to_owned(), "ghp_secret-123".to_owned()];
        let error = plan(Some(served)).check().unwrap_err();
        assert!(matches!(error, PlanError::TokenVariable { position: 2 }));
        assert!(!error.to_string().contains("ghp_secret-123"));
    }

    #[test]
    fn an_address_that_is_not_loopback_needs_allow_remote() {
        let error = plan(Some(http("0.0.0.0:8080"))).check().unwrap_err();
        assert!(matches!(error, PlanError::NotLoopback(_)));
        let mut remote = http("0.0.0.0:8080");
        remote.allow_remote = true;
        assert!(plan(Some(remote)).check().is_ok());
        assert!(plan(Some(http("[::1]:8080"))).check().is_ok());
    }

    #[test]
    fn stdio_has_nothing_to_refuse_before_logging() {
        assert!(plan(None).check().is_ok());
    }

    #[test]
    fn a_rate_given_without_its_burst_keeps_the_manifests_burst() {
        let per_minute = NonZeroU32::new(6).unwrap();
        let burst = NonZeroU32::new(3).unwrap();
        let mut limits = Limits::default();
        limits.tool_call_rate = Some(Rate {
            per_minute: NonZeroU32::new(60).unwrap(),
            burst,
        });
        let overrides = LimitOverrides {
            calls_per_minute: Some(per_minute),
            tool_timeout: Some(Duration::from_millis(1500)),
            ..LimitOverrides::default()
        };
        overrides.apply(&mut limits);
        assert_eq!(limits.tool_call_rate, Some(Rate { per_minute, burst }));
        assert_eq!(limits.tool_timeout, Duration::from_millis(1500));
        let mut given = LimitOverrides {
            calls_per_minute: Some(per_minute),
            ..LimitOverrides::default()
        };
        given.call_burst = NonZeroU32::new(9);
        given.apply(&mut limits);
        assert_eq!(limits.tool_call_rate.map(|rate| rate.burst.get()), Some(9));
    }
}
