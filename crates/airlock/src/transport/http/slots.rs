//! The slots a call holds: the server-wide one, the client's, and (with the shared store)
//! their leases. A module of its own because both a call's task (`calls`) and its reply's
//! body (`body`) hold them, and neither may import the other back.

use tokio::sync::OwnedSemaphorePermit;

use super::clients::Slot;

/// The slots a call holds, shared by its task and its reply's body: given back once the call
/// has ended and its reply has been written (or dropped), however each ends.
pub(super) struct CallSlots {
    pub(super) _server: OwnedSemaphorePermit,
    /// The client's slot when counted here.
    pub(super) _client: Option<Slot>,
    /// The server's and the client's leases when counted in the shared store.
    pub(super) _lease: Option<super::store::Lease>,
}
