//! Cases that need code of their own: floods (every request answered exactly once), the end
//! of input at bad moments (and how the server exits), and the version an `initialize` for a
//! revision that does not exist is offered.

use std::time::{Duration, Instant};

use super::super::judge::{self, Id, Reply, When, fail, judge, note, pass};
use super::super::session::{Next, Session};
use super::super::severity::{Kind, Severity};
use super::super::target::{Exit, Op};
use super::super::{Verdict, signals};
use super::Judgement;
use super::expect::{ANY_CODE, NULL, SENT};
use super::input::{big_string_ping, initialize_line, subscriptions};

/// `initialize` with a version that does not exist: the server answers with one it supports,
/// or refuses.
pub(super) fn unsupported_version(session: &mut Session<'_>) -> Judgement {
    let input = initialize_line(&serde_json::json!("1999-01-01"));
    let collected = session.collect(input.ops, true);
    let seven = Id::from_json("7");
    let (verdict, severity, detail) = match collected.replies.as_slice() {
        [Reply::Single(response)] if Some(&response.id) == seven.as_ref() => {
            match &response.outcome {
                judge::Outcome::Result { value, .. } => {
                    let offered = value
                        .as_ref()
                        .and_then(|value| value.get("protocolVersion"))
                        .and_then(serde_json::Value::as_str);
                    session.notify("notifications/initialized");
                    session.ready = true;
                    match offered {
                        Some("1999-01-01") => (
                            Verdict::Note,
                            Some(Severity::Low),
                            "agrees to a protocol version that does not exist".to_owned(),
                        ),
                        Some(version) => (
                            Verdict::Pass,
                            None,
                            format!("offers {}", judge::shown(version, 32)),
                        ),
                        None => (
                            Verdict::Fail,
                            Some(Severity::Medium),
                            "an initialize result without protocolVersion".to_owned(),
                        ),
                    }
                }
                judge::Outcome::Error { code: -32602, .. } => {
                    (Verdict::Pass, None, "error -32602, id 7".to_owned())
                }
                judge::Outcome::Error { code, .. } => (
                    Verdict::Note,
                    Some(Severity::Low),
                    format!("error {code}, id 7: the spec's example refuses with -32602"),
                ),
            }
        }
        replies => judge(
            &[fail(When::Silent, "a request is not answered")],
            replies,
            seven.as_ref(),
        ),
    };
    Judgement {
        verdict,
        severity,
        detail,
        answer: collected.answer,
        follow_up: true,
    }
}

/// `count` requests whose numeric ids run from 1: each must be answered exactly once.
pub(super) fn flood(session: &mut Session<'_>, what: &str, ops: Vec<Op>, count: u64) -> Judgement {
    let start = Instant::now();
    session.send_all(ops);
    let until = session.deadline;
    let tally = tally(session, count, until);
    let elapsed = start.elapsed();
    flood_judgement(what, count, &tally, elapsed, None)
}

pub(super) fn call_flood(session: &mut Session<'_>) -> Judgement {
    const COUNT: u64 = 10_000;
    let mut lines = Vec::new();
    for id in 1..=COUNT {
        lines.extend_from_slice(&session.probe.valid_call(&id.to_string()));
    }
    let what = format!("calls of {}", session.probe.name());
    flood(session, &what, vec![Op::Bytes(lines)], COUNT)
}

/// 10,000 `resources/subscribe`, each for its own URI, when the server offers subscriptions
/// (one subscribe first: a server without them answers `-32601`, and a flood of refusals
/// would only test its garbage cut-off, which `flood.pings-100000`'s kin already do).
pub(super) fn subscription_flood(session: &mut Session<'_>) -> Judgement {
    const COUNT: u64 = 10_000;
    let id = session.request(
        "resources/subscribe",
        Some(serde_json::json!({"uri": "audit://subscription/first"})),
    );
    let until = session.deadline;
    match session.await_reply(&id, until) {
        Ok(response) => {
            if let judge::Outcome::Error { code: -32601, .. } = response.outcome {
                return Judgement {
                    verdict: Verdict::Pass,
                    severity: None,
                    detail: "resources/subscribe answered -32601: subscriptions not offered, \
                             nothing to flood"
                        .to_owned(),
                    answer: None,
                    follow_up: true,
                };
            }
        }
        Err(why) => {
            return Judgement {
                verdict: Verdict::Fail,
                severity: Some(Severity::High),
                detail: format!("one resources/subscribe: {why}"),
                answer: None,
                follow_up: true,
            };
        }
    }
    flood(session, "resources/subscribe", subscriptions(COUNT), COUNT)
}

pub(super) fn unread_pings(session: &mut Session<'_>) -> Judgement {
    const COUNT: u64 = 500_000;
    let start = Instant::now();
    session.target().pause_reading(true);
    session.send(Op::Pings {
        first: 1,
        count: COUNT,
    });
    let unread_until = Instant::now().checked_add(Duration::from_secs(3));
    while unread_until.is_some_and(|until| Instant::now() < until) && !signals::interrupted() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let peak_unread = session.target().peak_kib();
    session.target().pause_reading(false);
    let until = session.deadline;
    let tally = tally(session, COUNT, until);
    flood_judgement("ping", COUNT, &tally, start.elapsed(), Some(peak_unread))
}

/// Counts of a flood's replies.
#[derive(Debug, Default)]
struct Tally {
    answered: u64,
    results: u64,
    tool_errors: u64,
    errors: u64,
    first_error: Option<(i64, u64)>,
}

fn tally(session: &mut Session<'_>, count: u64, until: Instant) -> Tally {
    let mut seen = vec![false; usize::try_from(count).unwrap_or(0)];
    let mut tally = Tally::default();
    while tally.answered < count {
        match session.next(until) {
            Next::Reply(Reply::Single(response), ..) => {
                let number = match &response.id {
                    Id::Number(text) => text.parse::<u64>().ok(),
                    _ => None,
                };
                let slot = number
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|index| usize::try_from(index).ok())
                    .and_then(|index| seen.get_mut(index));
                match slot {
                    Some(slot) if !*slot => {
                        *slot = true;
                        tally.answered = tally.answered.saturating_add(1);
                        match response.outcome {
                            judge::Outcome::Result {
                                is_error: false, ..
                            } => {
                                tally.results = tally.results.saturating_add(1);
                            }
                            judge::Outcome::Result { is_error: true, .. } => {
                                tally.tool_errors = tally.tool_errors.saturating_add(1);
                            }
                            judge::Outcome::Error { code, .. } => {
                                tally.errors = tally.errors.saturating_add(1);
                                if tally.first_error.is_none() {
                                    tally.first_error = Some((code, number.unwrap_or(0)));
                                }
                            }
                        }
                    }
                    Some(_) => session.find(Kind::TwoReplies, "two replies to one request"),
                    None => session.unexpected(&Reply::Single(response)),
                }
            }
            Next::Reply(other, ..) => session.unexpected(&other),
            Next::Timeout | Next::Closed => break,
        }
    }
    tally
}

fn flood_judgement(
    what: &str,
    count: u64,
    tally: &Tally,
    elapsed: Duration,
    peak_unread_kib: Option<u64>,
) -> Judgement {
    let mut detail = format!(
        "{} of {count} {what} answered in {:.2} s: {} results, {} tool errors, {} errors",
        tally.answered,
        elapsed.as_secs_f64(),
        tally.results,
        tally.tool_errors,
        tally.errors
    );
    if let Some((code, at)) = tally.first_error {
        detail.push_str(&format!(" (first error {code}, at request {at})"));
    }
    if let Some(kib) = peak_unread_kib {
        detail.push_str(&format!("; peak {:.1} MiB while unread", mib(kib)));
    }
    let (verdict, severity) = if tally.answered == count {
        (Verdict::Pass, None)
    } else {
        detail.push_str(": requests left unanswered");
        (Verdict::Fail, Some(Severity::High))
    };
    Judgement {
        verdict,
        severity,
        detail,
        answer: Some(elapsed),
        follow_up: true,
    }
}

/// Waits for the end after the input ended, and judges the exit.
fn judge_end(session: &mut Session<'_>, judged: judge::Judged) -> Judgement {
    let (mut verdict, mut severity, mut detail) = judged;
    let exit = session.drain_until_exit(session.deadline);
    let (exit_verdict, exit_severity, exit_text) = match exit {
        Some(Exit::Code(0)) => (Verdict::Pass, None, "exits with status 0".to_owned()),
        Some(Exit::Code(code)) => (
            Verdict::Note,
            Some(Severity::Low),
            format!("exits with status {code} at end of input"),
        ),
        Some(Exit::Signal(signal)) => (
            Verdict::Fail,
            Some(Severity::Critical),
            format!("killed by signal {signal} at end of input"),
        ),
        None => (
            Verdict::Note,
            Some(Severity::Low),
            "still running after end of input (MCP clients then send SIGTERM)".to_owned(),
        ),
    };
    verdict = verdict.max(exit_verdict);
    severity = severity.max(exit_severity);
    detail = format!("{detail}; {exit_text}");
    Judgement {
        verdict,
        severity,
        detail,
        answer: None,
        follow_up: false,
    }
}

/// Collects every reply until stdout closes or the deadline.
fn replies_until_end(session: &mut Session<'_>) -> (Vec<Reply>, Option<Duration>) {
    let start = session
        .wait_written(session.deadline)
        .unwrap_or_else(Instant::now);
    let mut replies = Vec::new();
    let mut answer = None;
    let until = session.deadline;
    while let Next::Reply(reply, at, _) = session.next(until) {
        answer = answer.or(Some(at.saturating_duration_since(start)));
        replies.push(reply);
    }
    (replies, answer)
}

pub(super) fn eof_at_start(session: &mut Session<'_>) -> Judgement {
    session.send(Op::Close);
    let (replies, _) = replies_until_end(session);
    let judged = judge(&[pass(When::Silent)], &replies, None);
    judge_end(session, judged)
}

pub(super) fn eof_mid_message(session: &mut Session<'_>) -> Judgement {
    session.send_all(vec![
        Op::Bytes(br#"{"jsonrpc":"2.0","id":7,"meth"#.to_vec()),
        Op::Close,
    ]);
    let (replies, answer) = replies_until_end(session);
    let arms = [
        pass(When::Silent),
        pass(When::Error(&[-32700, -32600], NULL)),
    ];
    let judged = judge(&arms, &replies, None);
    let mut judgement = judge_end(session, judged);
    judgement.answer = answer;
    judgement
}

pub(super) fn eof_call_in_flight(session: &mut Session<'_>) -> Judgement {
    let call = session.probe.valid_call("7");
    session.send_all(vec![Op::Bytes(call), Op::Close]);
    let (replies, answer) = replies_until_end(session);
    let arms = [
        pass(When::Result(SENT)),
        pass(When::Error(ANY_CODE, SENT)),
        note(
            When::Silent,
            "exits without answering a call it had read (the client loses its answer)",
        ),
    ];
    let judged = judge(&arms, &replies, Id::from_json("7").as_ref());
    let mut judgement = judge_end(session, judged);
    judgement.answer = answer;
    judgement
}

pub(super) fn no_newline_then_eof(session: &mut Session<'_>, bytes: u64) -> Judgement {
    let mut ops = big_string_ping(bytes).ops;
    // The same ping without its newline, then the end of input.
    if let Some(Op::Bytes(tail)) = ops.last_mut() {
        tail.pop();
    }
    ops.push(Op::Close);
    session.send_all(ops);
    let (replies, answer) = replies_until_end(session);
    let arms = [
        pass(When::Silent),
        pass(When::Error(&[-32700, -32600], NULL)),
        pass(When::Result(SENT)),
        pass(When::Error(ANY_CODE, SENT)),
    ];
    let judged = judge(&arms, &replies, Id::from_json("7").as_ref());
    let mut judgement = judge_end(session, judged);
    judgement.answer = answer;
    judgement
}

fn mib(kib: u64) -> f64 {
    f64::from(u32::try_from(kib).unwrap_or(u32::MAX)) / 1024.0
}
