//! Whether bytes a server wrote hold a panic or a stack trace, told by the shape a runtime
//! prints one in, never by a word that merely names one.
//!
//! A runtime's crash report has lines no other text has: Rust's `thread 'main' panicked at`
//! headline and `stack backtrace:`, Python's `Traceback (most recent call last):` and its
//! `File "x.py", line 3` frames, Node's `    at fn (file.js:1:7)` frames, Java's
//! `Exception in thread "main"` and `\tat pkg.Class.method(File.java:12)` frames, Go's
//! `goroutine 1 [running]:`. A word alone (`RUST_BACKTRACE=1` echoed by a tool that prints
//! the environment, "panicked" or "Traceback" in prose) is not a trace: taking it for one
//! made the audit report false criticals.
//!
//! The bytes are one stdout line (a JSON message whose strings hold the trace escaped), or an
//! HTTP body (JSON, SSE `data:` lines or plain text). They are read once, as logical lines: a
//! real newline ends one, and inside a JSON text so does an escaped `\n` or `\r` and the end
//! of a string; escapes (`\t`, `\"`, `\\`, `\u000a`) are undone. Each logical line is judged
//! by its first [`MAX_JUDGED_LINE_BYTES`] bytes, so the work is linear in the input and the
//! memory fixed. Nothing here trusts the bytes: they are only compared.

/// Whether `bytes` hold a panic or a stack trace as a common runtime prints it.
pub(crate) fn shows_trace(bytes: &[u8]) -> bool {
    let mut found = false;
    for_each_logical_line(bytes, |line| {
        found = is_trace_line(line);
        found
    });
    found
}

/// Calls `judge` with each logical line of `bytes` (its first [`MAX_JUDGED_LINE_BYTES`]
/// bytes, lossily decoded) until it returns `true`.
fn for_each_logical_line(bytes: &[u8], mut judge: impl FnMut(&str) -> bool) {
    let mut line: Vec<u8> = Vec::with_capacity(MAX_JUDGED_LINE_BYTES);
    for physical in bytes.split(|byte| *byte == b'\n') {
        if is_json_text(physical) {
            let mut in_string = false;
            let mut rest = physical.iter().copied();
            while let Some(byte) = rest.next() {
                if !in_string {
                    if byte == b'"' {
                        in_string = true;
                        line.clear();
                    }
                    continue;
                }
                let decoded = match byte {
                    b'"' => None,
                    b'\\' => match rest.next() {
                        Some(b'n' | b'r') => None,
                        Some(b't') => Some(b'\t'),
                        Some(b'u') => {
                            let hex: Vec<u8> = rest.by_ref().take(4).collect();
                            match std::str::from_utf8(&hex)
                                .ok()
                                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                            {
                                Some(0x0a | 0x0d) => None,
                                Some(0x09) => Some(b'\t'),
                                // Other escaped characters only matter as "not a space".
                                _ => Some(b'?'),
                            }
                        }
                        Some(other) => Some(other),
                        None => None,
                    },
                    other => Some(other),
                };
                match decoded {
                    Some(byte) => {
                        if line.len() < MAX_JUDGED_LINE_BYTES {
                            line.push(byte);
                        }
                    }
                    None => {
                        if judge(&String::from_utf8_lossy(&line)) {
                            return;
                        }
                        line.clear();
                        in_string = byte != b'"';
                    }
                }
            }
        } else {
            let kept = physical.get(..MAX_JUDGED_LINE_BYTES).unwrap_or(physical);
            if judge(&String::from_utf8_lossy(kept)) {
                return;
            }
        }
    }
}

/// Whether a physical line is JSON text (a message, or an SSE `data:` line carrying one), whose
/// strings are read escaped.
fn is_json_text(physical: &[u8]) -> bool {
    let text = physical.trim_ascii_start();
    let text = text
        .strip_prefix(b"data:")
        .unwrap_or(text)
        .trim_ascii_start();
    matches!(text.first(), Some(b'{' | b'['))
}

/// Whether one logical line is a runtime's crash headline or stack frame.
fn is_trace_line(line: &str) -> bool {
    let trimmed = line.trim();
    rust_panic(line)
        || trimmed == "stack backtrace:"
        || line.contains("Traceback (most recent call last):")
        || python_frame(trimmed)
        || line.contains("Exception in thread \"")
        || at_frame(trimmed)
        || go_goroutine(trimmed)
}

/// Rust's headline: `thread 'NAME' panicked at LOCATION` (before 1.73 `panicked at 'MSG',
/// LOCATION`).
fn rust_panic(line: &str) -> bool {
    line.split_once("thread '")
        .and_then(|(_, after)| after.split_once("' panicked at "))
        .is_some_and(|(name, rest)| !name.contains('\'') && !rest.trim().is_empty())
}

/// Python's frame: `File "PATH", line N` (then `, in NAME`).
fn python_frame(trimmed: &str) -> bool {
    trimmed
        .strip_prefix("File \"")
        .and_then(|rest| rest.split_once("\", line "))
        .is_some_and(|(path, rest)| {
            !path.is_empty() && rest.starts_with(|c: char| c.is_ascii_digit())
        })
}

/// A Node or Java frame: `at NAME (FILE:LINE:COLUMN)`, `at FILE:LINE:COLUMN`,
/// `at pkg.Class.method(File.java:LINE)`, `at pkg.Class.method(Native Method)`.
fn at_frame(trimmed: &str) -> bool {
    let Some(frame) = trimmed.strip_prefix("at ") else {
        return false;
    };
    if let Some(inside) = frame
        .strip_suffix(')')
        .and_then(|frame| frame.rsplit_once('('))
        .map(|(_, inside)| inside)
    {
        return node_location(inside) || java_location(inside);
    }
    !frame.contains(' ') && node_location(frame)
}

/// `FILE:LINE:COLUMN`, as Node prints where a frame is.
fn node_location(text: &str) -> bool {
    let mut parts = text.rsplitn(3, ':');
    let (Some(column), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    is_number(column) && is_number(line) && !file.trim().is_empty()
}

/// `File.java:LINE` (or a Kotlin, Scala or Groovy file), `Native Method`, `Unknown Source`.
fn java_location(text: &str) -> bool {
    if text == "Native Method" || text == "Unknown Source" {
        return true;
    }
    text.rsplit_once(':').is_some_and(|(file, line)| {
        is_number(line)
            && [".java", ".kt", ".scala", ".groovy"]
                .iter()
                .any(|ending| file.ends_with(ending))
    })
}

/// Go's goroutine header: `goroutine N [STATE]:`.
fn go_goroutine(trimmed: &str) -> bool {
    trimmed
        .strip_prefix("goroutine ")
        .and_then(|rest| rest.split_once(" ["))
        .is_some_and(|(number, rest)| is_number(number) && rest.ends_with("]:"))
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// Bytes of one logical line looked at: every headline and frame shape fits well within it.
const MAX_JUDGED_LINE_BYTES: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` as a JSON-RPC error message on one stdout line, escaped as a server writes it.
    fn in_json(text: &str) -> Vec<u8> {
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": text}})
            .to_string()
            .into_bytes()
    }

    const TRACES: [(&str, &str); 9] = [
        (
            "rust",
            "thread 'tokio-runtime-worker' panicked at src/lib.rs:9:5:\nindex out of bounds",
        ),
        (
            "rust before 1.73",
            "thread 'main' panicked at 'boom', src/main.rs:2:5",
        ),
        (
            "rust backtrace",
            "oops\nstack backtrace:\n   0: rust_begin_unwind",
        ),
        (
            "python",
            "Traceback (most recent call last):\n  File \"/srv/app.py\", line 3, in <module>\n    main()\nKeyError: 'x'",
        ),
        (
            "python frame alone",
            "error:\n  File \"/srv/app.py\", line 12, in handle",
        ),
        (
            "node",
            "Error: boom\n    at Object.<anonymous> (/srv/x.js:1:7)\n    at node:internal/main/run_main_module:28:49",
        ),
        (
            "java",
            "Exception in thread \"main\" java.lang.NullPointerException\n\tat com.example.Main.run(Main.java:14)",
        ),
        (
            "java frame alone",
            "java.lang.IllegalStateException: x\n\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)",
        ),
        (
            "go",
            "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n\t/srv/main.go:8 +0x1d",
        ),
    ];

    #[test]
    fn a_trace_of_each_runtime_is_spotted_raw_and_escaped_in_json() {
        for (runtime, trace) in TRACES {
            assert!(shows_trace(trace.as_bytes()), "{runtime}, raw");
            assert!(shows_trace(&in_json(trace)), "{runtime}, in a JSON string");
            let sse = [b"event: message\ndata: ".as_slice(), &in_json(trace)].concat();
            assert!(shows_trace(&sse), "{runtime}, in an SSE event");
        }
        // `\u000a` escapes a newline as well as `\n` does.
        assert!(shows_trace(
            br#"{"message":"Error: boom\u000a    at run (/srv/x.js:1:7)"}"#
        ));
    }

    #[test]
    fn a_node_frame_is_spotted_where_its_string_ends() {
        assert!(shows_trace(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Error: boom\n    at Object.<anonymous> (/srv/x.js:1:7)"}}"#
        ));
        assert!(shows_trace(br#"{"stack":"at /srv/x.js:10:3"}"#));
    }

    #[test]
    fn words_that_name_a_trace_are_not_one() {
        for text in [
            // What a tool that prints the environment echoes back: the false criticals.
            r#"{"RUST_BACKTRACE":"1","NODE_OPTIONS":"--stack-trace-limit=50","PYTHONFAULTHANDLER":"1"}"#,
            "RUST_BACKTRACE=1",
            "RUST_BACKTRACE=full\nRUST_LIB_BACKTRACE=0",
            "the worker panicked at startup and was restarted",
            "a thread panicked at some point",
            "Traceback is a Python word; so is panic: see the docs",
            "panic: nothing to see",
            "meet at noon (by the door)",
            "    at the door (room 1:2)",
            "at least 3:4:5 things",
            "goroutine 1 is running",
            "Exception in threading code",
            r#"File "notes.txt", line breaks are kept"#,
            "stack backtrace: disabled",
        ] {
            assert!(!shows_trace(text.as_bytes()), "raw: {text}");
            assert!(!shows_trace(&in_json(text)), "in JSON: {text}");
        }
        assert!(!shows_trace(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32700,"message":"Parse error"}}"#
        ));
        assert!(!shows_trace(b""));
        assert!(!shows_trace(b"{\"unterminated\\"));
    }

    #[test]
    fn a_trace_past_a_long_line_start_is_judged_by_its_own_logical_line() {
        let mut text = "x".repeat(10_000);
        text.push_str("\nthread 'main' panicked at src/main.rs:1:1:");
        assert!(shows_trace(text.as_bytes()));
        assert!(shows_trace(&in_json(&text)));
        // A headline pushed past the judged bytes of its own line is not looked at.
        let far = format!(
            "{}thread 'main' panicked at src/main.rs:1:1:",
            "x".repeat(600)
        );
        assert!(!shows_trace(far.as_bytes()));
    }
}
