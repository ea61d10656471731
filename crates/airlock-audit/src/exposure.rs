//! The `exposure` category: what a server that runs commands does with hostile string values
//! (path traversal, planted symlinks, option injection, shell metacharacters), judged by
//! canary files rather than by its replies' wording.
//!
//! For each case the audit creates a fresh scratch directory of its own under the system's
//! temporary directory (`create_dir`, never reusing an existing one):
//!
//! ```text
//! airlock-audit-<pid>-<random>/           the parent: nothing of the server's may appear here
//!     outside-canary                      random token; must never be read back or changed
//!     served/                             the server's working directory
//!         canary.txt                      a file it may read
//!         link-out -> ../outside-canary   planted symlinks
//!         link-parent -> ..
//! ```
//!
//! Every value aims only at these paths (absolute ones included), so a server that falls
//! for one touches nothing but the audit's own files. After each call the audit checks: the
//! reply must not hold the outside canary's token (a read outside the served directory), the
//! parent must hold nothing new (a write outside it, or a command the value smuggled in, such
//! as `$(touch …/pwned-subst)`), and the outside canary and the symlinks must be unchanged.
//! The scratch tree is removed at the end of the case (`remove_dir_all`, which does not follow
//! symlinks).
//!
//! What it trusts: the file system under the scratch directory, as the audit left it between
//! calls. What it does not: the server's replies (searched as bytes, shown only through
//! `judge::shown`) and the names it may create (shown escaped and bounded).

use std::collections::BTreeSet;
use std::hash::{BuildHasher as _, RandomState};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};

use super::failure::Failure;
use super::judge::Judgement;
use super::judge::{Outcome, Response, shown};
use super::probe::Aim;
use super::session::Session;
use super::severity::{Kind, Severity};
use super::{Verdict, finding_verdict};

/// The canary outside the served directory.
const OUTSIDE: &str = "outside-canary";

/// The directory the server runs in.
const SERVED: &str = "served";

/// What one exposure case tries: its values, built for the scratch directory.
pub(crate) type Values = fn(&Scratch) -> Vec<String>;

/// The scratch directory of one case.
pub(crate) struct Scratch {
    root: PathBuf,
    token: String,
    outside_bytes: Vec<u8>,
}

impl Scratch {
    /// Creates a fresh scratch tree.
    ///
    /// # Errors
    ///
    /// The tree could not be created (the error's kind).
    pub(crate) fn create() -> Result<Self, std::io::ErrorKind> {
        let token = random_hex();
        let root = std::env::temp_dir().join(format!(
            "airlock-audit-{}-{}",
            std::process::id(),
            random_hex()
        ));
        std::fs::create_dir(&root).map_err(|error| error.kind())?;
        let scratch = Self {
            // The random token alone: a fixed text would let a server recognise the canary.
            outside_bytes: format!("{token}\n").into_bytes(),
            root,
            token,
        };
        scratch.plant().map_err(|error| error.kind())?;
        Ok(scratch)
    }

    fn plant(&self) -> std::io::Result<()> {
        std::fs::write(self.root.join(OUTSIDE), &self.outside_bytes)?;
        let served = self.served();
        std::fs::create_dir(&served)?;
        std::fs::write(
            served.join("canary.txt"),
            b"a file inside the served directory\n",
        )?;
        std::os::unix::fs::symlink(Path::new("..").join(OUTSIDE), served.join("link-out"))?;
        std::os::unix::fs::symlink("..", served.join("link-parent"))?;
        Ok(())
    }

    /// The server's working directory.
    pub(crate) fn served(&self) -> PathBuf {
        self.root.join(SERVED)
    }

    /// The parent, as text (for values).
    pub(crate) fn parent(&self) -> String {
        self.root.to_string_lossy().into_owned()
    }

    /// The outside canary's absolute path, as text.
    pub(crate) fn outside(&self) -> String {
        self.root.join(OUTSIDE).to_string_lossy().into_owned()
    }

    /// What is wrong with the tree now: a new entry in the parent, the outside canary or a
    /// symlink changed. Fixed texts; names the server made are escaped and bounded.
    fn breaches(&self) -> Vec<String> {
        let mut found = Vec::new();
        let expected: BTreeSet<&str> = [OUTSIDE, SERVED].into_iter().collect();
        match std::fs::read_dir(&self.root) {
            Ok(entries) => {
                for entry in entries.take(MAX_LISTED).flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if !expected.contains(name.as_str()) {
                        found.push(format!(
                            "created \"{}\" outside the served directory",
                            shown(&name, MAX_SHOWN_NAME)
                        ));
                    }
                }
            }
            Err(_) => found.push("the scratch directory is gone".to_owned()),
        }
        if !real_dir(&self.served()) {
            found.push("replaced the served directory".to_owned());
        }
        match std::fs::read(self.root.join(OUTSIDE)) {
            Ok(bytes) if bytes == self.outside_bytes => {}
            Ok(_) => found.push("changed the canary outside the served directory".to_owned()),
            Err(_) => found.push("removed the canary outside the served directory".to_owned()),
        }
        let served = self.served();
        for (link, target) in [
            ("link-out", Path::new("..").join(OUTSIDE)),
            ("link-parent", PathBuf::from("..")),
        ] {
            if std::fs::read_link(served.join(link)).ok() != Some(target) {
                found.push(format!("changed the planted symlink {link}"));
            }
        }
        found
    }

    /// Undoes what the server did outside the served directory, so the next call is judged
    /// on its own: removes what it created in the parent, restores the canary and symlinks.
    fn restore(&self) {
        if let Ok(entries) = std::fs::read_dir(&self.root) {
            for entry in entries.take(MAX_LISTED).flatten() {
                let name = entry.file_name();
                if name != OUTSIDE && name != SERVED {
                    let path = entry.path();
                    let removed = match entry.file_type() {
                        Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
                        _ => std::fs::remove_file(&path),
                    };
                    drop(removed);
                }
            }
        }
        let served = self.served();
        if !real_dir(&served) {
            // A symlink (or file) in its place: removed itself, never followed.
            drop(std::fs::remove_file(&served));
            drop(std::fs::create_dir(&served));
        }
        drop(std::fs::remove_file(self.root.join(OUTSIDE)));
        drop(std::fs::remove_file(served.join("link-out")));
        drop(std::fs::remove_file(served.join("link-parent")));
        // create_new: never through a link the server put back meanwhile.
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(OUTSIDE))
            .and_then(|mut file| std::io::Write::write_all(&mut file, &self.outside_bytes));
        drop(written);
        drop(std::os::unix::fs::symlink(
            Path::new("..").join(OUTSIDE),
            served.join("link-out"),
        ));
        drop(std::os::unix::fs::symlink("..", served.join("link-parent")));
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Best effort: a server still writing may race this; the name is ours alone.
        drop(std::fs::remove_dir_all(&self.root));
    }
}

/// Whether `path` is a directory itself, not a link to one.
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// 64 random bits as hex (the standard library's per-process random hash keys).
pub(crate) fn random_hex() -> String {
    format!("{:016x}", RandomState::new().hash_one(Instant::now()))
}

/// Where an exposure case puts its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// Every string argument of every tool the audit may call.
    ToolArguments,
    /// Resource reads: every variable of every resource template the server lists (as is,
    /// percent-encoded and encoded twice), and a `file:` URI of each value (relative ones
    /// against the served directory).
    ResourceUris,
}

/// Runs one exposure case: every value in every aimed argument (or resource URI), one
/// request at a time, each judged by the canaries.
pub(crate) fn run(
    session: &mut Session<'_>,
    aims: &[Aim],
    scratch: &Scratch,
    values: Values,
    via: Via,
) -> Judgement {
    if via == Via::ResourceUris {
        return run_resources(session, scratch, values);
    }
    if aims.is_empty() {
        return Judgement {
            verdict: Verdict::Note,
            severity: Some(Severity::Info),
            detail: "no tool takes a string argument the audit may call: nothing to try".to_owned(),
            answer: None,
            follow_up: true,
        };
    }
    let values = values(scratch);
    // Every stdout line is searched for the token, whatever it is (an error's message, a
    // result too large to keep, a notification): a server that reads outside the served
    // directory must not pass because it reported what it read as an error.
    let mut tally = Tally::start(session, scratch);
    'aims: for aim in aims {
        for value in &values {
            if Instant::now() >= session.deadline || super::signals::interrupted() {
                break 'aims;
            }
            let mut arguments = aim.base.clone();
            if let Some(object) = arguments.as_object_mut() {
                object.insert(aim.key.clone(), Value::String(value.clone()));
            }
            let request = json!({"name": aim.tool, "arguments": arguments});
            let reply = until_admitted(session, "tools/call", &request);
            let where_ = format!(
                "tool {} argument {}",
                shown(&aim.tool, MAX_SHOWN_NAME),
                shown(&aim.key, MAX_SHOWN_NAME)
            );
            tally.judge(session, scratch, &where_, "a value", &reply);
        }
    }
    let detail = format!(
        "{} calls over {} tool arguments, {} values each",
        tally.sent,
        aims.len(),
        values.len()
    );
    tally.finish(detail)
}

/// What an exposure case has seen so far: requests sent and answered, and the worst breach
/// the canaries showed.
struct Tally {
    sent: u64,
    served: u64,
    unanswered: u64,
    worst: Option<Severity>,
}

impl Tally {
    /// Starts watching every stdout line for the scratch tree's token and forgets any
    /// sighting from before the case.
    fn start(session: &mut Session<'_>, scratch: &Scratch) -> Self {
        session.target().watch_for(scratch.token.as_bytes());
        let _earlier = session.take_canary_seen();
        Self {
            sent: 0,
            served: 0,
            unanswered: 0,
            worst: None,
        }
    }

    /// Judges one request's reply by the canaries: the token seen on any line or in the
    /// parsed result (a token written with `\u` escapes) is a read outside the served
    /// directory; anything the scratch tree shows changed outside it is a write, undone
    /// before the next request. `what` names the request in a finding ("a value", "a read").
    fn judge(
        &mut self,
        session: &mut Session<'_>,
        scratch: &Scratch,
        where_: &str,
        what: &str,
        reply: &Result<Response, Failure>,
    ) {
        self.sent = self.sent.saturating_add(1);
        let in_result = match reply {
            Ok(Response {
                outcome: Outcome::Result { value, .. },
                ..
            }) => {
                self.served = self.served.saturating_add(1);
                value
                    .as_ref()
                    .is_some_and(|result| result.to_string().contains(&scratch.token))
            }
            Ok(_) => false,
            Err(_) => {
                self.unanswered = self.unanswered.saturating_add(1);
                false
            }
        };
        if session.take_canary_seen() || in_result {
            session.find(
                Kind::OutsideRead,
                format!("{where_}: {what} returned the canary outside the served directory"),
            );
            self.worst = self.worst.max(Some(Kind::OutsideRead.severity()));
        }
        let breaches = scratch.breaches();
        if !breaches.is_empty() {
            for breach in breaches {
                session.find(Kind::OutsideWrite, format!("{where_}: {breach}"));
            }
            self.worst = self.worst.max(Some(Kind::OutsideWrite.severity()));
            scratch.restore();
        }
    }

    /// The case's judgement: `detail` (what was sent), then what went unanswered and what
    /// the canaries showed. Unanswered requests are high; the breaches are findings of
    /// their own.
    fn finish(self, mut detail: String) -> Judgement {
        let severity = (self.unanswered > 0).then(|| {
            detail.push_str(&format!("; {} unanswered in time", self.unanswered));
            Severity::High
        });
        match self.worst {
            Some(level) => {
                detail.push_str(&format!("; the canaries show a breach ({})", level.name()));
            }
            None => detail.push_str("; no canary read back or touched"),
        }
        Judgement {
            verdict: severity.map_or(Verdict::Pass, finding_verdict),
            severity,
            detail,
            answer: None,
            follow_up: true,
        }
    }
}

/// Sends `method` with `params`, again (up to [`MAX_ATTEMPTS`] times) while a quota or the
/// in-flight cap refuses it, so every value is tried.
fn until_admitted(
    session: &mut Session<'_>,
    method: &str,
    params: &Value,
) -> Result<super::judge::Response, Failure> {
    let mut attempt: u32 = 0;
    loop {
        let id = session.request(method, Some(params.clone()));
        let deadline = session.deadline;
        let response = session.await_reply(&id, deadline)?;
        attempt = attempt.saturating_add(1);
        match response.outcome {
            Outcome::Error {
                code: BUSY_RATE | BUSY_IN_FLIGHT,
                retry_after_ms,
            } if attempt < MAX_ATTEMPTS => {
                let wait = retry_after_ms
                    .map_or(DEFAULT_WAIT, std::time::Duration::from_millis)
                    .min(MAX_WAIT);
                let resume = Instant::now()
                    .checked_add(wait)
                    .unwrap_or(deadline)
                    .min(deadline);
                while Instant::now() < resume {
                    session.pump(POLL);
                }
            }
            _ => return Ok(response),
        }
    }
}

/// Runs the resource variant of an exposure case: each value in every variable of every
/// listed resource template and as a `file:` URI, one `resources/read` at a time.
fn run_resources(session: &mut Session<'_>, scratch: &Scratch, values: Values) -> Judgement {
    let values = values(scratch);
    let templates = listed_templates(session);
    let mut reads: Vec<(String, String)> = Vec::new();
    for template in &templates {
        for value in &values {
            for times in 0..=2 {
                let uri = expand(template, &encoded(value, times));
                reads.push((format!("template {}", shown(template, MAX_SHOWN_NAME)), uri));
            }
        }
    }
    for value in &values {
        let uri = if value.starts_with('/') {
            format!("file://{value}")
        } else {
            format!("file://{}/{value}", scratch.served().display())
        };
        reads.push(("a file: URI".to_owned(), uri));
    }
    let mut tally = Tally::start(session, scratch);
    for (where_, uri) in &reads {
        if Instant::now() >= session.deadline || super::signals::interrupted() {
            break;
        }
        let reply = until_admitted(session, "resources/read", &json!({ "uri": uri }));
        tally.judge(session, scratch, where_, "a read", &reply);
    }
    let detail = format!(
        "{} reads over {} resource templates and file: URIs, {} values each: {} served",
        tally.sent,
        templates.len(),
        values.len(),
        tally.served
    );
    tally.finish(detail)
}

/// The URI templates the server lists (`resources/templates/list`, up to [`MAX_PAGES`]
/// pages, at most [`MAX_TEMPLATES`] of at most [`MAX_TEMPLATE_BYTES`] bytes); none from a
/// server without resources.
fn listed_templates(session: &mut Session<'_>) -> Vec<String> {
    let mut templates = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.take().map(|cursor| json!({ "cursor": cursor }));
        let id = session.request("resources/templates/list", params);
        let deadline = session.deadline;
        let Ok(Response {
            outcome:
                Outcome::Result {
                    value: Some(result),
                    ..
                },
            ..
        }) = session.await_reply(&id, deadline)
        else {
            break;
        };
        let listed = result
            .get("resourceTemplates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|template| template.get("uriTemplate").and_then(Value::as_str))
            .filter(|template| template.len() <= MAX_TEMPLATE_BYTES);
        for template in listed {
            if templates.len() < MAX_TEMPLATES {
                templates.push(template.to_owned());
            }
        }
        cursor = result
            .get("nextCursor")
            .filter(|next| next.is_string())
            .cloned();
        if cursor.is_none() || templates.len() >= MAX_TEMPLATES {
            break;
        }
    }
    templates
}

/// `template` with every expression replaced by `value`, after the expression's RFC 6570
/// operator prefix (`{/x}` gives `/value`, `{?x}` gives `?x=value`); `value` goes in as
/// given, so the caller decides its encoding.
fn expand(template: &str, value: &str) -> String {
    let mut uri = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let (literal, tail) = rest.split_at(open);
        uri.push_str(literal);
        let Some(close) = tail.find('}') else {
            uri.push_str(tail);
            return uri;
        };
        let (expression, after) = tail.split_at(close);
        let expression = expression.trim_start_matches('{');
        let (operator, names) = match expression.chars().next() {
            Some(op @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => {
                (Some(op), expression.get(op.len_utf8()..).unwrap_or(""))
            }
            _ => (None, expression),
        };
        let name = names
            .split(',')
            .next()
            .unwrap_or("")
            .trim_end_matches('*')
            .split(':')
            .next()
            .unwrap_or("");
        match operator {
            Some('#' | '.' | '/') => uri.extend(operator),
            Some(op @ (';' | '?' | '&')) => {
                uri.push(op);
                uri.push_str(name);
                uri.push('=');
            }
            _ => {}
        }
        uri.push_str(value);
        rest = after.get(1..).unwrap_or("");
    }
    uri.push_str(rest);
    uri
}

/// `value` percent-encoded `times` times (every byte outside RFC 3986's unreserved set), so a
/// server that decodes more than once is tried too.
fn encoded(value: &str, times: u32) -> String {
    let mut text = value.to_owned();
    for _ in 0..times {
        let mut next = String::new();
        for byte in text.bytes() {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                next.push(char::from(byte));
            } else {
                next.push_str(&format!("%{byte:02X}"));
            }
        }
        text = next;
    }
    text
}

/// Pages of `resources/templates/list` read.
const MAX_PAGES: usize = 4;

/// Templates tried.
const MAX_TEMPLATES: usize = 16;

/// Longest template tried.
const MAX_TEMPLATE_BYTES: usize = 1024;

/// `-31429`: rate limited.
const BUSY_RATE: i64 = -31_429;

/// `-31503`: too many calls in flight.
const BUSY_IN_FLIGHT: i64 = -31_503;

/// Calls of one value before a refusal stands.
const MAX_ATTEMPTS: u32 = 20;

/// Wait after a refusal without `retryAfterMs`.
const DEFAULT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Longest wait honoured.
const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Longest single wait while backing off.
const POLL: std::time::Duration = std::time::Duration::from_millis(25);

/// `../outside-canary` and its kin.
pub(crate) fn traversal(_: &Scratch) -> Vec<String> {
    vec![
        format!("../{OUTSIDE}"),
        format!("./../{OUTSIDE}"),
        format!("canary.txt/../../{OUTSIDE}"),
        format!("{SERVED}/../../{OUTSIDE}"),
        format!("..//{OUTSIDE}"),
    ]
}

/// The outside canary's absolute path.
pub(crate) fn absolute(scratch: &Scratch) -> Vec<String> {
    vec![
        scratch.outside(),
        format!("{}/./{OUTSIDE}", scratch.parent()),
        format!("{}/{SERVED}/../{OUTSIDE}", scratch.parent()),
    ]
}

/// The planted symlinks.
pub(crate) fn symlinks(_: &Scratch) -> Vec<String> {
    vec![
        "link-out".to_owned(),
        "./link-out".to_owned(),
        format!("link-parent/{OUTSIDE}"),
    ]
}

/// Every path value at once: traversal, absolute and through the planted symlinks.
pub(crate) fn resource_values(scratch: &Scratch) -> Vec<String> {
    let mut values = traversal(scratch);
    values.extend(absolute(scratch));
    values.extend(symlinks(scratch));
    values
}

/// Values a program reads as options.
pub(crate) fn options(scratch: &Scratch) -> Vec<String> {
    let parent = scratch.parent();
    let outside = scratch.outside();
    vec![
        format!("--output={parent}/pwned-output"),
        format!("-o{parent}/pwned-o"),
        format!("-fprint={parent}/pwned-fprint"),
        format!("--files0-from={outside}"),
        format!("--file={outside}"),
        format!("-f{outside}"),
        format!("@{outside}"),
        "-exec".to_owned(),
    ]
}

/// `$(…)` and backticks.
pub(crate) fn substitution(scratch: &Scratch) -> Vec<String> {
    let parent = scratch.parent();
    vec![
        format!("$(touch {parent}/pwned-subst)"),
        format!("`touch {parent}/pwned-backtick`"),
        format!("$(cat {})", scratch.outside()),
    ]
}

/// Command separators: `;`, `|`, `&&`, `||`, a newline.
pub(crate) fn separators(scratch: &Scratch) -> Vec<String> {
    let parent = scratch.parent();
    vec![
        format!("a; touch {parent}/pwned-semicolon"),
        format!("a | touch {parent}/pwned-pipe"),
        format!("a && touch {parent}/pwned-and"),
        format!("nonexistent || touch {parent}/pwned-or"),
        format!("a\ntouch {parent}/pwned-newline"),
        format!("a; cat {}", scratch.outside()),
    ]
}

/// Entries of the parent listed per check.
const MAX_LISTED: usize = 64;

/// Characters of a name shown in a finding.
const MAX_SHOWN_NAME: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_scratch_tree_shows_no_breach_and_a_planted_file_is_one_undone() {
        let scratch = Scratch::create().unwrap();
        assert!(scratch.breaches().is_empty());
        std::fs::write(scratch.root.join("pwned-x"), b"").unwrap();
        std::fs::write(scratch.root.join(OUTSIDE), b"changed").unwrap();
        assert_eq!(
            scratch.breaches(),
            vec![
                "created \"pwned-x\" outside the served directory".to_owned(),
                "changed the canary outside the served directory".to_owned(),
            ]
        );
        scratch.restore();
        assert!(scratch.breaches().is_empty());
        // The served directory swapped for a link elsewhere: found, and undone without
        // touching the link's target.
        let elsewhere = Scratch::create().unwrap();
        std::fs::remove_dir_all(scratch.served()).unwrap();
        std::os::unix::fs::symlink(elsewhere.served(), scratch.served()).unwrap();
        assert!(
            scratch
                .breaches()
                .contains(&"replaced the served directory".to_owned())
        );
        scratch.restore();
        assert!(scratch.breaches().is_empty());
        assert!(elsewhere.breaches().is_empty());
        assert!(real_dir(&scratch.served()));
        let root = scratch.root.clone();
        drop(scratch);
        assert!(!root.exists());
    }

    #[test]
    fn every_value_aims_inside_the_scratch_tree() {
        let scratch = Scratch::create().unwrap();
        let parent = scratch.parent();
        for values in [
            traversal,
            absolute,
            symlinks,
            options,
            substitution,
            separators,
        ] {
            for value in values(&scratch) {
                let absolute_paths = value
                    .split([' ', '=', '@', '(', '`', '\n'])
                    .filter(|part| part.starts_with('/'));
                for path in absolute_paths {
                    assert!(path.starts_with(&parent), "{value}");
                }
            }
        }
    }

    #[test]
    fn a_template_is_expanded_with_the_value_after_each_operators_prefix() {
        assert_eq!(expand("docs://{path}", "x"), "docs://x");
        assert_eq!(expand("a{/seg}{?q,r}{#f}", "v"), "a/v?q=v#v");
        assert_eq!(expand("t://{id}/data/{+rest*}", "v"), "t://v/data/v");
        assert_eq!(expand("t://{unclosed", "v"), "t://{unclosed");
        assert_eq!(expand("plain", "v"), "plain");
    }

    #[test]
    fn a_value_is_percent_encoded_once_or_twice() {
        assert_eq!(encoded("../a b", 0), "../a b");
        assert_eq!(encoded("../a b", 1), "..%2Fa%20b");
        assert_eq!(encoded("../a", 2), "..%252Fa");
    }
}
