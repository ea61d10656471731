//! The launcher's side of a networked tool's network: its namespace's loopback brought up,
//! and the proxy's listening socket made on it, to be handed to airlock (`super::channel`).
//!
//! Every launcher has a network namespace of its own. Without `network` nothing in it is up.
//! With `network`, only loopback is, and on it only [`super::proxy::PROXY_ADDRESS`], which
//! the launcher binds before it confines itself and whose listening socket it sends to
//! airlock: airlock accepts the command's connections on it from outside the namespace and
//! proxies them (`super::proxy`). No route leads anywhere else, so a program that ignores the
//! proxy variables reaches nothing; UDP reaches nothing (names are resolved by the proxy).

use std::os::fd::OwnedFd;

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// Brings loopback up in this process's (new) network namespace and listens on the proxy's
/// address there; returns the listening socket.
///
/// # Errors
///
/// The step that failed, in fixed words.
pub(crate) fn proxy_listener() -> Result<OwnedFd, &'static str> {
    loopback_up()?;
    let listener = std::net::TcpListener::bind(super::proxy::PROXY_ADDRESS)
        .map_err(|_| "binding the proxy's address")?;
    Ok(OwnedFd::from(listener))
}

/// `RTM_NEWLINK` for interface 1 (loopback is always the first interface of a namespace) with
/// `IFF_UP` set, over route netlink, and its acknowledgement.
fn loopback_up() -> Result<(), &'static str> {
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_ACK: u16 = 4;
    const NLMSG_ERROR: u16 = 2;
    const IFF_UP: u32 = 1;
    const LOOPBACK_INDEX: i32 = 1;
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|_| "opening a route netlink socket")?;
    // nlmsghdr (16 bytes) then ifinfomsg (16 bytes), native byte order.
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32_u32.to_ne_bytes());
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    message.extend_from_slice(&1_u32.to_ne_bytes()); // sequence
    message.extend_from_slice(&0_u32.to_ne_bytes()); // port id: the kernel assigns
    message.extend_from_slice(&[0, 0]); // family AF_UNSPEC, padding
    message.extend_from_slice(&0_u16.to_ne_bytes()); // device type
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // flags
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // change mask
    let sent = rustix::net::send(&socket, &message, SendFlags::empty())
        .map_err(|_| "asking for loopback")?;
    if sent != message.len() {
        return Err("asking for loopback");
    }
    let mut answer = [0_u8; 256];
    let (read, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty())
        .map_err(|_| "reading the answer about loopback")?;
    // nlmsghdr's type at bytes 4..6; an NLMSG_ERROR whose error (bytes 16..20) is 0 is the
    // acknowledgement.
    let kind = answer
        .get(4..6)
        .and_then(|bytes| <[u8; 2]>::try_from(bytes).ok())
        .map(u16::from_ne_bytes);
    let error = answer
        .get(16..20)
        .filter(|_| read >= 20)
        .and_then(|bytes| <[u8; 4]>::try_from(bytes).ok())
        .map(i32::from_ne_bytes);
    match (kind, error) {
        (Some(NLMSG_ERROR), Some(0)) => Ok(()),
        _ => Err("bringing loopback up"),
    }
}
