//! The Redis store's keys: one type per family, each rendering its key under the
//! deployment's namespace (`airlock:<namespace>:`), so no call site builds a key from text.
//!
//! Trusts what the seam's types hold (checked by the request path) and the operator's
//! namespace (checked by `SharedStore::redis`). Owns the key space, which replicas of every
//! release of one deployment share, so it never changes shape:
//!
//! | family | key | value |
//! |---|---|---|
//! | quota window ([`QuotaKey`]) | `q:client-requests:<client>`, `q:cheap`, `q:client-calls:<client>`, `q:tool:<name>`, `q:calls` | a GCRA theoretical arrival time (µs) |
//! | lease ([`LeaseKey`]) | `l:calls`, `l:client:<client>` | a sorted set of call members scored by expiry |
//! | session ([`SessionKey`]) | `s:<id>` | a session record (`record`) |
//!
//! `<client>` is `id=<identity>`, `ip=<masked address>`, `page=<address>` or
//! `page=<address>/<origin>` ([`ClientKey`]): never anything the peer wrote. A session's
//! `<id>` is only ever one of the form this server makes (64 lowercase hex digits).

use std::fmt::Write as _;

use super::super::clients::ClientKey;
use super::{LeaseKey, QuotaKey};

/// The prefix of every key of one deployment: `airlock:<namespace>:`.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(super) struct Namespace {
    prefix: String,
}

impl Namespace {
    /// The keys under `namespace` (already checked: `[A-Za-z0-9_.-]`, 1 to 64 bytes).
    pub(super) fn new(namespace: &str) -> Self {
        Self {
            prefix: format!("airlock:{namespace}:"),
        }
    }

    /// A key of this namespace: the prefix, then `parts` (each from a checked value)
    /// separated by `:`; `client` last, when there is one.
    fn key(&self, parts: &[&str], client: Option<&ClientKey>) -> String {
        let mut key = self.prefix.clone();
        for (index, part) in parts.iter().enumerate() {
            if index > 0 {
                key.push(':');
            }
            key.push_str(part);
        }
        if let Some(client) = client {
            key.push(':');
            push_client(&mut key, client);
        }
        key
    }
}

impl QuotaKey<'_> {
    /// This quota's key in `namespace`.
    pub(super) fn render(&self, namespace: &Namespace) -> String {
        match *self {
            Self::ClientRequests(client) => namespace.key(&["q", "client-requests"], Some(client)),
            Self::CheapMethods => namespace.key(&["q", "cheap"], None),
            Self::ClientCalls(client) => namespace.key(&["q", "client-calls"], Some(client)),
            Self::Tool(name) => namespace.key(&["q", "tool", name], None),
            Self::ServerCalls => namespace.key(&["q", "calls"], None),
        }
    }
}

impl LeaseKey<'_> {
    /// This cap's key in `namespace`.
    pub(super) fn render(&self, namespace: &Namespace) -> String {
        match *self {
            Self::ServerCalls => namespace.key(&["l", "calls"], None),
            Self::Client(client) => namespace.key(&["l", "client"], Some(client)),
        }
    }
}

/// The key of a legacy session: only for an id of the form this server makes.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(super) struct SessionKey<'a> {
    id: &'a str,
}

impl<'a> SessionKey<'a> {
    /// The key of session `id`, if `id` has the form of the ids this server makes (64
    /// lowercase hex digits): no other text a peer sends reaches the store.
    pub(super) fn of(id: &'a str) -> Option<Self> {
        let ours = id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        ours.then_some(Self { id })
    }

    /// This session's key in `namespace`.
    pub(super) fn render(&self, namespace: &Namespace) -> String {
        namespace.key(&["s", self.id], None)
    }
}

/// A client as its keys name it: its identity (an operator-chosen variable name) or its
/// (masked) address; never anything the peer wrote.
fn push_client(key: &mut String, client: &ClientKey) {
    // Writing to a `String` cannot fail.
    let _infallible = match client {
        ClientKey::Identity(identity) => write!(key, "id={identity}"),
        ClientKey::Address(address) => write!(key, "ip={address}"),
        ClientKey::Page {
            address,
            origin: None,
        } => write!(key, "page={address}"),
        ClientKey::Page {
            address,
            origin: Some(origin),
        } => write!(key, "page={address}/{origin}"),
    };
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;

    use super::*;

    /// The key space is shared with running replicas of earlier releases: these are the
    /// exact keys they use.
    #[test]
    fn every_family_renders_the_keys_replicas_share() {
        let namespace = Namespace::new("prod");
        let alice = ClientKey::of(Some(&Arc::from("ALICE")), IpAddr::V4(Ipv4Addr::LOCALHOST));
        let address = ClientKey::of(None, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        let cases = [
            (
                QuotaKey::ClientRequests(&alice).render(&namespace),
                "airlock:prod:q:client-requests:id=ALICE",
            ),
            (
                QuotaKey::CheapMethods.render(&namespace),
                "airlock:prod:q:cheap",
            ),
            (
                QuotaKey::ClientCalls(&address).render(&namespace),
                "airlock:prod:q:client-calls:ip=10.0.0.1",
            ),
            (
                QuotaKey::Tool("echo").render(&namespace),
                "airlock:prod:q:tool:echo",
            ),
            (
                QuotaKey::ServerCalls.render(&namespace),
                "airlock:prod:q:calls",
            ),
            (
                LeaseKey::ServerCalls.render(&namespace),
                "airlock:prod:l:calls",
            ),
            (
                LeaseKey::Client(&alice).render(&namespace),
                "airlock:prod:l:client:id=ALICE",
            ),
        ];
        for (rendered, expected) in cases {
            assert_eq!(rendered, expected);
        }
    }

    #[test]
    fn only_ids_of_our_own_form_name_a_session_key() {
        let namespace = Namespace::new("t");
        let id = "0123456789abcdef".repeat(4);
        assert_eq!(
            SessionKey::of(&id).map(|key| key.render(&namespace)),
            Some(format!("airlock:t:s:{id}"))
        );
        for bad in [
            "",
            "ABCDEF0123456789".repeat(4).as_str(),
            &"0".repeat(63),
            &"0".repeat(65),
            "*",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde:",
        ] {
            assert_eq!(SessionKey::of(bad), None, "{bad:?}");
        }
    }
}
