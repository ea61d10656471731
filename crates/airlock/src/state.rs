//! What every session of one server shares, read by the engine and by dispatch: the server's
//! identity, its tools, its limits, its quotas and where call records go. Built once by the
//! builder, immutable after but for the tool set, which a reload replaces whole
//! ([`ToolSet`]); its own module so that the engine (which holds it) and dispatch (which reads
//! it) do not import each other.

use std::sync::{Arc, PoisonError, RwLock};

use crate::call_log::CallLog;
use crate::limits::Limits;
use crate::prompts::PromptRegistry;
use crate::quota::Quotas;
use crate::resources::{ResourceRegistry, ResourceUpdates};
use crate::response::ServerInfo;
use crate::rounds::StateKey;
use crate::tools::{BuildError, Registry};

/// What every session of one server shares. Immutable once built.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) info: ServerInfo,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: ToolSet,
    pub(crate) prompts: PromptRegistry,
    pub(crate) resources: ResourceRegistry,
    pub(crate) limits: Limits,
    pub(crate) quotas: Quotas,
    /// Where each call's audit record goes, if anywhere.
    pub(crate) call_log: Option<Arc<CallLog>>,
    /// Announcements of changed resources, when the server offers subscriptions.
    pub(crate) updates: Option<ResourceUpdates>,
    /// The key a modern call's `requestState` is signed with.
    pub(crate) request_states: Arc<StateKey>,
    /// Where requests, calls and refusals are counted, if anywhere.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Where traced requests go, if anywhere.
    #[cfg(feature = "otel")]
    pub(crate) traces: Option<Arc<crate::otel::Traces>>,
    /// The tasks of every session (2025-11-25 task-augmented calls).
    pub(crate) tasks: Arc<crate::tasks::Tasks>,
}

impl Shared {
    /// The limits in force.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The tools in force now. A call holds its own tool (`Arc<ToolDef>`), so one in flight
    /// when the set is replaced finishes on the tool it started with.
    pub(crate) fn registry(&self) -> Arc<Registry> {
        self.tools.current()
    }

    /// Whether the tool list may change while we run (a reload hook was given): what
    /// `tools.listChanged` declares to legacy sessions.
    pub(crate) fn tools_may_change(&self) -> bool {
        self.tools.reload.is_some()
    }

    /// Checks `tools` as the builder does, then puts them in force: the per-tool quotas follow
    /// (an unchanged one keeps its count), and sessions are told when the list may change.
    /// Returns how many tools are in force.
    ///
    /// # Errors
    ///
    /// As [`Registry::new`], and [`BuildError::ScopesChanged`]; the tools in force stay.
    pub(crate) fn replace_tools(
        &self,
        tools: Vec<crate::tools::Tool>,
    ) -> Result<usize, BuildError> {
        let registry = Registry::new(tools)?;
        self.registry().scopes_kept_by(&registry)?;
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            registry.count_in(metrics);
        }
        let count = registry.len();
        self.quotas.retool(registry.rates());
        self.tools.replace(registry);
        Ok(count)
    }
}

/// What a reload hook gives: the new tools, or why there are none (for the log).
pub(crate) type ReloadResult = Result<Vec<crate::tools::Tool>, ReloadError>;

/// Why a reload hook has no new tools: its text is logged at ERROR, so it must be the
/// operator's (a manifest's path and line), never a peer's.
pub type ReloadError = Box<dyn std::error::Error + Send + Sync>;

/// A reload hook ([`ServerBuilder::reload`](crate::ServerBuilder::reload)).
#[derive(Clone)]
pub(crate) struct ReloadHook(pub(crate) Arc<dyn Fn() -> ReloadResult + Send + Sync>);

impl std::fmt::Debug for ReloadHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReloadHook")
    }
}

/// The server's tools: the registry in force, replaced whole by a reload (never edited in
/// place, so a reader sees the old set or the new one, never a mix), and the announcement
/// that it changed.
pub(crate) struct ToolSet {
    current: RwLock<Arc<Registry>>,
    /// A counter of replacements; sessions watch it to tell their clients
    /// (`notifications/tools/list_changed`). A watch keeps only the last value: a burst of
    /// reloads is one notification to a session that was busy, and nothing queues.
    changes: tokio::sync::watch::Sender<u64>,
    /// Where SIGHUP gets the new tools; `None`: SIGHUP ends the server.
    pub(crate) reload: Option<ReloadHook>,
}

impl ToolSet {
    /// `registry` in force, reloaded by `reload` if given.
    pub(crate) fn new(registry: Registry, reload: Option<ReloadHook>) -> Self {
        Self {
            current: RwLock::new(Arc::new(registry)),
            changes: tokio::sync::watch::Sender::new(0),
            reload,
        }
    }

    /// The registry in force.
    pub(crate) fn current(&self) -> Arc<Registry> {
        // A poisoned lock still holds a whole registry: the swap below cannot panic midway.
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `registry` in force and announces the change.
    pub(crate) fn replace(&self, registry: Registry) {
        let registry = Arc::new(registry);
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(PoisonError::into_inner),
            registry,
        );
        // Dropped outside the lock: the last reference may free many tools.
        drop(old);
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// A session's view of the replacements from now on.
    pub(crate) fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.current().len())
            .field("reloadable", &self.reload.is_some())
            .finish()
    }
}

/// What a server serves besides tools: prompts, resources and, when it offers subscriptions,
/// where changes are announced.
#[derive(Default)]
pub(crate) struct Surface {
    pub(crate) prompts: PromptRegistry,
    pub(crate) resources: ResourceRegistry,
    pub(crate) updates: Option<ResourceUpdates>,
    /// The key request states are signed with; one drawn at start when none is given.
    pub(crate) request_states: Option<Arc<StateKey>>,
    /// Where SIGHUP gets new tools, when the server reloads.
    pub(crate) reload: Option<ReloadHook>,
    /// Where requests, calls and refusals are counted, if anywhere.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Where traced requests go, if anywhere.
    #[cfg(feature = "otel")]
    pub(crate) traces: Option<Arc<crate::otel::Traces>>,
}

/// Parameters of one server, without a call log (tests).
#[cfg(test)]
pub(crate) fn shared(
    info: ServerInfo,
    instructions: Option<String>,
    registry: Registry,
    limits: Limits,
) -> Arc<Shared> {
    shared_logging(
        info,
        instructions,
        registry,
        Surface::default(),
        limits,
        None,
    )
    .expect("the random source works")
}

/// Parameters of one server, as the builder assembles them, writing each call's audit record
/// to `call_log` and, when it offers subscriptions, announcing changes through `updates`.
pub(crate) fn shared_logging(
    info: ServerInfo,
    instructions: Option<String>,
    registry: Registry,
    surface: Surface,
    limits: Limits,
    call_log: Option<Arc<CallLog>>,
) -> Result<Arc<Shared>, BuildError> {
    let Surface {
        prompts,
        resources,
        updates,
        request_states,
        reload,
        #[cfg(feature = "metrics")]
        metrics,
        #[cfg(feature = "otel")]
        traces,
    } = surface;
    #[cfg(feature = "metrics")]
    if let Some(metrics) = &metrics {
        registry.count_in(metrics);
    }
    let request_states = match request_states {
        Some(key) => key,
        None => Arc::new(StateKey::random().map_err(|_| BuildError::NoRandomness)?),
    };
    let quotas = Quotas::new(&limits, registry.rates());
    let shared = Shared {
        info,
        instructions,
        tools: ToolSet::new(registry, reload),
        prompts,
        resources,
        limits,
        quotas,
        call_log,
        updates,
        request_states,
        #[cfg(feature = "metrics")]
        metrics,
        #[cfg(feature = "otel")]
        traces,
        tasks: Arc::default(),
    };
    Ok(Arc::new(shared))
}

/// The same with given quotas (tests drive their clock).
#[cfg(test)]
pub(crate) fn shared_with_quotas(
    info: ServerInfo,
    instructions: Option<String>,
    registry: Registry,
    limits: Limits,
    quotas: Quotas,
) -> Arc<Shared> {
    Arc::new(Shared {
        info,
        instructions,
        tools: ToolSet::new(registry, None),
        prompts: PromptRegistry::default(),
        resources: ResourceRegistry::default(),
        limits,
        quotas,
        call_log: None,
        updates: None,
        request_states: Arc::new(StateKey::from_bytes(b"tests")),
        #[cfg(feature = "metrics")]
        metrics: None,
        #[cfg(feature = "otel")]
        traces: None,
        tasks: Arc::default(),
    })
}
