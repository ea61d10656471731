//! The bytes of each hostile input. Large ones are described, not built: the writer streams
//! repeated units, so a 512 MiB line never exists in the auditor's memory.

use std::time::Duration;

use super::super::probe::{CALL_TAIL, Probe};
use super::super::session::initialize_params;
use super::super::target::Op;
use super::Input;

const PING_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"audit":"#;
const PING_TAIL: &[u8] = b"}}}\n";

/// One line of text (a newline is added) carrying id 7.
pub(super) fn text(line: &str) -> Input {
    bytes_line(line.as_bytes(), Some("7"))
}

/// One line of text carrying no id that could be answered.
pub(super) fn text_without_id(line: &str) -> Input {
    bytes_line(line.as_bytes(), None)
}

/// One line of text carrying the id `id` (JSON text).
pub(super) fn text_with_id(line: &str, id: &str) -> Input {
    bytes_line(line.as_bytes(), Some(id))
}

pub(super) fn bytes_line(line: &[u8], id: Option<&str>) -> Input {
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    Input {
        ops: vec![Op::Bytes(bytes)],
        id: id.map(str::to_owned),
    }
}

fn seven() -> Option<String> {
    Some("7".to_owned())
}

/// A ping (id 7) whose `params._meta.audit` is `payload` (JSON text, maybe invalid).
pub(super) fn ping_with(payload: &str) -> Input {
    ping_with_bytes(payload.as_bytes())
}

pub(super) fn ping_with_bytes(payload: &[u8]) -> Input {
    let mut line = PING_HEAD.to_vec();
    line.extend_from_slice(payload);
    line.extend_from_slice(PING_TAIL);
    Input {
        ops: vec![Op::Bytes(line)],
        id: seven(),
    }
}

/// A ping whose payload is `open` × `depth`, `1`, `close` × `depth`, streamed.
pub(super) fn nested(open: &[u8], close: &[u8], depth: u64) -> Input {
    Input {
        ops: vec![
            Op::Bytes(PING_HEAD.to_vec()),
            Op::Repeat {
                unit: open.to_vec(),
                count: depth,
            },
            Op::Bytes(b"1".to_vec()),
            Op::Repeat {
                unit: close.to_vec(),
                count: depth,
            },
            Op::Bytes(PING_TAIL.to_vec()),
        ],
        id: seven(),
    }
}

pub(super) fn unclosed(depth: u64) -> Input {
    Input {
        ops: vec![
            Op::Bytes(PING_HEAD.to_vec()),
            Op::Repeat {
                unit: b"[".to_vec(),
                count: depth,
            },
            Op::Bytes(b"\n".to_vec()),
        ],
        id: None,
    }
}

pub(super) fn nested_id(depth: u64) -> Input {
    Input {
        ops: vec![
            Op::Bytes(br#"{"jsonrpc":"2.0","method":"ping","id":"#.to_vec()),
            Op::Repeat {
                unit: b"[".to_vec(),
                count: depth,
            },
            Op::Repeat {
                unit: b"]".to_vec(),
                count: depth,
            },
            Op::Bytes(b"}\n".to_vec()),
        ],
        id: None,
    }
}

pub(super) fn nested_arguments(probe: &Probe, depth: u64) -> Input {
    let mut head = probe.call_head("7");
    head.extend_from_slice(br#"{"audit":"#);
    Input {
        ops: vec![
            Op::Bytes(head),
            Op::Repeat {
                unit: b"[".to_vec(),
                count: depth,
            },
            Op::Repeat {
                unit: b"]".to_vec(),
                count: depth,
            },
            Op::Bytes([b"}".as_slice(), CALL_TAIL].concat()),
        ],
        id: seven(),
    }
}

pub(super) fn big_string_ping(bytes: u64) -> Input {
    Input {
        ops: vec![
            Op::Bytes([PING_HEAD, b"\""].concat()),
            Op::Repeat {
                unit: b"a".to_vec(),
                count: bytes,
            },
            Op::Bytes([b"\"".as_slice(), PING_TAIL].concat()),
        ],
        id: seven(),
    }
}

pub(super) fn junk(bytes: u64) -> Input {
    Input {
        ops: vec![
            Op::Repeat {
                unit: b"a".to_vec(),
                count: bytes,
            },
            Op::Bytes(b"\n".to_vec()),
        ],
        id: None,
    }
}

pub(super) fn big_array(items: u64) -> Input {
    Input {
        ops: vec![
            Op::Bytes([PING_HEAD, b"["].concat()),
            Op::Repeat {
                unit: b"0,".to_vec(),
                count: items.saturating_sub(1),
            },
            Op::Bytes([b"0]".as_slice(), PING_TAIL].concat()),
        ],
        id: seven(),
    }
}

/// A ping whose payload is `prefix` then `count` digits (all 1s, a final 1 for fractions).
pub(super) fn digits(prefix: &str, count: u64) -> Input {
    let unit = if prefix.is_empty() {
        b"1".to_vec()
    } else {
        b"0".to_vec()
    };
    Input {
        ops: vec![
            Op::Bytes([PING_HEAD, prefix.as_bytes()].concat()),
            Op::Repeat {
                unit,
                count: count.saturating_sub(1),
            },
            Op::Bytes([b"1".as_slice(), PING_TAIL].concat()),
        ],
        id: seven(),
    }
}

pub(super) fn digit_id(count: u64) -> Input {
    Input {
        ops: vec![
            Op::Bytes(br#"{"jsonrpc":"2.0","method":"ping","id":"#.to_vec()),
            Op::Repeat {
                unit: b"9".to_vec(),
                count,
            },
            Op::Bytes(b"}\n".to_vec()),
        ],
        id: Some("9".repeat(usize::try_from(count).unwrap_or(0))),
    }
}

pub(super) fn long_string_id(bytes: u64) -> Input {
    let id = format!("\"{}\"", "x".repeat(usize::try_from(bytes).unwrap_or(0)));
    let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    bytes_line(line.as_bytes(), Some(&id))
}

pub(super) fn long_method() -> Input {
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"{}"}}"#,
        "a".repeat(100_000)
    );
    bytes_line(line.as_bytes(), Some("7"))
}

pub(super) fn long_tool_name() -> Input {
    let probe = Probe {
        tool: Some("a".repeat(100_000)),
        ..Probe::none()
    };
    Input {
        ops: vec![Op::Bytes(probe.call_line("7", "{}"))],
        id: seven(),
    }
}

pub(super) fn duplicate_tool_name(probe: &Probe) -> Input {
    let name = serde_json::Value::String(probe.name().to_owned()).to_string();
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{}","name":{name},"arguments":{}}}}}"#,
        super::super::probe::UNKNOWN_TOOL,
        probe.arguments
    );
    bytes_line(line.as_bytes(), Some("7"))
}

/// A valid call of the probe tool, id 7.
pub(super) fn valid_call(probe: &Probe) -> Input {
    Input {
        ops: vec![Op::Bytes(probe.valid_call("7"))],
        id: seven(),
    }
}

/// A call of a tool that cannot exist, id 7.
pub(super) fn unknown_tool_call() -> Input {
    valid_call(&Probe::none())
}

pub(super) fn call_with(probe: &Probe, arguments: &str) -> Input {
    Input {
        ops: vec![Op::Bytes(probe.call_line("7", arguments))],
        id: seven(),
    }
}

pub(super) fn many_keys(probe: &Probe, keys: u64) -> Input {
    let mut arguments = String::from("{");
    for key in 0..keys {
        if key > 0 {
            arguments.push(',');
        }
        arguments.push_str(&format!("\"k{key}\":0"));
    }
    arguments.push('}');
    call_with(probe, &arguments)
}

pub(super) fn big_string_call(probe: &Probe, bytes: u64) -> Input {
    let mut head = probe.call_head("7");
    let key = serde_json::Value::String(probe.string_key.clone()).to_string();
    head.extend_from_slice(format!("{{{key}:\"").as_bytes());
    Input {
        ops: vec![
            Op::Bytes(head),
            Op::Repeat {
                unit: b"a".to_vec(),
                count: bytes,
            },
            Op::Bytes([b"\"}".as_slice(), CALL_TAIL].concat()),
        ],
        id: seven(),
    }
}

pub(super) fn big_batch(count: u64) -> Input {
    let mut line = Vec::from(*b"[");
    for id in 1..=count {
        if id > 1 {
            line.push(b',');
        }
        line.extend_from_slice(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes(),
        );
    }
    line.extend_from_slice(b"]\n");
    Input {
        ops: vec![Op::Bytes(line)],
        id: None,
    }
}

pub(super) fn utf16_ping() -> Input {
    let mut bytes = vec![0xff, 0xfe];
    for unit in r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes.push(b'\n');
    Input {
        ops: vec![Op::Bytes(bytes)],
        id: None,
    }
}

pub(super) fn slow_ping() -> Input {
    let line = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
    let (first, rest) = line.split_at(line.len() / 2);
    let mut ops = vec![Op::Bytes(first.to_vec()), Op::Pause(Duration::from_secs(2))];
    for byte in rest.iter().chain(b"\n") {
        ops.push(Op::Bytes(vec![*byte]));
        ops.push(Op::Pause(Duration::from_millis(20)));
    }
    Input { ops, id: seven() }
}

pub(super) fn initialize_line(version: &serde_json::Value) -> Input {
    let mut params = initialize_params(super::super::session::PROTOCOL_VERSION);
    if let Some(object) = params.as_object_mut() {
        object.insert("protocolVersion".to_owned(), version.clone());
    }
    let line =
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": params});
    bytes_line(line.to_string().as_bytes(), Some("7"))
}

/// A request (id 7) of `method` whose params are `before`, `bytes` bytes of `a` (streamed),
/// then `after`: the caller puts the quotes, so the huge string goes where it likes.
pub(super) fn big_params(method: &str, before: &str, bytes: u64, after: &str) -> Input {
    let head = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{before}"#);
    Input {
        ops: vec![
            Op::Bytes(head.into_bytes()),
            Op::Repeat {
                unit: b"a".to_vec(),
                count: bytes,
            },
            Op::Bytes(format!("{after}}}\n").into_bytes()),
        ],
        id: seven(),
    }
}

/// `count` `resources/subscribe` requests with the ids 1 to `count`, each for its own URI.
pub(super) fn subscriptions(count: u64) -> Vec<Op> {
    let mut lines = Vec::new();
    for id in 1..=count {
        lines.extend_from_slice(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/subscribe","params":{{"uri":"audit://subscription/{id}"}}}}"#
            )
            .as_bytes(),
        );
        lines.push(b'\n');
    }
    vec![Op::Bytes(lines)]
}
