use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::limits::{Limits, TASK_ENTRY_BYTES};
use crate::tools::{Registry, Tool};
use crate::{NoArguments, TaskMode};

fn tool() -> Arc<ToolDef> {
    let tool = Tool::builder("build")
        .description("Builds")
        .task(TaskMode::Optional)
        .handler(|_: NoArguments| async { "built" });
    let registry = Registry::new(vec![tool]).unwrap();
    Arc::clone(registry.get("build").unwrap())
}

fn owner(n: u128) -> Owner {
    Owner::Session(n, None)
}

fn limits() -> Limits {
    Limits {
        max_tasks_running: NonZeroUsize::new(3).unwrap(),
        max_tasks_running_per_client: NonZeroUsize::new(2).unwrap(),
        max_tasks_kept_per_client: NonZeroUsize::new(3).unwrap(),
        max_task_result_bytes: NonZeroUsize::new(100).unwrap(),
        max_task_bytes: NonZeroUsize::new(1000).unwrap(),
        ..Limits::default()
    }
}

fn finish(tasks: &Tasks, who: &Owner, id: TaskId, text: &str) {
    tasks.finish(
        who,
        id,
        Outcome::Finished(ToolOutput::text(text.to_owned())),
    );
}

fn limit_of(error: McpError) -> &'static str {
    match error {
        McpError::TooManyTasks { limit, .. } => limit,
        other => panic!("not a task bound: {other:?}"),
    }
}

#[test]
fn another_owner_gets_exactly_what_an_unknown_id_gets() {
    let tasks = Tasks::default();
    let (a, b) = (owner(1), owner(2));
    let (id, view, _) = tasks.create(&a, &limits(), tool(), None, None).unwrap();
    assert_eq!(view.status, Status::Working);
    let never = TaskId::random();
    for who in [&b] {
        for id in [Some(id), never, None] {
            assert!(matches!(tasks.get(who, id), Err(McpError::UnknownTask)));
            assert!(matches!(tasks.result(who, id), Err(McpError::UnknownTask)));
            assert!(matches!(tasks.cancel(who, id), Err(McpError::UnknownTask)));
        }
        assert!(tasks.list(who).is_empty());
    }
    // B's tries changed nothing: A's task runs on.
    assert_eq!(tasks.get(&a, Some(id)).unwrap().status, Status::Working);
    assert_eq!(tasks.list(&a).len(), 1);
    let identity = Owner::Identity(Arc::from("A_TOKEN"));
    assert!(matches!(
        tasks.get(&identity, Some(id)),
        Err(McpError::UnknownTask)
    ));
}

#[test]
fn bounds_refuse_with_the_bound_they_hit() {
    let tasks = Tasks::default();
    let limits = limits();
    let (a, b) = (owner(1), owner(2));
    let (first, _, _) = tasks.create(&a, &limits, tool(), None, None).unwrap();
    tasks.create(&a, &limits, tool(), None, None).unwrap();
    let refused = tasks.create(&a, &limits, tool(), None, None).unwrap_err();
    assert_eq!(limit_of(refused), "max_tasks_running_per_client");
    tasks.create(&b, &limits, tool(), None, None).unwrap();
    let refused = tasks
        .create(&owner(3), &limits, tool(), None, None)
        .unwrap_err();
    assert_eq!(limit_of(refused), "max_tasks_running");
    // A finished task frees its running slot but is still kept.
    finish(&tasks, &a, first, "done");
    tasks.create(&a, &limits, tool(), None, None).unwrap();
    finish(&tasks, &a, first, "twice: ignored");
    let refused = tasks.create(&a, &limits, tool(), None, None).unwrap_err();
    assert_eq!(limit_of(refused), "max_tasks_running_per_client");
    // The byte budget: 1000 bytes hold ten reservations of 100.
    let small = Limits {
        max_task_bytes: NonZeroUsize::new(250).unwrap(),
        ..limits
    };
    let tasks = Tasks::default();
    tasks.create(&a, &small, tool(), None, None).unwrap();
    tasks.create(&b, &small, tool(), None, None).unwrap();
    let refused = tasks
        .create(&owner(3), &small, tool(), None, None)
        .unwrap_err();
    assert_eq!(limit_of(refused), "max_task_bytes");
    assert_eq!(
        McpError::TooManyTasks {
            limit: "max_task_bytes",
            value: 250
        }
        .to_wire()
        .code
        .get(),
        -31_503
    );
}

#[test]
fn finished_tasks_are_kept_per_owner_up_to_the_bound_and_a_result_past_its_reservation_is_not() {
    let tasks = Tasks::default();
    let limits = limits();
    let a = owner(1);
    for text in ["one", "two", &"x".repeat(101)] {
        let (id, _, _) = tasks.create(&a, &limits, tool(), None, None).unwrap();
        finish(&tasks, &a, id, text);
    }
    let refused = tasks.create(&a, &limits, tool(), None, None).unwrap_err();
    assert_eq!(limit_of(refused), "max_tasks_kept_per_client");
    let listed = tasks.list(&a);
    assert_eq!(listed.len(), 3);
    let last = listed.last().unwrap().task_id;
    assert_eq!(listed.last().unwrap().status, Status::Completed);
    let Ok(Waiting::Ended(ended)) = tasks.result(&a, Some(last)) else {
        panic!("no result")
    };
    let Final::Output(output) = &*ended else {
        panic!("no output")
    };
    assert_eq!(output.text_content(), TOO_LARGE);
}

#[test]
fn cancel_ends_a_running_task_once_and_a_finished_one_is_refused() {
    let tasks = Tasks::default();
    let a = owner(1);
    let (id, _, _) = tasks.create(&a, &limits(), tool(), None, None).unwrap();
    let view = tasks.cancel(&a, Some(id)).unwrap();
    assert_eq!(view.status, Status::Cancelled);
    assert!(matches!(
        tasks.cancel(&a, Some(id)),
        Err(McpError::TaskEnded)
    ));
    // The run's own end, after the cancel, changes nothing.
    finish(&tasks, &a, id, "late");
    assert_eq!(tasks.get(&a, Some(id)).unwrap().status, Status::Cancelled);
    let Ok(Waiting::Ended(ended)) = tasks.result(&a, Some(id)) else {
        panic!("no result")
    };
    let Final::Output(output) = &*ended else {
        panic!("no output")
    };
    assert!(output.is_error());
    let (done, _, _) = tasks.create(&a, &limits(), tool(), None, None).unwrap();
    finish(&tasks, &a, done, "ok");
    assert!(matches!(
        tasks.cancel(&a, Some(done)),
        Err(McpError::TaskEnded)
    ));
    assert_eq!(tasks.get(&a, Some(done)).unwrap().status, Status::Completed);
}

#[test]
fn error_results_timeouts_and_panics_fail_the_task() {
    let tasks = Tasks::default();
    let a = owner(1);
    for outcome in [
        Outcome::Finished(ToolOutput::error("no")),
        Outcome::TimedOut(Duration::from_secs(1)),
        Outcome::Panicked,
    ] {
        let (id, _, _) = tasks.create(&a, &limits(), tool(), None, None).unwrap();
        tasks.finish(&a, id, outcome);
        assert_eq!(tasks.get(&a, Some(id)).unwrap().status, Status::Failed);
    }
}

#[test]
fn a_finished_task_is_forgotten_after_its_keep_and_frees_its_reservation() {
    let tasks = Tasks::default();
    let limits = Limits {
        max_task_bytes: NonZeroUsize::new(100).unwrap(),
        ..limits()
    };
    let a = owner(1);
    let (id, view, _) = tasks.create(&a, &limits, tool(), Some(0), None).unwrap();
    // A ttl below the shortest keep is raised to it; the ttl reported covers the run.
    assert!(view.ttl >= u64::try_from(MIN_TASK_KEEP.as_millis()).unwrap());
    finish(&tasks, &a, id, "done");
    assert_eq!(
        tasks
            .lock()
            .values()
            .map(|task| task.reserved)
            .sum::<usize>(),
        100
    );
    {
        let mut table = tasks.lock();
        sweep(&mut table, Instant::now() + MIN_TASK_KEEP);
    }
    assert!(matches!(
        tasks.get(&a, Some(id)),
        Err(McpError::UnknownTask)
    ));
    assert!(tasks.lock().is_empty());
    tasks.create(&a, &limits, tool(), None, None).unwrap();
}

/// Room for three reservations of 100 bytes, with counts that never bind first.
fn three_reservations() -> Limits {
    Limits {
        max_task_bytes: NonZeroUsize::new(300).unwrap(),
        max_tasks_running: NonZeroUsize::new(10).unwrap(),
        max_tasks_kept_per_client: NonZeroUsize::new(10).unwrap(),
        ..limits()
    }
}

#[test]
fn finished_results_give_way_to_new_tasks_heaviest_owner_first() {
    let tasks = Tasks::default();
    // Room for three reservations of 100; a finished result keeps all of its 100 here (the
    // least a finished task keeps, TASK_ENTRY_BYTES, is more).
    let limits = three_reservations();
    let (heavy, light, third) = (owner(1), owner(2), owner(3));
    let mut heavy_ids = Vec::new();
    for text in ["a".repeat(90), "b".repeat(90)] {
        let (id, _, _) = tasks.create(&heavy, &limits, tool(), None, None).unwrap();
        finish(&tasks, &heavy, id, &text);
        heavy_ids.push(id);
    }
    let (light_id, _, _) = tasks.create(&light, &limits, tool(), None, None).unwrap();
    finish(&tasks, &light, light_id, &"c".repeat(50));
    // 300 bytes kept: a new task's 100 fits once the heavy owner's oldest result is forgotten.
    let (running, _, _) = tasks.create(&third, &limits, tool(), None, None).unwrap();
    assert!(matches!(
        tasks.get(&heavy, heavy_ids.first().copied()),
        Err(McpError::UnknownTask)
    ));
    assert_eq!(
        tasks.get(&heavy, heavy_ids.get(1).copied()).unwrap().status,
        Status::Completed
    );
    assert_eq!(
        tasks.get(&light, Some(light_id)).unwrap().status,
        Status::Completed
    );
    // Running tasks are never forgotten: three running fill the budget, a fourth is refused.
    tasks.create(&light, &limits, tool(), None, None).unwrap();
    tasks.create(&heavy, &limits, tool(), None, None).unwrap();
    let refused = tasks
        .create(&owner(4), &limits, tool(), None, None)
        .unwrap_err();
    assert_eq!(limit_of(refused), "max_task_bytes");
    let reserved: usize = tasks.lock().values().map(|task| task.reserved).sum();
    assert!(reserved <= 300, "{reserved}");
    assert_eq!(
        tasks.get(&third, Some(running)).unwrap().status,
        Status::Working
    );
}

#[test]
fn many_light_sessions_of_one_client_weigh_as_that_client_when_results_give_way() {
    let tasks = Tasks::default();
    let limits = three_reservations();
    let from = |address: &str| Some(network_of(address.parse().unwrap()));
    // The victim's result is the oldest; the other client's two sessions hold one each, as
    // much as the victim per session.
    let victim = Owner::Session(1, from("192.0.2.1"));
    let (kept, _, _) = tasks.create(&victim, &limits, tool(), None, None).unwrap();
    finish(&tasks, &victim, kept, &"v".repeat(90));
    let sessions: Vec<Owner> = (10..13)
        .map(|n| Owner::Session(n, from("2001:db8:1:2::7")))
        .collect();
    let mut theirs = Vec::new();
    for (n, session) in sessions.iter().take(2).enumerate() {
        // Another host of the same /64: the same client.
        let session = if n == 1 {
            &Owner::Session(11, from("2001:db8:1:2:ffff::1"))
        } else {
            session
        };
        let (id, _, _) = tasks.create(session, &limits, tool(), None, None).unwrap();
        finish(&tasks, session, id, "x");
        theirs.push((session.clone(), id));
    }
    // A third session of theirs makes room: their oldest result goes, not the victim's.
    tasks
        .create(&sessions[2], &limits, tool(), None, None)
        .unwrap();
    assert_eq!(
        tasks.get(&victim, Some(kept)).unwrap().status,
        Status::Completed
    );
    let (first, id) = &theirs[0];
    assert!(matches!(
        tasks.get(first, Some(*id)),
        Err(McpError::UnknownTask)
    ));
}

#[test]
fn a_network_is_an_ipv4_address_or_an_ipv6_slash_64() {
    let of = |text: &str| network_of(text.parse().unwrap());
    assert_eq!(of("192.0.2.1"), of("::ffff:192.0.2.1"));
    assert_ne!(of("192.0.2.1"), of("192.0.2.2"));
    assert_eq!(of("2001:db8:1:2::1"), of("2001:db8:1:2:abcd::9"));
    assert_ne!(of("2001:db8:1:2::1"), of("2001:db8:1:3::1"));
}

#[test]
fn a_session_end_cancels_and_forgets_only_its_own_tasks() {
    let tasks = Tasks::default();
    let (a, b) = (owner(1), owner(2));
    let (mine, _, _) = tasks.create(&a, &limits(), tool(), None, None).unwrap();
    let (theirs, _, _) = tasks.create(&b, &limits(), tool(), None, None).unwrap();
    let mut done = match tasks.result(&a, Some(mine)).unwrap() {
        Waiting::Running { done, .. } => done,
        Waiting::Ended(_) => panic!("ended"),
    };
    tasks.end_session(&a);
    assert!(done.borrow_and_update().is_some());
    assert!(tasks.list(&a).is_empty());
    assert_eq!(tasks.get(&b, Some(theirs)).unwrap().status, Status::Working);
}

#[test]
fn progress_is_shown_while_the_task_runs_and_bounded() {
    let tasks = Tasks::default();
    let a = owner(1);
    let (id, _, so_far) = tasks.create(&a, &limits(), tool(), None, None).unwrap();
    tasks.progress(&a, id, 2.0, Some(5.0), Some("é".repeat(1000)));
    so_far.render_with(|bytes, dropped| format!("{dropped} {}", String::from_utf8_lossy(bytes)));
    so_far.push(b"step 1\n");
    so_far.push(&[b'x'; 200]);
    tasks.progress(&a, id, f64::NAN, None, None);
    let view = serde_json::to_value(tasks.get(&a, Some(id)).unwrap()).unwrap();
    let progress = &view["_meta"]["airlock/progress"];
    assert_eq!(progress["progress"], 2.0);
    assert_eq!(progress["total"], 5.0);
    assert!(progress["message"].as_str().unwrap().len() <= 256);
    // The last `max_task_result_bytes` (100 here) of the output, as its rendering shows them.
    assert_eq!(
        view["_meta"]["airlock/output"],
        format!("true {}", "x".repeat(100))
    );
    assert_eq!(view["taskId"], id.to_string());
    assert_eq!(view["pollInterval"], 1000);
    assert!(view["createdAt"].as_str().unwrap().ends_with('Z'));
    finish(&tasks, &a, id, "done");
    let view = serde_json::to_value(tasks.get(&a, Some(id)).unwrap()).unwrap();
    assert!(view.get("_meta").is_none());
    assert_eq!(view["status"], "completed");
}

#[test]
fn finished_tasks_of_many_owners_are_bounded_by_the_budget_in_all() {
    let tasks = Tasks::default();
    let limits = Limits {
        max_task_result_bytes: NonZeroUsize::new(TASK_ENTRY_BYTES * 2).unwrap(),
        max_task_bytes: NonZeroUsize::new(TASK_ENTRY_BYTES * 10).unwrap(),
        ..Limits::default()
    };
    // Each owner finishes one task with a tiny result: it keeps TASK_ENTRY_BYTES, not 2 bytes.
    // Every owner is served; the oldest results make room for the newest.
    for n in 0..100 {
        let who = owner(n);
        let (id, _, _) = tasks.create(&who, &limits, tool(), None, None).unwrap();
        finish(&tasks, &who, id, "ok");
    }
    let table = tasks.lock();
    assert_eq!(
        table.len(),
        9,
        "nine finished (4 KiB each) leave room for a tenth's 8 KiB and no more"
    );
    assert!(table.keys().any(|(who, _)| *who == owner(99)));
}
