//! A task's run: its call driven to its end on a tokio task of its own, outside any session,
//! with its progress kept in the table and its end handed to it.

use std::sync::{Arc, Weak};

use crate::asking::ClientCan;
use crate::call::Call;
use crate::handler::{CallContext, Event, Report};
use crate::so_far::OutputSoFar;

use super::{Owner, TaskId, Tasks};

/// Drives `call` (task `task` of `owner`) to its end. The run holds the table weakly: the
/// server's end drops the table, which cancels the runs still going.
pub(crate) async fn run(
    call: Call,
    table: Weak<Tasks>,
    (owner, task): (Owner, TaskId),
    so_far: Arc<OutputSoFar>,
    #[cfg(feature = "metrics")] counted: Option<crate::metrics::InFlight>,
    #[cfg(feature = "otel")] traced: Option<crate::otel::RunSpan>,
) {
    // Progress is kept for `tasks/get`; log messages have no reader; questions are refused
    // (no client capability is declared to the run).
    let (events, mut reports) = tokio::sync::mpsc::channel(8);
    let context = CallContext::reporter(
        call.ticket().clone(),
        events,
        (true, false),
        ClientCan::default(),
    )
    .keeping(so_far);
    let running = call.run(context);
    tokio::pin!(running);
    let completion = loop {
        tokio::select! {
            completion = &mut running => break completion,
            Some(Event(report)) = reports.recv() => {
                if let (Report::Progress(report), Some(table)) = (report, table.upgrade()) {
                    table.progress(&owner, task, report.progress, report.total, report.message);
                }
            }
        }
    };
    #[cfg(feature = "otel")]
    if let Some(traced) = traced {
        let note = match &completion.outcome {
            crate::handler::Outcome::Finished(output) => Some(&output.note),
            _ => None,
        };
        traced.end(note);
    }
    #[cfg_attr(
        not(feature = "metrics"),
        expect(unused_variables, reason = "only the metrics read how the run ended")
    )]
    let ended = table
        .upgrade()
        .and_then(|table| table.finish(&owner, task, completion.outcome));
    // Ended before the run did (cancelled, expired): the guard, dropped unfinished, counts
    // the run as cancelled.
    #[cfg(feature = "metrics")]
    if let (Some(counted), Some(ended)) = (counted, ended) {
        counted.ran(ended);
    }
}

/// Forgets a task (stopping its run) when dropped armed: held by a 2026-07-28 call waiting on
/// the task it runs as, so a call cancelled or abandoned before its reply (which would have
/// given the task's id) leaves no task nobody can read.
pub(crate) struct ForgetUnlessAnswered {
    table: Weak<Tasks>,
    owner: Owner,
    task: TaskId,
    armed: bool,
}

impl ForgetUnlessAnswered {
    /// Arms the guard for task `task` of `owner`.
    pub(crate) fn new(table: Weak<Tasks>, owner: Owner, task: TaskId) -> Self {
        Self {
            table,
            owner,
            task,
            armed: true,
        }
    }

    /// The wait ended: its reply is owed, the task is the reply's to keep or forget.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for ForgetUnlessAnswered {
    fn drop(&mut self) {
        if self.armed
            && let Some(table) = self.table.upgrade()
        {
            table.forget(&self.owner, self.task);
        }
    }
}
