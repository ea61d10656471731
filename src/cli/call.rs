//! `airlock call TOOL [key=value …]`: one call of a manifest's tool from the shell, as an
//! agent would make it, without writing a client.
//!
//! The call goes through a real `airlock serve` (this same binary, started as a child with
//! the manifest) over its stdin and stdout: the same manifest checks, argument checks,
//! sandbox, limits and redaction as any agent's call, and nothing of it re-implemented here.
//! Its log lines and audit record go to stderr as `serve` writes them (`AIRLOCK_LOG=warn`
//! quiets them).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{ExitCode, Stdio};

use serde_json::{Map, Value, json};

/// What to call, and how to print it.
pub(crate) struct Request<'a> {
    /// The manifest to serve (none: what `serve` would take).
    pub(crate) manifest: Option<&'a Path>,
    /// `--sandbox` for `serve`.
    pub(crate) sandbox: &'a str,
    pub(crate) tool: &'a str,
    /// `key=value` (a string) and `key:=json` (any JSON value) pairs.
    pub(crate) pairs: &'a [String],
    /// The arguments as one JSON object, instead of pairs.
    pub(crate) json: Option<&'a str>,
    /// Print the whole result as JSON instead of its text.
    pub(crate) raw: bool,
    /// `--test-hosts` (tests only), passed on to `serve`.
    pub(crate) test_hosts: &'a [String],
}

/// The exit status when the tool answered with `isError` (or the server with an error).
const TOOL_ERROR: u8 = 1;
/// The exit status of a usage error: arguments that cannot be read.
const USAGE: u8 = 2;

/// Runs the call; prints the result on stdout and what went wrong on stderr.
pub(crate) fn run(request: &Request<'_>) -> ExitCode {
    let arguments = match arguments(request.pairs, request.json) {
        Ok(arguments) => arguments,
        Err(error) => return fail(&error.to_string(), USAGE),
    };
    match call(request, arguments, false) {
        Ok((reply, _)) => print(&reply, request.raw),
        Err(error) => fail(&error.to_string(), TOOL_ERROR),
    }
}

/// Arguments that cannot be read (a usage error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArgumentsError {
    /// `--json` is no JSON object.
    #[error("--json takes the arguments as one JSON object: --json '{{\"path\": \".\"}}'")]
    NotAnObject,
    /// `key:=` followed by no JSON.
    #[error("{0}:= takes a JSON value (a number, true, an array…); use {0}=… for text")]
    NotJson(String),
    /// Neither `key=value` nor `key:=json`.
    #[error("an argument is key=value (text) or key:=json, not `{0}`")]
    NotAPair(String),
    /// `=value`.
    #[error("an argument without a name: `{0}`")]
    NoName(String),
    /// One name twice.
    #[error("the argument {0} is given twice")]
    Twice(String),
}

/// Why the call was not made or got no reply.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// This program's path is unknown.
    #[error("cannot find airlock's own program: {0}")]
    Program(std::io::Error),
    /// `airlock serve` cannot be started.
    #[error("cannot start airlock serve: {0}")]
    Start(std::io::Error),
    /// The exchange with the server broke off.
    #[error("{0}")]
    Exchange(&'static str),
}

/// The call's arguments: `--json`'s object, or the pairs (`key=value` a string, `key:=value`
/// JSON: `count:=3`, `flags:='["a"]'`).
pub(crate) fn arguments(
    pairs: &[String],
    json: Option<&str>,
) -> Result<Map<String, Value>, ArgumentsError> {
    if let Some(text) = json {
        return match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => Ok(object),
            _ => Err(ArgumentsError::NotAnObject),
        };
    }
    let mut arguments = Map::new();
    for pair in pairs {
        let (key, value) = if let Some((key, value)) = pair.split_once(":=") {
            let value =
                serde_json::from_str(value).map_err(|_| ArgumentsError::NotJson(key.to_owned()))?;
            (key, value)
        } else if let Some((key, value)) = pair.split_once('=') {
            (key, Value::String(value.to_owned()))
        } else {
            return Err(ArgumentsError::NotAPair(pair.clone()));
        };
        if key.is_empty() {
            return Err(ArgumentsError::NoName(pair.clone()));
        }
        if arguments.insert(key.to_owned(), value).is_some() {
            return Err(ArgumentsError::Twice(key.to_owned()));
        }
    }
    Ok(arguments)
}

/// Starts `airlock serve`, initializes, calls the tool and returns the reply to the call,
/// and with `capture` the server's stderr (its log lines and the call's audit record) instead
/// of passing it through.
pub(crate) fn call(
    request: &Request<'_>,
    arguments: Map<String, Value>,
    capture: bool,
) -> Result<(Value, String), CallError> {
    let program = std::env::current_exe().map_err(CallError::Program)?;
    #[expect(
        clippy::disallowed_methods,
        reason = "airlock starting itself as the server, argv only"
    )]
    let mut server = std::process::Command::new(program);
    server.arg("serve").arg("--sandbox").arg(request.sandbox);
    if let Some(manifest) = request.manifest {
        server.arg("--manifest").arg(manifest);
    }
    for pair in request.test_hosts {
        server.arg("--test-hosts").arg(pair);
    }
    let mut child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if capture {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .spawn()
        .map_err(CallError::Start)?;
    // Read on a thread of its own, so a server writing much there never blocks on it.
    let stderr = child.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _read = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        })
    });
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "airlock call", "version": env!("CARGO_PKG_VERSION")},
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": request.tool,
            "arguments": arguments,
        }}),
    ];
    let reply = (|| {
        let mut stdin = child.stdin.take().ok_or("no pipe to the server")?;
        for line in &lines {
            writeln!(stdin, "{line}").map_err(|_| "the server closed its input")?;
        }
        let stdout = child.stdout.take().ok_or("no pipe from the server")?;
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|_| "the server's output ended")?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id") == Some(&json!(2)) {
                drop(stdin);
                return Ok(message);
            }
            if message.get("id") == Some(&json!(1)) && message.get("error").is_some() {
                return Err("the server refused to initialize");
            }
        }
        Err("the server ended before it answered (its log lines above say why)")
    })();
    // Done either way: end the server (its stdin is closed above or with the closure).
    let ended = child.wait().is_ok();
    let stderr = stderr
        .and_then(|reading| reading.join().ok())
        .unwrap_or_default();
    let reply = reply.map_err(CallError::Exchange)?;
    if !ended {
        tracing::debug!("the server could not be waited for");
    }
    Ok((reply, stderr))
}

/// Prints the reply: the result's text (non-text content named by its type), or the result
/// whole with `raw`; exit 0 unless the tool or the server said it failed.
pub(crate) fn print(reply: &Value, raw: bool) -> ExitCode {
    if let Some(error) = reply.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        return fail(
            &format!("the server refused the call ({code}): {message}"),
            TOOL_ERROR,
        );
    }
    let result = reply.get("result").cloned().unwrap_or(Value::Null);
    let failed = result.get("isError") == Some(&Value::Bool(true));
    let mut out = String::new();
    if raw {
        out = format!("{result:#}\n");
    } else {
        let items = result.get("content").and_then(Value::as_array);
        for item in items.into_iter().flatten() {
            match (item.get("type").and_then(Value::as_str), item.get("text")) {
                (Some("text"), Some(Value::String(text))) => out.push_str(text),
                (kind, _) => out.push_str(&format!("[{} content]\n", kind.unwrap_or("unknown"))),
            }
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
    }
    let written = std::io::stdout().lock().write_all(out.as_bytes());
    if written.is_err() {
        return ExitCode::FAILURE;
    }
    if failed {
        ExitCode::from(TOOL_ERROR)
    } else {
        ExitCode::SUCCESS
    }
}

fn fail(text: &str, status: u8) -> ExitCode {
    let line = format!("airlock call: {text}\n");
    // Nothing more to do if stderr is gone.
    if std::io::stderr().lock().write_all(line.as_bytes()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::from(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_text_unless_given_as_json() {
        let pairs = [
            "path=.".to_owned(),
            "count:=3".to_owned(),
            "flags:=[\"a\"]".to_owned(),
            "text=a=b".to_owned(),
        ];
        let arguments = arguments(&pairs, None).unwrap();
        assert_eq!(
            Value::Object(arguments),
            json!({"path": ".", "count": 3, "flags": ["a"], "text": "a=b"})
        );
    }

    #[test]
    fn malformed_arguments_are_usage_errors() {
        for pairs in [
            vec!["path".to_owned()],
            vec!["=x".to_owned()],
            vec!["n:=three".to_owned()],
            vec!["a=1".to_owned(), "a=2".to_owned()],
        ] {
            assert!(arguments(&pairs, None).is_err(), "{pairs:?}");
        }
        assert!(arguments(&[], Some("[1]")).is_err());
        assert_eq!(
            arguments(&[], Some("{\"a\": 1}")).unwrap().get("a"),
            Some(&json!(1))
        );
    }
}
