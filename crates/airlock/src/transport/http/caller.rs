//! Who sent a request, as the boundary's checks found it: the token's identity and scopes,
//! the client key its limits count by, and its address. A module of its own because the
//! request's handling (`request`) and a `GET` stream (`listen`) both take it, and `request`
//! hands `GET` to `listen`.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use crate::call_log::Client as AuditClient;

use super::clients::ClientKey;

/// Who sent a request.
pub(super) struct Caller {
    /// The identity its token proved, if tokens are configured.
    pub(super) identity: Option<Arc<str>>,
    /// An access token's scopes; `None` for a caller that is not scoped (a static token,
    /// anonymous on loopback).
    pub(super) scopes: Option<Arc<[Box<str>]>>,
    /// When its access token stops being accepted; a `GET` stream it opens ends then.
    pub(super) expires: Option<SystemTime>,
    /// Who it is for its limits.
    pub(super) client: ClientKey,
    /// The client's address, unmasked (for the audit record).
    pub(super) address: IpAddr,
}

impl Caller {
    /// The caller as an audit record names it.
    pub(super) fn audited(&self) -> AuditClient {
        AuditClient::Http {
            address: self.address,
            identity: self.identity.clone(),
        }
    }
}
