//! Argument completion (`completion/complete`): suggestions for a prompt's argument or a
//! resource template's variable, from a function the program registers for it.
//!
//! The peer names what it completes and gives the text typed so far; both are checked (a
//! string within the argument bounds, an argument the prompt or template has) before the
//! completer runs. What a completer returns is bounded before it is sent: at most
//! [`MAX_COMPLETION_VALUES`] values (the specification's cap), each of at most
//! [`MAX_COMPLETION_VALUE_BYTES`] bytes (longer ones are dropped, not cut), with `total` and
//! `hasMore` saying what was left out. An argument without a completer completes to nothing.
//! Completers are synchronous and run inline under the engine's panic guard.

use std::sync::Arc;

use serde::Serialize;

use crate::limits::{MAX_COMPLETION_VALUE_BYTES, MAX_COMPLETION_VALUES};

/// A completer: the text typed so far in, suggestions out.
pub(crate) type Completer = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// The completers of one prompt or template, by argument name.
#[derive(Clone, Default)]
pub(crate) struct Completers(Vec<(String, Completer)>);

impl Completers {
    /// Adds `completer` for `argument`, replacing one given before.
    pub(crate) fn insert(&mut self, argument: String, completer: Completer) {
        self.0.retain(|(name, _)| *name != argument);
        self.0.push((argument, completer));
    }

    /// The argument names that have a completer.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(name, _)| name.as_str())
    }

    /// The bounded suggestions for `argument` given `typed`.
    pub(crate) fn complete(&self, argument: &str, typed: &str) -> Completion {
        let Some((_, completer)) = self.0.iter().find(|(name, _)| name == argument) else {
            return Completion::default();
        };
        let values = completer(typed);
        let total = values.len();
        let kept: Vec<String> = values
            .into_iter()
            .filter(|value| value.len() <= MAX_COMPLETION_VALUE_BYTES)
            .take(MAX_COMPLETION_VALUES)
            .collect();
        Completion {
            has_more: kept.len() < total,
            total,
            values: kept,
        }
    }
}

impl std::fmt::Debug for Completers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// `completion/complete`'s `completion` member.
#[derive(Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Completion {
    pub(crate) values: Vec<String>,
    pub(crate) total: usize,
    pub(crate) has_more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_capped_in_number_and_length_and_say_what_was_left_out() {
        let mut completers = Completers::default();
        completers.insert(
            "city".into(),
            Arc::new(|typed: &str| {
                let mut values: Vec<String> = (0..150).map(|i| format!("{typed}{i}")).collect();
                values.insert(0, "x".repeat(MAX_COMPLETION_VALUE_BYTES + 1));
                values
            }),
        );
        let completion = completers.complete("city", "par");
        assert_eq!(completion.values.len(), MAX_COMPLETION_VALUES);
        assert_eq!(completion.values.first().map(String::as_str), Some("par0"));
        assert_eq!(completion.total, 151);
        assert!(completion.has_more);
        assert_eq!(completers.complete("other", "p"), Completion::default());
    }
}
