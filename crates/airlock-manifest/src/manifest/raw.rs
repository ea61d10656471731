//! The manifest as it is on disk: serde types mirroring the TOML, nothing checked yet.
//!
//! Every table refuses unknown keys, so a misspelt limit is an error, not a silently ignored
//! line. Values that later checks need to point at carry their byte span (`Spanned`) so an
//! error can name the line and column.
//!
//! The same types give `airlock schema` its JSON Schema (`schemars`): a `Spanned<T>` field is
//! described as its `T`, so the schema says what the loader reads, no more and no less.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawManifest {
    #[serde(default)]
    pub(crate) server: RawServer,
    #[serde(default)]
    pub(crate) limits: RawLimits,
    #[serde(default)]
    pub(crate) defaults: RawDefaults,
    #[serde(default, rename = "tool")]
    #[schemars(with = "Vec<RawTool>")]
    pub(crate) tools: Vec<Spanned<RawTool>>,
    #[serde(default, rename = "prompt")]
    #[schemars(with = "Vec<RawPrompt>")]
    pub(crate) prompts: Vec<Spanned<RawPrompt>>,
    #[serde(default, rename = "resource")]
    #[schemars(with = "Vec<RawResource>")]
    pub(crate) resources: Vec<Spanned<RawResource>>,
}

/// One `[[prompt]]`: text a client offers its user, with `{argument}` placeholders.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Vec<RawPromptArgument>,
    pub(crate) messages: Vec<RawPromptMessage>,
}

/// One argument of a `[[prompt]]`: always text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPromptArgument {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) required: bool,
}

/// One message of a `[[prompt]]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPromptMessage {
    pub(crate) role: RawRole,
    pub(crate) text: String,
}

/// Who says a prompt message.
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawRole {
    User,
    Assistant,
}

/// One `[[resource]]`: the regular files under a directory, read-only, by URI.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawResource {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    /// The directory served (`~` and `${VAR}` expanded, relative to the manifest).
    #[schemars(with = "String")]
    pub(crate) root: Spanned<String>,
    /// The URI prefix of its files, such as `docs://`.
    pub(crate) uri: String,
    /// The largest file read, in bytes.
    pub(crate) max_bytes: Option<u64>,
}

/// `[server]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    pub(crate) name: Option<String>,
    pub(crate) version: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) instructions: Option<String>,
    /// Where `airlock serve` serves Prometheus metrics (`--metrics` overrides it).
    #[schemars(with = "Option<String>")]
    pub(crate) metrics: Option<Spanned<String>>,
    /// Where `airlock serve` exports OpenTelemetry traces, an `http://` OTLP endpoint
    /// (`--otlp` overrides it).
    #[schemars(with = "Option<String>")]
    pub(crate) otlp: Option<Spanned<String>>,
}

/// `[limits]`: overrides of the server's limits; absent keys keep the defaults.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    #[schemars(with = "Option<u64>")]
    pub(crate) max_frame_bytes: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_json_depth: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_argument_bytes: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_argument_depth: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_object_keys: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_array_items: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_string_bytes: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_in_flight: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_consecutive_errors: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) tool_timeout_ms: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_output_bytes: Option<Spanned<u64>>,
    #[schemars(with = "Option<RawRate>")]
    pub(crate) tool_call_rate: Option<Spanned<RawRate>>,
    #[schemars(with = "Option<RawRate>")]
    pub(crate) cheap_method_rate: Option<Spanned<RawRate>>,
    /// Where quotas, in-flight caps and legacy HTTP sessions are counted.
    pub(crate) quota_store: Option<RawQuotaStore>,
    /// The prefix of the shared store's keys.
    #[schemars(with = "Option<String>")]
    pub(crate) redis_namespace: Option<Spanned<String>>,
    /// What the server does while the shared store is unreachable.
    pub(crate) redis_unreachable: Option<RawUnreachable>,
    /// Expiry of an in-flight lease in the shared store, in milliseconds.
    #[schemars(with = "Option<u64>")]
    pub(crate) redis_lease_ms: Option<Spanned<u64>>,
}

/// `quota_store`: this process, or Redis shared by every replica (URL from the environment).
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawQuotaStore {
    Local,
    Redis,
}

/// `redis_unreachable`: refuse (`-31503`), or each replica's local limits.
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RawUnreachable {
    FailClosed,
    Local,
}

/// A quota: `{ per_minute = 60, burst = 10 }`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRate {
    pub(crate) per_minute: u64,
    pub(crate) burst: Option<u64>,
}

/// One `[[tool]]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTool {
    #[schemars(with = "String")]
    pub(crate) name: Spanned<String>,
    pub(crate) title: Option<String>,
    #[schemars(with = "String")]
    pub(crate) description: Spanned<String>,
    #[serde(deserialize_with = "argv")]
    #[schemars(with = "Vec<String>")]
    pub(crate) command: Spanned<Vec<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawArg>")]
    pub(crate) args: BTreeMap<String, Spanned<RawArg>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) timeout_ms: Option<Spanned<u64>>,
    /// Whether a client may run the tool as an MCP task (2025-11-25); `"never"` when absent.
    pub(crate) task: Option<RawTask>,
    /// The deadline of the tool's task runs; the server's `task_timeout` (1 h) when absent.
    #[schemars(with = "Option<u64>")]
    pub(crate) task_timeout_ms: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_output_bytes: Option<Spanned<u64>>,
    #[schemars(with = "Option<RawRate>")]
    pub(crate) rate: Option<Spanned<RawRate>>,
    /// OAuth scopes an HTTP caller's access token must all hold to call the tool.
    #[schemars(with = "Option<Vec<String>>")]
    pub(crate) scopes: Option<Spanned<Vec<String>>>,
    #[schemars(with = "Option<String>")]
    pub(crate) workdir: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) env_allow: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(crate) env: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) secret_env: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<Vec<i32>>")]
    pub(crate) success_codes: Option<Spanned<Vec<i32>>>,
    /// What a reply holds of stderr; `"separate"` when absent.
    #[schemars(with = "Option<RawStderr>")]
    pub(crate) stderr: Option<Spanned<RawStderr>>,
    /// With `stderr = "tail"`: how many bytes of it.
    #[schemars(with = "Option<u64>")]
    pub(crate) stderr_tail_bytes: Option<Spanned<u64>>,
    #[serde(default)]
    pub(crate) annotations: RawAnnotations,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) accept_risk: Vec<Spanned<String>>,
    /// `"on"` (the default) or `"off"`.
    #[schemars(with = "Option<SandboxSwitch>")]
    pub(crate) sandbox: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) read: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) write: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) exec: Vec<Spanned<String>>,
    /// Absent: `[defaults]`' value, else no network.
    pub(crate) network: Option<RawNetwork>,
    #[schemars(with = "Option<RawResources>")]
    pub(crate) resources: Option<Spanned<RawResources>>,
}

/// `[defaults]`: values every `[[tool]]` takes unless it sets its own (see `defaults.rs` for
/// how each one merges).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDefaults {
    #[schemars(with = "Option<String>")]
    pub(crate) workdir: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) env_allow: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(crate) env: BTreeMap<String, Spanned<String>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) timeout_ms: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) max_output_bytes: Option<Spanned<u64>>,
    #[schemars(with = "Option<RawStderr>")]
    pub(crate) stderr: Option<Spanned<RawStderr>>,
    #[schemars(with = "Option<u64>")]
    pub(crate) stderr_tail_bytes: Option<Spanned<u64>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) read: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) write: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) exec: Vec<Spanned<String>>,
    pub(crate) network: Option<RawNetwork>,
    #[schemars(with = "Option<RawResources>")]
    pub(crate) resources: Option<Spanned<RawResources>>,
}

/// `sandbox = "…"`, for the schema only: the loader reads a string and names the two words
/// itself when it is neither.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[expect(dead_code, reason = "described by the schema, never built")]
pub(crate) enum SandboxSwitch {
    On,
    Off,
}

/// `task = "…"`: whether a command tool runs as an MCP task when a client asks.
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawTask {
    Never,
    Optional,
    Always,
}

/// `stderr = "…"`: what a command tool's reply holds of its stderr.
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawStderr {
    Merge,
    Separate,
    Tail,
    Drop,
}

/// `resources = { processes = 64, memory_mib = 512, … }`: the sandbox's limits for one call.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawResources {
    pub(crate) processes: Option<u64>,
    pub(crate) memory_mib: Option<u64>,
    pub(crate) cpu_seconds: Option<u64>,
    pub(crate) file_size_mib: Option<u64>,
    pub(crate) open_files: Option<u64>,
    pub(crate) call_memory_mib: Option<u64>,
    pub(crate) disk_mib: Option<u64>,
    pub(crate) disk_files: Option<u64>,
    pub(crate) network_connections: Option<u64>,
    pub(crate) network_up_mib: Option<u64>,
    pub(crate) network_down_mib: Option<u64>,
}

/// `network = false`, `network = true` (any public destination) or `network = ["host:port",
/// "*.example.com:443", "10.0.0.0/8:5432", …]` (exactly those), through airlock's proxy.
#[derive(Clone, Debug, Deserialize, Eq, JsonSchema, PartialEq)]
#[serde(untagged)]
pub(crate) enum RawNetwork {
    Switch(bool),
    Destinations(Vec<String>),
}

impl RawNetwork {
    /// Whether the tool has a network at all.
    pub(crate) fn is_on(&self) -> bool {
        match self {
            Self::Switch(on) => *on,
            Self::Destinations(_) => true,
        }
    }
}

/// `annotations = { … }`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAnnotations {
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
}

/// One argument, by `type`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum RawArg {
    String(RawStringArg),
    Integer(RawIntegerArg),
    Boolean(RawBooleanArg),
    Path(RawPathArg),
    Array(RawArrayArg),
}

/// `type = "string"`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStringArg {
    pub(crate) description: Option<String>,
    pub(crate) max_length: Option<u64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) pattern: Option<String>,
    #[serde(rename = "enum")]
    pub(crate) values: Option<Vec<String>>,
    pub(crate) default: Option<String>,
    pub(crate) required: Option<bool>,
    #[serde(default)]
    pub(crate) allow_leading_dash: bool,
    #[serde(default)]
    pub(crate) stdin: bool,
}

/// `type = "integer"`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIntegerArg {
    pub(crate) description: Option<String>,
    pub(crate) minimum: Option<i64>,
    pub(crate) maximum: Option<i64>,
    pub(crate) default: Option<i64>,
    pub(crate) required: Option<bool>,
}

/// `type = "boolean"`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBooleanArg {
    pub(crate) description: Option<String>,
    pub(crate) flag: Option<String>,
    pub(crate) default: Option<bool>,
}

/// `type = "path"`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPathArg {
    pub(crate) description: Option<String>,
    pub(crate) within: Option<String>,
    pub(crate) must_exist: Option<bool>,
    pub(crate) kind: Option<RawPathKind>,
    pub(crate) default: Option<String>,
    pub(crate) required: Option<bool>,
}

/// What a path argument may name.
#[derive(Clone, Copy, Debug, Deserialize, Eq, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawPathKind {
    File,
    Dir,
    Any,
}

/// `type = "array"`: a list of strings, each one argv element.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawArrayArg {
    pub(crate) description: Option<String>,
    pub(crate) max_items: Option<u64>,
    pub(crate) min_items: Option<u64>,
    pub(crate) item_max_length: Option<u64>,
    pub(crate) item_pattern: Option<String>,
    pub(crate) item_enum: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) allow_leading_dash: bool,
    pub(crate) default: Option<Vec<String>>,
    pub(crate) required: Option<bool>,
}

/// `command`: a list, or a string refused with the list it should have been.
fn argv<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Spanned<Vec<String>>, D::Error> {
    let argv = Spanned::<Argv>::deserialize(deserializer)?;
    let span = argv.span();
    Ok(Spanned::new(span, argv.into_inner().0))
}

/// An argv template as written.
struct Argv(Vec<String>);

impl<'de> Deserialize<'de> for Argv {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ArgvVisitor)
    }
}

struct ArgvVisitor;

impl<'de> serde::de::Visitor<'de> for ArgvVisitor {
    type Value = Argv;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a list: the program, then its arguments")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Argv, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<String>()? {
            items.push(item);
        }
        Ok(Argv(items))
    }

    fn visit_str<E: serde::de::Error>(self, line: &str) -> Result<Argv, E> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let operator = words.iter().any(|word| {
            ["|", "||", "&&", "&", ";", ">", ">>", "<", "2>&1"].contains(word)
                || word.contains("$(")
                || word.contains('`')
        });
        if operator {
            return Err(E::custom(
                "`command` must be a list, not a shell line, and this one needs a shell \
                 (a pipe, a redirection, `&&`, `;` or a substitution): airlock runs no shell: \
                 write a script and name it, command = [\"./script.sh\", …], with exec = [...] \
                 naming the programs it runs",
            ));
        }
        let listed: Vec<String> = words.iter().map(|word| format!("{word:?}")).collect();
        Err(E::custom(format!(
            "`command` must be a list, not a shell line: airlock never runs a shell, so each \
             program and argument is one element, as in command = [{}]",
            listed.join(", ")
        )))
    }
}
