//! The members of `params` that MCP methods read: which ones the reader keeps and how.
//!
//! The strict reader (`json`) knows JSON-RPC's top-level members and nothing of MCP; this
//! module names, for it, the `params` members some method reads (`name`, `cursor`,
//! `protocolVersion`, `arguments`, `_meta`, `capabilities`, `clientInfo`, `requestId`,
//! `uri`, `task`, `taskId`, `inputResponses`, `requestState`) and how each is taken. Every other member is checked like the rest of the frame and
//! dropped; which members a method allows is the method's rule (`dispatch`), through
//! [`Params::has`] and [`Params::only`].

use serde_json::Value;

use crate::json::{KeptParams, ParamsShape, Take, Taken, Text};

/// The shape of MCP's `params`, for the reader: [`Params`] for any lifetime of the frame.
#[derive(Debug, Default)]
pub(crate) struct Mcp;

impl ParamsShape for Mcp {
    type Kept<'a> = Params<'a>;

    fn into_owned<'b>(kept: Params<'_>) -> Params<'b> {
        kept.into_owned()
    }
}

/// The members of a request's or notification's `params` that some method reads, pulled out
/// without allocating for their names: strings borrowed from the frame when they hold no
/// escape, objects and ids as values. Any other member is only noted (its value is checked
/// like the rest of the frame, then dropped): methods that define no such member refuse it.
#[derive(Debug, Default)]
pub struct Params<'a> {
    /// `name` (`tools/call`).
    pub(crate) name: Option<Text<'a>>,
    /// `cursor` (`tools/list`).
    pub(crate) cursor: Option<Text<'a>>,
    /// `protocolVersion` (`initialize`).
    pub(crate) protocol_version: Option<Text<'a>>,
    /// `uri` (`resources/read`).
    pub(crate) uri: Option<Text<'a>>,
    /// `level` (`logging/setLevel`).
    pub(crate) level: Option<Text<'a>>,
    /// `ref` (`completion/complete`).
    pub(crate) reference: Option<Value>,
    /// `argument` (`completion/complete`).
    pub(crate) argument: Option<Value>,
    /// `arguments` (`tools/call`); see [`Params::arguments_out_of_range`].
    pub(crate) arguments: Option<Value>,
    /// `_meta` (any request); a number in it that no `f64` holds reads `null` (every rule
    /// that reads `_meta` refuses a `null` where it expects a value, and ignores the rest).
    pub(crate) meta: Option<Value>,
    /// `capabilities` (`initialize`): which the client declared decides what the server may
    /// ask it (elicitation, sampling); a number no `f64` holds reads `null`.
    pub(crate) capabilities: Option<Value>,
    /// Whether `clientInfo` (`initialize`), when present, is an object.
    pub(crate) client_info_is_object: Option<bool>,
    /// `requestId` (`notifications/cancelled`); `null` if it was a number out of range, which
    /// matches no call.
    pub(crate) request_id: Option<Value>,
    /// `inputResponses` (a 2026-07-28 `tools/call` retried with the client's answers).
    pub(crate) input_responses: Option<Value>,
    /// `requestState` (the state a 2026-07-28 `input_required` result gave the client).
    pub(crate) request_state: Option<Value>,
    /// `task` (a 2025-11-25 task-augmented `tools/call`); a number in it that no `f64`
    /// holds reads `null`.
    pub(crate) task: Option<Value>,
    /// `taskId` (`tasks/get`, `tasks/result`, `tasks/cancel`).
    pub(crate) task_id: Option<Text<'a>>,
    /// Whether `arguments` holds a number no `f64` holds (`1e400`): it is `null` in
    /// [`Params::arguments`], so the arguments must be refused, never used.
    pub(crate) arguments_out_of_range: bool,
    /// Which members are present, as [`ParamKey`] bits.
    present: u32,
}

/// The `params` members some method reads, and one bit for all others.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum ParamKey {
    Name,
    Cursor,
    ProtocolVersion,
    Arguments,
    Meta,
    Capabilities,
    ClientInfo,
    RequestId,
    Uri,
    Ref,
    Argument,
    Level,
    /// `context` (`completion/complete`): noted, not read.
    Context,
    /// `task` (task-augmented calls, 2025-11-25).
    Task,
    /// `taskId` (`tasks/*`, 2025-11-25).
    TaskId,
    /// `inputResponses` (2026-07-28).
    InputResponses,
    /// `requestState` (2026-07-28).
    RequestState,
    /// Any other member (`reason` of a cancellation, or a name no method defines).
    Other,
}

impl ParamKey {
    fn parse(key: &str) -> Self {
        match key {
            "name" => Self::Name,
            "cursor" => Self::Cursor,
            "protocolVersion" => Self::ProtocolVersion,
            "arguments" => Self::Arguments,
            "_meta" => Self::Meta,
            "capabilities" => Self::Capabilities,
            "clientInfo" => Self::ClientInfo,
            "requestId" => Self::RequestId,
            "uri" => Self::Uri,
            "ref" => Self::Ref,
            "level" => Self::Level,
            "argument" => Self::Argument,
            "context" => Self::Context,
            "task" => Self::Task,
            "taskId" => Self::TaskId,
            "inputResponses" => Self::InputResponses,
            "requestState" => Self::RequestState,
            _ => Self::Other,
        }
    }

    fn bit(self) -> u32 {
        match self {
            Self::Name => 1,
            Self::Cursor => 1 << 1,
            Self::ProtocolVersion => 1 << 2,
            Self::Arguments => 1 << 3,
            Self::Meta => 1 << 4,
            Self::Capabilities => 1 << 5,
            Self::ClientInfo => 1 << 6,
            Self::RequestId => 1 << 7,
            Self::Task => 1 << 8,
            Self::Other => 1 << 9,
            Self::Uri => 1 << 10,
            Self::Ref => 1 << 11,
            Self::Argument => 1 << 12,
            Self::Context => 1 << 13,
            Self::Level => 1 << 14,
            Self::InputResponses => 1 << 15,
            Self::RequestState => 1 << 16,
            Self::TaskId => 1 << 17,
        }
    }
}

impl Params<'_> {
    /// The same members, owning their text.
    pub(crate) fn into_owned<'b>(self) -> Params<'b> {
        Params {
            name: self.name.map(Text::into_owned),
            cursor: self.cursor.map(Text::into_owned),
            protocol_version: self.protocol_version.map(Text::into_owned),
            uri: self.uri.map(Text::into_owned),
            level: self.level.map(Text::into_owned),
            reference: self.reference,
            argument: self.argument,
            arguments: self.arguments,
            meta: self.meta,
            capabilities: self.capabilities,
            client_info_is_object: self.client_info_is_object,
            request_id: self.request_id,
            input_responses: self.input_responses,
            request_state: self.request_state,
            task: self.task,
            task_id: self.task_id.map(Text::into_owned),
            arguments_out_of_range: self.arguments_out_of_range,
            present: self.present,
        }
    }

    /// Whether `key` is present.
    pub(crate) fn has(&self, key: ParamKey) -> bool {
        self.present & key.bit() != 0
    }

    /// Whether every member present is one of `allowed`.
    pub(crate) fn only(&self, allowed: &[ParamKey]) -> bool {
        let allowed = allowed.iter().fold(0, |bits, key| bits | key.bit());
        self.present & !allowed == 0
    }
}

impl<'a> KeptParams<'a> for Params<'a> {
    type Member = ParamKey;

    fn member(name: &str) -> Option<(ParamKey, Take)> {
        let key = ParamKey::parse(name);
        let take = match key {
            ParamKey::Name
            | ParamKey::Cursor
            | ParamKey::ProtocolVersion
            | ParamKey::Uri
            | ParamKey::Level
            | ParamKey::TaskId => Take::Text,
            ParamKey::Arguments => Take::Flagged,
            ParamKey::Meta
            | ParamKey::RequestId
            | ParamKey::Ref
            | ParamKey::Argument
            | ParamKey::Capabilities
            | ParamKey::InputResponses
            | ParamKey::RequestState
            | ParamKey::Task => Take::Value,
            ParamKey::Context => Take::Skip,
            ParamKey::ClientInfo => Take::IsObject,
            ParamKey::Other => return None,
        };
        Some((key, take))
    }

    fn keep(&mut self, key: ParamKey, taken: Taken<'a>) -> bool {
        let repeated = self.has(key);
        self.present |= key.bit();
        match (key, taken) {
            (ParamKey::Name, Taken::Text(text)) => self.name = Some(text),
            (ParamKey::Cursor, Taken::Text(text)) => self.cursor = Some(text),
            (ParamKey::ProtocolVersion, Taken::Text(text)) => self.protocol_version = Some(text),
            (ParamKey::Uri, Taken::Text(text)) => self.uri = Some(text),
            (ParamKey::Level, Taken::Text(text)) => self.level = Some(text),
            (ParamKey::Arguments, Taken::Flagged(value, out_of_range)) => {
                self.arguments = Some(value);
                self.arguments_out_of_range |= out_of_range;
            }
            (ParamKey::Meta, Taken::Value(value)) => self.meta = Some(value),
            (ParamKey::RequestId, Taken::Value(value)) => self.request_id = Some(value),
            (ParamKey::Ref, Taken::Value(value)) => self.reference = Some(value),
            (ParamKey::Argument, Taken::Value(value)) => self.argument = Some(value),
            (ParamKey::Capabilities, Taken::Value(value)) => self.capabilities = Some(value),
            (ParamKey::InputResponses, Taken::Value(value)) => self.input_responses = Some(value),
            (ParamKey::RequestState, Taken::Value(value)) => self.request_state = Some(value),
            (ParamKey::Task, Taken::Value(value)) => self.task = Some(value),
            (ParamKey::TaskId, Taken::Text(text)) => self.task_id = Some(text),
            (ParamKey::ClientInfo, Taken::IsObject(object)) => {
                self.client_info_is_object = Some(object);
            }
            // `context` is only noted; a taking `member` did not ask for cannot come back.
            _ => {}
        }
        repeated
    }

    fn other(&mut self) {
        self.present |= ParamKey::Other.bit();
    }
}
