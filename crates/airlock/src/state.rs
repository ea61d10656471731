//! What every session of one server shares, read by the engine and by dispatch: the server's
//! identity, its tools, its limits, its quotas and where call records go. Built once by the
//! builder, immutable after; its own module so that the engine (which holds it) and dispatch
//! (which reads it) do not import each other.

use std::sync::Arc;

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
    pub(crate) registry: Registry,
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
}

impl Shared {
    /// The limits in force.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
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
    } = surface;
    let request_states = match request_states {
        Some(key) => key,
        None => Arc::new(StateKey::random().map_err(|_| BuildError::NoRandomness)?),
    };
    let quotas = Quotas::new(&limits, registry.rates());
    let shared = Shared {
        info,
        instructions,
        registry,
        prompts,
        resources,
        limits,
        quotas,
        call_log,
        updates,
        request_states,
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
        registry,
        prompts: PromptRegistry::default(),
        resources: ResourceRegistry::default(),
        limits,
        quotas,
        call_log: None,
        updates: None,
        request_states: Arc::new(StateKey::from_bytes(b"tests")),
    })
}
