//! The numeric bounds a manifest sets, each checked against its ceiling: server limits and
//! quotas, a tool's deadline, output cap, stderr handling and sandbox resources.

use std::num::{NonZeroU32, NonZeroUsize};
use std::time::Duration;

use toml::Spanned;

use super::raw::{
    RawLimits, RawQuotaStore, RawRate, RawResources, RawStderr, RawTool, RawUnreachable,
};
use super::rule::Rule;
use super::{Located, ManifestError};
use crate::limits::{
    MAX_OUTPUT_CEILING_BYTES, SANDBOX_MAX_CALL_MEMORY_MIB, SANDBOX_MAX_CPU_SECONDS,
    SANDBOX_MAX_DISK_FILES, SANDBOX_MAX_DISK_MIB, SANDBOX_MAX_FILE_SIZE_MIB,
    SANDBOX_MAX_MEMORY_MIB, SANDBOX_MAX_NETWORK_CONNECTIONS, SANDBOX_MAX_NETWORK_MIB,
    SANDBOX_MAX_OPEN_FILES, SANDBOX_MAX_PROCESSES, STDERR_TAIL_BYTES,
};
use crate::sandbox::Resources;
use airlock::limits::{Limits, MAX_TOOL_TIMEOUT, Rate};

/// What a command tool's reply holds of its stderr (`stderr` in the manifest). Whatever the
/// mode, the reply holds at most `max_output_bytes` of output, counted as sent.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum StderrMode {
    /// Both streams, each in a section of its own, each keeping at least half of the reply
    /// when they do not both fit (the default).
    Separate,
    /// One stream, in the order the command wrote it, as a terminal shows it (`2>&1`).
    Merge,
    /// stdout, and the last this many bytes of stderr.
    Tail(NonZeroUsize),
    /// stdout only.
    Drop,
}

impl StderrMode {
    /// How `airlock check` names it.
    pub fn describe(self) -> String {
        match self {
            Self::Separate => "separate".to_owned(),
            Self::Merge => "merged into stdout".to_owned(),
            Self::Tail(bytes) => format!("last {bytes} bytes"),
            Self::Drop => "dropped".to_owned(),
        }
    }
}

/// `[limits] quota_store` and the `redis_*` keys: `None` for the local store (the default).
pub(super) fn shared_store(
    raw: &RawLimits,
    at: &Located<'_>,
) -> Result<Option<StoreSettings>, ManifestError> {
    if raw.quota_store != Some(RawQuotaStore::Redis) {
        let stray = [
            raw.redis_namespace
                .as_ref()
                .map(|v| ("limits.redis_namespace", v.span().start)),
            raw.redis_lease_ms
                .as_ref()
                .map(|v| ("limits.redis_lease_ms", v.span().start)),
        ];
        if let Some((field, start)) = stray.into_iter().flatten().next() {
            return Err(at.error(Some(start), None, field, Rule::NeedsRedis));
        }
        if raw.redis_unreachable.is_some() {
            return Err(at.error(None, None, "limits.redis_unreachable", Rule::NeedsRedis));
        }
        return Ok(None);
    }
    let namespace = match &raw.redis_namespace {
        Some(value) => {
            let name = value.get_ref();
            let plain = !name.is_empty()
                && name.len() <= airlock::limits::MAX_STORE_NAMESPACE_BYTES
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"_.-".contains(&byte));
            if !plain {
                return Err(at.error(
                    Some(value.span().start),
                    None,
                    "limits.redis_namespace",
                    Rule::StoreNamespace,
                ));
            }
            Some(name.clone())
        }
        None => None,
    };
    let lease_ttl = match &raw.redis_lease_ms {
        Some(value) => {
            let lease = Duration::from_millis(*value.get_ref());
            let (min, max) = airlock::limits::STORE_LEASE_TTL_RANGE;
            if lease < min || lease > max {
                return Err(at.error(
                    Some(value.span().start),
                    None,
                    "limits.redis_lease_ms",
                    Rule::StoreLease,
                ));
            }
            Some(lease)
        }
        None => None,
    };
    Ok(Some(StoreSettings {
        namespace,
        local_when_unreachable: raw.redis_unreachable == Some(RawUnreachable::Local),
        lease_ttl,
    }))
}

pub(super) fn limits(raw: &RawLimits, at: &Located<'_>) -> Result<Limits, ManifestError> {
    let mut limits = Limits::default();
    let count = |value: &Spanned<u64>, field: &'static str, ceiling: usize| {
        usize::try_from(*value.get_ref())
            .ok()
            .filter(|n| *n <= ceiling)
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| {
                at.error(
                    Some(value.span().start),
                    None,
                    field,
                    Rule::out_of_range(ceiling),
                )
            })
    };
    if let Some(v) = &raw.max_frame_bytes {
        limits.max_frame_bytes = count(v, "limits.max_frame_bytes", 64 * 1024 * 1024)?;
    }
    if let Some(v) = &raw.max_json_depth {
        limits.max_json_depth = count(v, "limits.max_json_depth", 127)?;
    }
    if let Some(v) = &raw.max_argument_bytes {
        limits.max_argument_bytes = count(v, "limits.max_argument_bytes", 64 * 1024 * 1024)?;
    }
    if let Some(v) = &raw.max_argument_depth {
        limits.max_argument_depth = count(v, "limits.max_argument_depth", 64)?;
    }
    if let Some(v) = &raw.max_object_keys {
        limits.max_object_keys = count(v, "limits.max_object_keys", 65_536)?;
    }
    if let Some(v) = &raw.max_array_items {
        limits.max_array_items = count(v, "limits.max_array_items", 65_536)?;
    }
    if let Some(v) = &raw.max_string_bytes {
        limits.max_string_bytes = count(v, "limits.max_string_bytes", 64 * 1024 * 1024)?;
    }
    if let Some(v) = &raw.max_in_flight {
        limits.max_in_flight = count(v, "limits.max_in_flight", 1024)?;
    }
    if let Some(v) = &raw.max_consecutive_errors {
        let n = count(v, "limits.max_consecutive_errors", 1_000_000)?;
        limits.max_consecutive_errors = u32::try_from(n.get())
            .ok()
            .and_then(NonZeroU32::new)
            .unwrap_or(NonZeroU32::MIN);
    }
    if let Some(v) = &raw.tool_timeout_ms {
        limits.tool_timeout = timeout(v, at, None, "limits.tool_timeout_ms")?;
    }
    if let Some(v) = &raw.tool_call_rate {
        limits.tool_call_rate = Some(rate(v, at, None, "limits.tool_call_rate")?);
    }
    if let Some(v) = &raw.cheap_method_rate {
        limits.cheap_method_rate = Some(rate(v, at, None, "limits.cheap_method_rate")?);
    }
    Ok(limits)
}

/// A quota: `per_minute` of 1 to 10 million, `burst` (default 1) of 1 to 100,000.
pub(super) fn rate(
    value: &Spanned<RawRate>,
    at: &Located<'_>,
    tool: Option<&str>,
    field: &str,
) -> Result<Rate, ManifestError> {
    let raw = value.get_ref();
    let per_minute = u32::try_from(raw.per_minute)
        .ok()
        .filter(|n| *n <= 10_000_000)
        .and_then(NonZeroU32::new);
    let burst = u32::try_from(raw.burst.unwrap_or(1))
        .ok()
        .filter(|n| *n <= 100_000)
        .and_then(NonZeroU32::new);
    match (per_minute, burst) {
        (Some(per_minute), Some(burst)) => Ok(Rate { per_minute, burst }),
        _ => Err(at.error(Some(value.span().start), tool, field, Rule::Rate)),
    }
}

pub(super) fn timeout(
    value: &Spanned<u64>,
    at: &Located<'_>,
    tool: Option<&str>,
    field: &str,
) -> Result<Duration, ManifestError> {
    let duration = Duration::from_millis(*value.get_ref());
    if duration.is_zero() || duration > MAX_TOOL_TIMEOUT {
        return Err(at.error(Some(value.span().start), tool, field, Rule::Timeout));
    }
    Ok(duration)
}

/// `resources = { … }` over the defaults, each within its ceiling.
pub(super) fn resources(
    value: &Spanned<RawResources>,
    at: &Located<'_>,
    tool: Option<&str>,
) -> Result<Resources, ManifestError> {
    let raw = value.get_ref();
    let mut resources = Resources::default();
    let check =
        |given: Option<u64>, name: &str, ceiling: u64| -> Result<Option<u64>, ManifestError> {
            match given {
                None => Ok(None),
                Some(n) if (1..=ceiling).contains(&n) => Ok(Some(n)),
                Some(_) => Err(at.error(
                    Some(value.span().start),
                    tool,
                    &format!("resources.{name}"),
                    Rule::OutOfRange { ceiling },
                )),
            }
        };
    if let Some(n) = check(raw.processes, "processes", u64::from(SANDBOX_MAX_PROCESSES))? {
        resources.processes = u32::try_from(n).unwrap_or(SANDBOX_MAX_PROCESSES);
    }
    if let Some(n) = check(raw.memory_mib, "memory_mib", SANDBOX_MAX_MEMORY_MIB)? {
        resources.memory_mib = n;
    }
    if let Some(n) = check(raw.cpu_seconds, "cpu_seconds", SANDBOX_MAX_CPU_SECONDS)? {
        resources.cpu_seconds = n;
    }
    if let Some(n) = check(
        raw.file_size_mib,
        "file_size_mib",
        SANDBOX_MAX_FILE_SIZE_MIB,
    )? {
        resources.file_size_mib = n;
    }
    if let Some(n) = check(raw.open_files, "open_files", SANDBOX_MAX_OPEN_FILES)? {
        resources.open_files = n;
    }
    if let Some(n) = check(
        raw.call_memory_mib,
        "call_memory_mib",
        SANDBOX_MAX_CALL_MEMORY_MIB,
    )? {
        resources.call_memory_mib = n;
    }
    if let Some(n) = check(raw.disk_mib, "disk_mib", SANDBOX_MAX_DISK_MIB)? {
        resources.disk_mib = n;
    }
    if let Some(n) = check(raw.disk_files, "disk_files", SANDBOX_MAX_DISK_FILES)? {
        resources.disk_files = n;
    }
    if let Some(n) = check(
        raw.network_connections,
        "network_connections",
        SANDBOX_MAX_NETWORK_CONNECTIONS,
    )? {
        resources.network_connections = u32::try_from(n).unwrap_or(u32::MAX);
    }
    if let Some(n) = check(
        raw.network_up_mib,
        "network_up_mib",
        SANDBOX_MAX_NETWORK_MIB,
    )? {
        resources.network_up_mib = n;
    }
    if let Some(n) = check(
        raw.network_down_mib,
        "network_down_mib",
        SANDBOX_MAX_NETWORK_MIB,
    )? {
        resources.network_down_mib = n;
    }
    Ok(resources)
}

pub(super) fn output_cap(
    value: &Spanned<u64>,
    at: &Located<'_>,
    tool: Option<&str>,
) -> Result<usize, ManifestError> {
    usize::try_from(*value.get_ref())
        .ok()
        .filter(|n| (1..=MAX_OUTPUT_CEILING_BYTES).contains(n))
        .ok_or_else(|| {
            at.error(
                Some(value.span().start),
                tool,
                "max_output_bytes",
                Rule::out_of_range(MAX_OUTPUT_CEILING_BYTES),
            )
        })
}

/// `stderr` and `stderr_tail_bytes`; a tail is at most the tool's output cap, which the reply
/// holds at most.
pub(super) fn stderr_mode(
    raw: &RawTool,
    at: &Located<'_>,
    tool: Option<&str>,
    cap: usize,
) -> Result<StderrMode, ManifestError> {
    let mode = raw.stderr.as_ref().map(|mode| *mode.get_ref());
    let tail = match (&raw.stderr_tail_bytes, mode) {
        (Some(bytes), Some(RawStderr::Tail)) => usize::try_from(*bytes.get_ref())
            .ok()
            .filter(|n| *n <= cap)
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| {
                at.error(
                    Some(bytes.span().start),
                    tool,
                    "stderr_tail_bytes",
                    Rule::StderrTail { cap },
                )
            })?,
        (Some(bytes), _) => {
            return Err(at.error(
                Some(bytes.span().start),
                tool,
                "stderr_tail_bytes",
                Rule::StderrTailWithoutTail,
            ));
        }
        (None, _) => NonZeroUsize::new(STDERR_TAIL_BYTES.min(cap)).unwrap_or(NonZeroUsize::MIN),
    };
    Ok(match mode {
        None | Some(RawStderr::Separate) => StderrMode::Separate,
        Some(RawStderr::Merge) => StderrMode::Merge,
        Some(RawStderr::Tail) => StderrMode::Tail(tail),
        Some(RawStderr::Drop) => StderrMode::Drop,
    })
}

/// The shared store settings of `[limits]` (the URL is never in a manifest: it comes from
/// the environment, as it may hold a password).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct StoreSettings {
    /// `redis_namespace`: the prefix of every key; `None` for the program's default.
    pub namespace: Option<String>,
    /// `redis_unreachable = "local"`: each replica's own limits while Redis is unreachable
    /// (the default is to fail closed).
    pub local_when_unreachable: bool,
    /// `redis_lease_ms`: the expiry of an in-flight lease; `None` for the default.
    pub lease_ttl: Option<Duration>,
}
