//! The physical-limit baselines: what no stdio server can beat on this machine.
//!
//!     line-echo            read a line, write a fixed reply with the request's id, flush
//!     line-echo --json     the same after a full JSON parse of the line (serde_json::Value)
//!     line-echo --coalesce the plain echo, flushing only when no whole line is buffered
//!
//! The reply is `{"jsonrpc":"2.0","id":<id>,"result":{}}`: the id is found by a byte scan
//! (plain) or taken from the parsed value (--json), so the load generator can check ids for
//! every server alike. No bounds, no checks: this is a floor, not a server.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let json = mode == "--json";
    let coalesce = mode == "--coalesce";
    let stdin = std::io::stdin().lock();
    let mut input = BufReader::with_capacity(64 * 1024, stdin);
    // Unbuffered stdout: one write(2) per `write_all` of a whole reply line.
    let mut out = std::fs::File::from(
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .expect("stdout is a file descriptor"),
    );
    let mut line = Vec::with_capacity(4096);
    let mut reply = Vec::with_capacity(64 * 1024);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let start = reply.len();
        reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        if json {
            let value: serde_json::Value = match serde_json::from_slice(&line) {
                Ok(value) => value,
                Err(_) => serde_json::Value::Null,
            };
            let id = value.get("id").cloned().unwrap_or(serde_json::Value::Null);
            serde_json::to_writer(&mut reply, &id).expect("an id serialises");
        } else {
            reply.extend_from_slice(scan_id(&line));
        }
        reply.extend_from_slice(b",\"result\":{}}\n");
        if reply.len() == start {
            continue;
        }
        let more_buffered = coalesce && input.buffer().contains(&b'\n') && reply.len() < 64 * 1024;
        if !more_buffered {
            if out.write_all(&reply).is_err() {
                break;
            }
            reply.clear();
        }
    }
    let _ = out.write_all(&reply);
}

/// The raw text of the top-level `"id":` value, found by a byte scan (no JSON parse).
fn scan_id(line: &[u8]) -> &[u8] {
    let Some(at) = find(line, b"\"id\":") else {
        return b"null";
    };
    let rest = &line[at + 5..];
    let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    let len = rest
        .iter()
        .take_while(|b| !matches!(b, b',' | b'}' | b' '))
        .count();
    if len == 0 { b"null" } else { &rest[..len] }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
