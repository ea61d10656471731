//! Multi round-trip requests (2026-07-28): a modern call that needs the client's input ends
//! with an `input_required` result naming what it asks (`inputRequests`), and the client
//! retries the same call, with a new id, adding the answers (`inputResponses`) and the state
//! it was given (`requestState`). That era has no server-to-client requests.
//!
//! A tool asks the same way in both eras ([`CallContext::elicit`], [`CallContext::sample`],
//! [`CallContext::list_roots`]). In a modern call each question either finds its answer (in
//! this round's `inputResponses`, or carried by the state from an earlier round) or is
//! noted, and waits forever: once the handler's future is pending with a question noted, the
//! call ends with every question noted in that step, and the handler is dropped. The retry
//! runs the handler again from the start, and this time its questions find their answers.
//! A question's key is the name the tool gave it, else its place in the run (`q1`, `q2`, …).
//!
//! The state is the server's: the answers taken so far, the round's number, the call it
//! belongs to (method, tool and a digest of the arguments) and when it expires, signed with
//! HMAC-SHA-256 under a key only the server holds. A state that fails the signature, belongs
//! to another call or has expired refuses the request (`-32602`) before the tool runs. It is
//! signed, not encrypted: it carries the user's answers back to the client that gave them.
//!
//! The answers are the client's: each is checked against its question as the tool asks it
//! (the checks a legacy answer passes), and one that does not fit refuses the request
//! (`-32602`, nothing of it echoed). Answers to questions the tool does not ask are ignored.
//! A question of a capability the client did not declare ends the call with `-32021`.
//!
//! [`CallContext::elicit`]: crate::CallContext::elicit
//! [`CallContext::sample`]: crate::CallContext::sample
//! [`CallContext::list_roots`]: crate::CallContext::list_roots

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac_sha256::{HMAC, Hash};
use secrecy::{ExposeSecret, SecretSlice};
use serde_json::{Map, Value};

use crate::asking::{Answer, AskError, ClientCan, Question};
use crate::error::{Capability, McpError};
use crate::limits::{
    MAX_CARRIED_ANSWER_BYTES, MAX_INPUT_REQUESTS, MAX_INPUT_RESPONSES, MAX_INPUT_ROUNDS,
    MAX_REQUEST_STATE_BYTES, REQUEST_STATE_TTL,
};

/// The version of the state's payload, so a format change refuses old states.
const STATE_FORMAT: u64 = 1;

/// The key that signs request states. Replicas that serve one deployment share one
/// ([`ServerBuilder::request_state_key`](crate::ServerBuilder::request_state_key)); by
/// default each server draws its own at start.
pub(crate) struct StateKey(SecretSlice<u8>);

impl StateKey {
    /// A key from the operating system's random source.
    pub(crate) fn random() -> Result<Self, getrandom::Error> {
        let mut bytes = vec![0_u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(Self(SecretSlice::from(bytes)))
    }

    /// A key of the given bytes.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Self {
        Self(SecretSlice::from(bytes.to_vec()))
    }

    /// An HMAC-SHA-256 under this key, ready for bytes (HMAC takes a key of any length).
    fn mac(&self) -> HMAC {
        HMAC::new(self.0.expose_secret())
    }
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// The round of one modern call: what the client sent for it, and what its handler asks.
#[derive(Debug)]
pub(crate) struct Round {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    key: Arc<StateKey>,
    binding: [u8; 32],
    /// Rounds before this one.
    number: u64,
    can: ClientCan,
    /// Answers of earlier rounds, from the signed state (so once checked).
    carried: Map<String, Value>,
    /// This round's `inputResponses`: the client's, unchecked.
    given: Map<String, Value>,
    /// Answers of `given` that passed their question, for the next state.
    accepted: Map<String, Value>,
    /// Bytes of the answers the next state would carry.
    kept_bytes: usize,
    /// Questions without an answer: key → `{method, params}`.
    asked: Map<String, Value>,
    /// Questions asked so far in this run (for their default keys).
    count: u64,
    refused: Option<McpError>,
    /// When the round opened: a state it seals is issued then.
    now: u64,
}

/// How a call's round ended, when it did not end with the handler's output.
#[derive(Debug)]
pub(crate) struct RoundEnd(pub(crate) Ending);

#[derive(Debug)]
pub(crate) enum Ending {
    /// Questions to answer, and the state to send back with the answers.
    InputRequired {
        requests: Map<String, Value>,
        state: String,
    },
    /// The request is refused: an answer did not fit its question, or a question needs a
    /// capability the client did not declare.
    Refused(McpError),
}

/// What a question gets from the round.
pub(crate) enum Step {
    /// Its answer, checked (or why there is none).
    Answered(Result<Answer, AskError>),
    /// Nothing yet: the call ends asking it.
    Wait,
}

impl Round {
    /// The round of a call of `method` for `name` with `arguments`, from the client's
    /// `inputResponses` and `requestState`, for a client that declared `can`.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidParams`] when `inputResponses` is not an object or has more than
    /// [`MAX_INPUT_RESPONSES`] members, or `requestState` is not a string;
    /// [`McpError::InvalidRequestState`] when the state fails its signature, is of another
    /// call or has expired.
    pub(crate) fn open(
        key: &Arc<StateKey>,
        call: (&str, &str, &Map<String, Value>),
        can: ClientCan,
        responses: Option<Value>,
        state: Option<&Value>,
    ) -> Result<Self, McpError> {
        Self::open_at(key, call, can, responses, state, now_secs())
    }

    /// [`Round::open`] at `now` (seconds since the epoch), which is also when a state it
    /// seals is issued.
    pub(crate) fn open_at(
        key: &Arc<StateKey>,
        call: (&str, &str, &Map<String, Value>),
        can: ClientCan,
        responses: Option<Value>,
        state: Option<&Value>,
        now: u64,
    ) -> Result<Self, McpError> {
        let given = match responses {
            None => Map::new(),
            Some(Value::Object(given)) if given.len() <= MAX_INPUT_RESPONSES => given,
            Some(Value::Object(_)) => {
                return Err(McpError::InvalidParams(
                    "inputResponses has more members than this server reads",
                ));
            }
            Some(_) => {
                return Err(McpError::InvalidParams("inputResponses must be an object"));
            }
        };
        let binding = binding(call);
        let (number, carried) = match state {
            None => (0, Map::new()),
            Some(Value::String(state)) => open_state(key, state, &binding, now)?,
            Some(_) => {
                return Err(McpError::InvalidParams("requestState must be a string"));
            }
        };
        let kept_bytes = carried.values().map(value_bytes).sum();
        Ok(Self {
            inner: Mutex::new(Inner {
                key: Arc::clone(key),
                binding,
                number,
                can,
                carried,
                given,
                accepted: Map::new(),
                kept_bytes,
                asked: Map::new(),
                count: 0,
                refused: None,
                now,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A handler that panicked while holding the lock left nothing half-written here that
        // matters: the call is answered -32603 either way.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes a question the handler asks, under `named` or its place in the run.
    pub(crate) fn ask(&self, question: &Question, named: Option<&str>) -> Step {
        let mut inner = self.lock();
        if inner.refused.is_some() {
            return Step::Wait;
        }
        inner.count = inner.count.saturating_add(1);
        let key = match named {
            Some(name) => name.to_owned(),
            None => format!("q{}", inner.count),
        };
        if let Some(carried) = inner.carried.get(&key) {
            // Checked when it was given; checked again against the question as asked now.
            return Step::Answered(question.check_value(carried));
        }
        if let Some(given) = inner.given.get(&key).cloned() {
            return match question.check_value(&given) {
                Ok(answer) => {
                    let bytes = value_bytes(&given);
                    if inner.kept_bytes.saturating_add(bytes) > MAX_CARRIED_ANSWER_BYTES {
                        return Step::Answered(Err(AskError::TooLarge));
                    }
                    inner.kept_bytes = inner.kept_bytes.saturating_add(bytes);
                    inner.accepted.insert(key, given);
                    Step::Answered(Ok(answer))
                }
                Err(_) => {
                    inner.refused = Some(McpError::InvalidInputResponse);
                    Step::Wait
                }
            };
        }
        let capability = question.capability();
        if !inner.can.declares(capability) {
            inner.refused = Some(McpError::MissingClientCapability(capability));
            return Step::Wait;
        }
        if inner.number >= MAX_INPUT_ROUNDS
            || (inner.asked.len() >= MAX_INPUT_REQUESTS && !inner.asked.contains_key(&key))
        {
            return Step::Answered(Err(AskError::Busy));
        }
        let request = serde_json::json!({
            "method": question.method(),
            "params": question.params(),
        });
        inner.asked.insert(key, request);
        Step::Wait
    }

    /// How the round ends, if the handler, pending now, waits on it: refused, or asking the
    /// questions noted, with the state to send back. `None` when it waits on something else.
    pub(crate) fn end(&self) -> Option<RoundEnd> {
        let mut inner = self.lock();
        if let Some(error) = inner.refused.take() {
            return Some(RoundEnd(Ending::Refused(error)));
        }
        if inner.asked.is_empty() {
            return None;
        }
        let requests = std::mem::take(&mut inner.asked);
        let mut answers = std::mem::take(&mut inner.carried);
        answers.append(&mut inner.accepted);
        let ending = match seal(
            &inner.key,
            &inner.binding,
            inner.number.saturating_add(1),
            answers,
            inner.now,
        ) {
            Some(state) => Ending::InputRequired { requests, state },
            None => Ending::Refused(McpError::Internal("request state over its bound")),
        };
        Some(RoundEnd(ending))
    }

    /// Rounds before this one (0 for a call the client sent no state with).
    pub(crate) fn number(&self) -> u64 {
        self.lock().number
    }

    /// Whether the client declared what `capability` needs.
    pub(crate) fn declares(&self, capability: Capability) -> bool {
        self.lock().can.declares(capability)
    }
}

/// The digest naming one call: its method, its name and its arguments (serialised with
/// their keys in order, so the same arguments give the same digest).
fn binding((method, name, arguments): (&str, &str, &Map<String, Value>)) -> [u8; 32] {
    let mut digest = Hash::new();
    for part in [method.as_bytes(), name.as_bytes()] {
        digest.update(u64::try_from(part.len()).unwrap_or(u64::MAX).to_be_bytes());
        digest.update(part);
    }
    let arguments = serde_json::to_vec(arguments).unwrap_or_default();
    digest.update(&arguments);
    digest.finalize()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn value_bytes(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len())
}

/// The signed state of the next round: `base64url(payload) "." base64url(tag)`; `None` when
/// it would be over [`MAX_REQUEST_STATE_BYTES`].
fn seal(
    key: &StateKey,
    binding: &[u8; 32],
    number: u64,
    answers: Map<String, Value>,
    now: u64,
) -> Option<String> {
    let payload = serde_json::json!({
        "v": STATE_FORMAT,
        "b": URL_SAFE_NO_PAD.encode(binding),
        "r": number,
        "x": now.saturating_add(REQUEST_STATE_TTL.as_secs()),
        "a": answers,
    });
    let payload = serde_json::to_vec(&payload).ok()?;
    let mut mac = key.mac();
    mac.update(&payload);
    let tag = mac.finalize();
    let state = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        URL_SAFE_NO_PAD.encode(tag)
    );
    (state.len() <= MAX_REQUEST_STATE_BYTES).then_some(state)
}

/// The round's number and the answers a state carries, if it is ours, of this call, and not
/// expired. The payload is parsed only after its signature is verified.
fn open_state(
    key: &StateKey,
    state: &str,
    binding: &[u8; 32],
    now: u64,
) -> Result<(u64, Map<String, Value>), McpError> {
    let invalid = || McpError::InvalidRequestState;
    if state.len() > MAX_REQUEST_STATE_BYTES {
        return Err(invalid());
    }
    let (payload, tag) = state.split_once('.').ok_or_else(invalid)?;
    let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
    let tag: [u8; 32] = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| invalid())?
        .try_into()
        .map_err(|_| invalid())?;
    let mut mac = key.mac();
    mac.update(&payload);
    // Compared in constant time.
    if !mac.finalize_verify(&tag) {
        return Err(invalid());
    }
    let Ok(Value::Object(mut payload)) = serde_json::from_slice::<Value>(&payload) else {
        return Err(invalid());
    };
    let format = payload.get("v").and_then(Value::as_u64);
    let bound = payload.get("b").and_then(Value::as_str);
    let number = payload.get("r").and_then(Value::as_u64);
    let expires = payload.get("x").and_then(Value::as_u64);
    let ours = URL_SAFE_NO_PAD.encode(binding);
    let (Some(STATE_FORMAT), Some(bound), Some(number), Some(expires)) =
        (format, bound, number, expires)
    else {
        return Err(invalid());
    };
    if bound != ours || expires < now || number > MAX_INPUT_ROUNDS {
        return Err(invalid());
    }
    let Some(Value::Object(answers)) = payload.remove("a") else {
        return Err(invalid());
    };
    Ok((number, answers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asking::{Elicitation, Elicited, Sampling, is_default_key, is_key};
    use crate::limits::MAX_INPUT_KEY_BYTES;
    use serde_json::json;

    fn key() -> Arc<StateKey> {
        Arc::new(StateKey::from_bytes(b"test key of this module, 32 byte"))
    }

    fn can_all() -> ClientCan {
        ClientCan {
            elicit: true,
            sample: true,
            roots: true,
        }
    }

    /// The digest and the state are the standard SHA-256 and HMAC-SHA-256 of their bytes, as
    /// any other implementation computes them (these figures are Python's `hashlib` and
    /// `hmac`), so a replica of another build opens this build's states.
    #[test]
    fn the_binding_and_the_seal_are_standard_sha256_and_hmac_sha256() {
        let arguments = json!({"text": "hi"}).as_object().unwrap().clone();
        let digest = binding(("tools/call", "echo", &arguments));
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(
            hex,
            "5a0bb6f5c4470d1f4431687d3ec1d4d22c192369932cbfd977d30000eb3f27ad"
        );
        let answers = json!({"q1": "yes"}).as_object().unwrap().clone();
        let state = seal(&key(), &[7; 32], 2, answers.clone(), 1_000_000).unwrap();
        assert_eq!(
            state,
            "eyJhIjp7InExIjoieWVzIn0sImIiOiJCd2NIQndjSEJ3Y0hCd2NIQndjSEJ3Y0hCd2NIQndjSEJ3Y0hCd2NIQndjIiwiciI6MiwidiI6MSwieCI6MTAwMDYwMH0.IK930H6jcq6hVgiQCYmPsvZfutBHNS2Y_IkqYKwZgaQ"
        );
        assert_eq!(
            open_state(&key(), &state, &[7; 32], 1_000_000).unwrap(),
            (2, answers)
        );
    }

    fn name_form() -> Question {
        Question::Elicit(
            Elicitation::new(
                "What is your name?",
                json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}, "required": ["name"]}),
            )
            .unwrap(),
        )
    }

    fn args() -> Map<String, Value> {
        json!({"a": 1}).as_object().unwrap().clone()
    }

    fn open(responses: Option<Value>, state: Option<&str>) -> Result<Round, McpError> {
        Round::open(
            &key(),
            ("tools/call", "t", &args()),
            can_all(),
            responses,
            state.map(Value::from).as_ref(),
        )
    }

    fn input_required(round: &Round) -> (Map<String, Value>, String) {
        match round.end() {
            Some(RoundEnd(Ending::InputRequired { requests, state })) => (requests, state),
            other => panic!("expected input required, got {other:?}"),
        }
    }

    fn refused(round: &Round) -> McpError {
        match round.end() {
            Some(RoundEnd(Ending::Refused(error))) => error,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn accepted(step: Step) -> Map<String, Value> {
        match step {
            Step::Answered(Ok(Answer::Elicited(Elicited::Accepted(content)))) => content,
            Step::Answered(other) => panic!("expected an accepted form, got {other:?}"),
            Step::Wait => panic!("expected an answer, got a wait"),
        }
    }

    #[test]
    fn a_question_without_an_answer_ends_the_round_with_its_request_and_a_state() {
        let round = open(None, None).unwrap();
        assert!(matches!(
            round.ask(&name_form(), Some("user_name")),
            Step::Wait
        ));
        let (requests, state) = input_required(&round);
        assert_eq!(requests["user_name"]["method"], "elicitation/create");
        assert_eq!(
            requests["user_name"]["params"]["message"],
            "What is your name?"
        );
        // The retry with the answer and the state: the question finds its answer.
        let answer = json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
        let round = open(Some(answer), Some(&state)).unwrap();
        assert_eq!(round.number(), 1);
        let content = accepted(round.ask(&name_form(), Some("user_name")));
        assert_eq!(content["name"], "Alice");
        assert!(round.end().is_none());
    }

    #[test]
    fn answers_are_carried_by_the_state_into_later_rounds() {
        let round = open(None, None).unwrap();
        let _ = round.ask(&name_form(), None);
        let (requests, state) = input_required(&round);
        assert!(requests.contains_key("q1"));
        let answer = json!({"q1": {"action": "accept", "content": {"name": "Bob"}}});
        let round = open(Some(answer), Some(&state)).unwrap();
        let _ = accepted(round.ask(&name_form(), None));
        let sampling = Question::Sample(Sampling::new("colour?"));
        assert!(matches!(round.ask(&sampling, None), Step::Wait));
        let (requests, state_2) = input_required(&round);
        assert_eq!(requests["q2"]["method"], "sampling/createMessage");
        assert_ne!(state, state_2);
        // Round 3 carries only q2's answer; q1's comes from the state.
        let answer = json!({"q2": {"role": "assistant", "content": {"type": "text", "text": "blue"}, "model": "m"}});
        let round = open(Some(answer), Some(&state_2)).unwrap();
        assert_eq!(round.number(), 2);
        assert_eq!(accepted(round.ask(&name_form(), None))["name"], "Bob");
        assert!(matches!(
            round.ask(&sampling, None),
            Step::Answered(Ok(Answer::Sampled(_)))
        ));
        assert!(round.end().is_none());
    }

    #[test]
    fn a_state_that_is_tampered_with_of_another_call_or_expired_is_refused() {
        let round = open(None, None).unwrap();
        let _ = round.ask(&name_form(), None);
        let (_, state) = input_required(&round);
        let tampered = [
            format!("{state}-TAMPERED"),
            format!("x{state}"),
            state.replacen('.', "..", 1),
            String::new(),
            ".".to_owned(),
            "a".repeat(MAX_REQUEST_STATE_BYTES + 1),
        ];
        for bad in &tampered {
            assert!(
                matches!(open(None, Some(bad)), Err(McpError::InvalidRequestState)),
                "{bad:.40}"
            );
        }
        // A payload of our own, re-signed under another key.
        let other = StateKey::from_bytes(b"another key");
        let forged = seal(
            &other,
            &binding(("tools/call", "t", &args())),
            1,
            Map::new(),
            now_secs(),
        )
        .unwrap();
        assert!(matches!(
            open(None, Some(&forged)),
            Err(McpError::InvalidRequestState)
        ));
        // Another tool, other arguments.
        let elsewhere = Round::open(
            &key(),
            ("tools/call", "other", &args()),
            can_all(),
            None,
            Some(&Value::from(state.as_str())),
        );
        assert!(matches!(elsewhere, Err(McpError::InvalidRequestState)));
        let changed = json!({"a": 2}).as_object().unwrap().clone();
        let changed = Round::open(
            &key(),
            ("tools/call", "t", &changed),
            can_all(),
            None,
            Some(&Value::from(state.as_str())),
        );
        assert!(matches!(changed, Err(McpError::InvalidRequestState)));
        // Expired: sealed long ago.
        let old = seal(
            &key(),
            &binding(("tools/call", "t", &args())),
            1,
            Map::new(),
            1,
        )
        .unwrap();
        assert!(matches!(
            open(None, Some(&old)),
            Err(McpError::InvalidRequestState)
        ));
        // Not a string.
        let number = Round::open(
            &key(),
            ("tools/call", "t", &args()),
            can_all(),
            None,
            Some(&json!(5)),
        );
        assert!(matches!(number, Err(McpError::InvalidParams(_))));
    }

    #[test]
    fn an_answer_that_does_not_fit_refuses_the_request() {
        for bad in [
            json!(12345),
            json!(null),
            json!({"action": "accept", "content": {"name": 5}}),
            json!({"action": "accept", "content": {"name": "x".repeat(21)}}),
            json!({"action": "accept", "content": {"other": "x"}}),
            json!({"action": "accept"}),
            json!({"action": "maybe"}),
        ] {
            let round = open(Some(json!({"user_name": bad})), None).unwrap();
            assert!(matches!(
                round.ask(&name_form(), Some("user_name")),
                Step::Wait
            ));
            assert!(matches!(refused(&round), McpError::InvalidInputResponse));
        }
        for bad in [json!(null), json!([]), json!("x")] {
            assert!(matches!(
                open(Some(bad), None),
                Err(McpError::InvalidParams(_))
            ));
        }
        let many: Map<String, Value> = (0..=MAX_INPUT_RESPONSES)
            .map(|n| (format!("k{n}"), json!({})))
            .collect();
        assert!(matches!(
            open(Some(Value::Object(many)), None),
            Err(McpError::InvalidParams(_))
        ));
    }

    #[test]
    fn extra_answers_are_ignored_and_declined_forms_are_answers() {
        let answers = json!({
            "user_name": {"action": "decline"},
            "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
        });
        let round = open(Some(answers), None).unwrap();
        assert!(matches!(
            round.ask(&name_form(), Some("user_name")),
            Step::Answered(Ok(Answer::Elicited(Elicited::Declined)))
        ));
        assert!(round.end().is_none());
    }

    #[test]
    fn a_question_the_client_did_not_declare_is_minus_32021() {
        let round = Round::open(
            &key(),
            ("tools/call", "t", &args()),
            ClientCan {
                sample: true,
                ..ClientCan::default()
            },
            None,
            None,
        )
        .unwrap();
        assert!(round.declares(Capability::Sampling));
        assert!(!round.declares(Capability::Elicitation));
        assert!(matches!(round.ask(&name_form(), None), Step::Wait));
        assert!(matches!(
            refused(&round),
            McpError::MissingClientCapability(Capability::Elicitation)
        ));
    }

    #[test]
    fn questions_per_round_are_bounded() {
        let round = open(None, None).unwrap();
        for _ in 0..MAX_INPUT_REQUESTS {
            assert!(matches!(round.ask(&name_form(), None), Step::Wait));
        }
        assert!(matches!(
            round.ask(&name_form(), None),
            Step::Answered(Err(AskError::Busy))
        ));
        let (requests, _) = input_required(&round);
        assert_eq!(requests.len(), MAX_INPUT_REQUESTS);
    }

    #[test]
    fn a_tool_cannot_name_a_question_as_an_unnamed_one_is_named() {
        for taken in ["q1", "q2", "q10", "q007"] {
            assert!(is_default_key(taken));
        }
        for free in ["q", "qa", "q1a", "Q1", "user_name"] {
            assert!(!is_default_key(free), "{free}");
        }
    }

    #[test]
    fn keys_are_short_plain_names() {
        assert!(is_key("user_name"));
        assert!(is_key("step-1.a"));
        for bad in [
            "",
            "a b",
            "a\"b",
            "ключ",
            &"k".repeat(MAX_INPUT_KEY_BYTES + 1),
        ] {
            assert!(!is_key(bad), "{bad}");
        }
    }
}
