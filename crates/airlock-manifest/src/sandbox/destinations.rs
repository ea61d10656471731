//! Where a tool's commands may connect: the manifest's `network` as a policy the proxy
//! (`super::proxy`) applies to every connection, at connect time, to the address it resolved
//! itself.
//!
//! `network = ["api.github.com:443", "*.githubusercontent.com:443", "10.1.2.3:5432"]` names
//! destinations; `network = true` means any public destination. Either way the command has no
//! route out of its network namespace but to the proxy (`super::launcher`), so the list is the
//! whole of what it can reach.
//!
//! The rules, default deny:
//!
//! - a **name** (`host` or `host:port`) matches that host exactly; `*.example.com` matches
//!   every name below `example.com` (not `example.com` itself). Without a port a name means
//!   ports 443 and 80. Names are compared lowercase, without a trailing dot.
//! - an **address or CIDR** with a port (`10.1.2.3:5432`, `10.0.0.0/8:5432`,
//!   `[fd00::1]:8080`, `[fd00::/8]:8080`) matches those addresses on that port. An address
//!   needs its port: "every port of a database host" is not a destination.
//! - a name that matches is resolved by airlock, and the connection goes to the first
//!   address that is **public** or that an address rule names. A name that resolves only to
//!   loopback, link-local (the cloud metadata service at 169.254.169.254), private (RFC 1918,
//!   CGNAT, ULA) or other special addresses is refused: a listed name cannot be pointed at
//!   the inside (DNS rebinding), and a destination that is inside must be named by address.
//! - `network = true` admits any name and any public address, on any port; never the special
//!   ranges, unless an address rule names them.
//! - airlock's own listeners (`--http`) are refused unless an address rule names them.
//!
//! Everything here is pure: parsing and deciding, no I/O but `is_local`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The destinations of one tool.
#[derive(Clone, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Destinations {
    /// `network = true`: any public destination.
    pub any_public: bool,
    /// The destinations named in the list.
    pub rules: Vec<Destination>,
}

/// One named destination.
#[derive(Clone, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Destination {
    /// Which hosts.
    pub host: HostRule,
    /// Which port; `None`: 443 and 80 (names only).
    pub port: Option<u16>,
}

/// The host part of a [`Destination`].
#[derive(Clone, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum HostRule {
    /// Exactly this name (lowercase, no trailing dot).
    Name(String),
    /// Every name ending in this suffix, which starts with a dot (`*.example.com`).
    Below(String),
    /// The addresses of this network: an address and a prefix length.
    Network(IpAddr, u8),
}

/// What a connection asks for, as the proxy read it.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum Target {
    /// A host name (lowercase, no trailing dot, checked by [`parse_name`]).
    Name(String),
    /// An address literal.
    Address(IpAddr),
}

/// Why a connection was refused: fixed words, for the call's result and its audit record.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Refusal {
    /// No destination names this host and port.
    NotListed,
    /// The name resolved only to addresses the tool may not reach (loopback, private,
    /// link-local, airlock's own listeners).
    InsideAddress,
    /// The name did not resolve.
    Unresolved,
    /// The destination did not answer, or refused, within the connect timeout.
    Unreachable,
    /// The call's budget of connections is spent.
    ConnectionBudget,
    /// The request was not one the proxy speaks (not HTTP, CONNECT or SOCKS5 CONNECT).
    Malformed,
}

impl Refusal {
    /// The word in the audit record.
    pub fn code(self) -> &'static str {
        match self {
            Self::NotListed => "not_listed",
            Self::InsideAddress => "inside_address",
            Self::Unresolved => "unresolved",
            Self::Unreachable => "unreachable",
            Self::ConnectionBudget => "connection_budget",
            Self::Malformed => "malformed",
        }
    }

    /// The sentence after "network: DEST " in the call's result.
    pub fn sentence(self) -> &'static str {
        match self {
            Self::NotListed => "is not allowed for this tool",
            Self::InsideAddress => {
                "resolves only to loopback, private or link-local addresses, which this tool may \
                 not reach unless its network list names them by address"
            }
            Self::Unresolved => "did not resolve",
            Self::Unreachable => "did not accept the connection in time",
            Self::ConnectionBudget => "was refused: the call's budget of connections is spent",
            Self::Malformed => "was refused: not an HTTP, CONNECT or SOCKS5 request",
        }
    }
}

/// What is wrong with an entry of a `network = [...]` list, in a sentence for `airlock check`.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DestinationError {
    /// Empty, or too long to be one.
    #[error("a destination is a host name, an address or a CIDR, with a port")]
    Shape,
    /// An IPv6 address without its brackets, or a `[` without its `]`.
    #[error("an IPv6 destination is written `[address]:port`")]
    Ipv6Form,
    /// A bracketed address without its port.
    #[error("an address needs its port: `[address]:port`")]
    BracketedPort,
    /// Brackets around an IPv4 address.
    #[error("brackets are for IPv6 addresses")]
    BracketsNotIpv6,
    /// An IPv4 address or network without its port.
    #[error("an address needs its port: `{host}:PORT` (every port of a host is not a destination)")]
    AddressPort {
        /// The address as written.
        host: String,
    },
    /// Not a host name.
    #[error(
        "`{host}` is not a host name (letters, digits, `-` and `.`; `*.` only in front, for \
         every name below)"
    )]
    HostName {
        /// The host as written.
        host: String,
    },
    /// Not a port.
    #[error("`{text}` is not a port (1 to 65535)")]
    Port {
        /// The port as written.
        text: String,
    },
    /// Not an IP address.
    #[error("`{address}` is not an IP address")]
    Address {
        /// The address as written.
        address: String,
    },
    /// A prefix length the address does not have.
    #[error("`/{prefix}` is not a prefix length of this address")]
    Prefix {
        /// The length as written.
        prefix: String,
    },
}

/// Reads one entry of a `network = [...]` list.
///
/// # Errors
///
/// What is wrong with it, in a sentence for `airlock check`.
pub fn parse_destination(text: &str) -> Result<Destination, DestinationError> {
    let text = text.trim();
    if text.is_empty() || text.len() > 300 {
        return Err(DestinationError::Shape);
    }
    // `[v6]:port` or `[v6/len]:port`.
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or(DestinationError::Ipv6Form)?;
        let port = after
            .strip_prefix(':')
            .ok_or(DestinationError::BracketedPort)?;
        let port = parse_port(port)?;
        let (address, prefix) = parse_network(inside)?;
        if !address.is_ipv6() {
            return Err(DestinationError::BracketsNotIpv6);
        }
        return Ok(Destination {
            host: HostRule::Network(address, prefix),
            port: Some(port),
        });
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(parse_port(port)?)),
        None => (text, None),
    };
    if host.contains(':') {
        return Err(DestinationError::Ipv6Form);
    }
    let first = host.chars().next().unwrap_or('.');
    if first.is_ascii_digit()
        && host
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '/')
    {
        let (address, prefix) = parse_network(host)?;
        let Some(port) = port else {
            return Err(DestinationError::AddressPort {
                host: host.to_owned(),
            });
        };
        return Ok(Destination {
            host: HostRule::Network(address, prefix),
            port: Some(port),
        });
    }
    if let Some(below) = host.strip_prefix("*.") {
        let name = parse_name(below).ok_or_else(|| bad_name(host))?;
        return Ok(Destination {
            host: HostRule::Below(format!(".{name}")),
            port,
        });
    }
    let name = parse_name(host).ok_or_else(|| bad_name(host))?;
    Ok(Destination {
        host: HostRule::Name(name),
        port,
    })
}

fn bad_name(host: &str) -> DestinationError {
    DestinationError::HostName {
        host: host.to_owned(),
    }
}

fn parse_port(text: &str) -> Result<u16, DestinationError> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(DestinationError::Port {
            text: text.to_owned(),
        }),
    }
}

/// `address` or `address/len`.
fn parse_network(text: &str) -> Result<(IpAddr, u8), DestinationError> {
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let address: IpAddr = address.parse().map_err(|_| DestinationError::Address {
        address: address.to_owned(),
    })?;
    let bits: u8 = if address.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => bits,
        Some(prefix) => match prefix.parse::<u8>() {
            Ok(len) if len <= bits => len,
            _ => {
                return Err(DestinationError::Prefix {
                    prefix: prefix.to_owned(),
                });
            }
        },
    };
    Ok((address, prefix))
}

/// A host name as DNS allows it, lowercase and without a trailing dot; `None` for anything
/// else (an empty label, a label over 63 bytes, a name over 253, any other character).
pub fn parse_name(text: &str) -> Option<String> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if name.is_empty() || name.len() > 253 {
        return None;
    }
    let labels_ok = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    labels_ok.then_some(name)
}

/// How a connection was admitted before its name resolved: which addresses it may then use.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Admission {
    /// A public address, or one an address rule names on this port.
    Public,
    /// Exactly the literal address asked for (an address rule names it).
    Named,
}

impl Destinations {
    /// `network = true`.
    pub fn any_public() -> Self {
        Self {
            any_public: true,
            rules: Vec::new(),
        }
    }

    /// Whether `target` on `port` may be asked for at all (before resolving a name).
    pub fn admits(&self, target: &Target, port: u16) -> Option<Admission> {
        match target {
            Target::Name(name) => {
                let listed = self.rules.iter().any(|rule| {
                    port_matches(rule.port, port)
                        && match &rule.host {
                            HostRule::Name(listed) => listed == name,
                            HostRule::Below(suffix) => {
                                name.len() > suffix.len() && name.ends_with(suffix.as_str())
                            }
                            HostRule::Network(..) => false,
                        }
                });
                (listed || self.any_public).then_some(Admission::Public)
            }
            Target::Address(address) => {
                if self.names_address(*address, port) {
                    Some(Admission::Named)
                } else if self.any_public && is_public(*address) {
                    Some(Admission::Public)
                } else {
                    None
                }
            }
        }
    }

    /// Whether a connection admitted as `admission` may go to `address` on `port` (a name's
    /// resolved address, or the literal itself), airlock's own listeners considered.
    pub fn reaches(&self, admission: Admission, address: IpAddr, port: u16) -> bool {
        if self.names_address(address, port) {
            return true;
        }
        match admission {
            Admission::Named => false,
            // A public address of this machine's own (a server with one on an interface) is
            // the inside too: it reaches every service listening on all addresses (a Redis
            // bound to `0.0.0.0` behind a firewall that trusts local traffic), not only
            // airlock's own listeners.
            Admission::Public => {
                is_public(address) && !is_own_listener(address, port) && !is_local(address)
            }
        }
    }

    /// Whether an address rule names `address` on `port`.
    fn names_address(&self, address: IpAddr, port: u16) -> bool {
        let address = unmapped(address);
        self.rules.iter().any(|rule| {
            rule.port == Some(port)
                && match rule.host {
                    HostRule::Network(network, prefix) => in_network(address, network, prefix),
                    _ => false,
                }
        })
    }

    /// One line per destination, for `airlock check`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.rules.iter().map(Destination::to_string).collect();
        if self.any_public {
            parts.insert(0, "any public host".to_owned());
        }
        parts.join(", ")
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HostRule::Name(name) => write!(f, "{name}")?,
            HostRule::Below(suffix) => write!(f, "*{suffix}")?,
            HostRule::Network(address @ IpAddr::V4(_), 32)
            | HostRule::Network(address @ IpAddr::V6(_), 128) => match address {
                IpAddr::V4(v4) => write!(f, "{v4}")?,
                IpAddr::V6(v6) => write!(f, "[{v6}]")?,
            },
            HostRule::Network(IpAddr::V4(v4), prefix) => write!(f, "{v4}/{prefix}")?,
            HostRule::Network(IpAddr::V6(v6), prefix) => write!(f, "[{v6}/{prefix}]")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => write!(f, ":443 and :80"),
        }
    }
}

fn port_matches(rule: Option<u16>, port: u16) -> bool {
    match rule {
        Some(listed) => listed == port,
        None => port == 443 || port == 80,
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn unmapped(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

fn in_network(address: IpAddr, network: IpAddr, prefix: u8) -> bool {
    match (address, unmapped(network)) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32_u32.saturating_sub(u32::from(prefix)));
            let mask = if prefix == 0 { 0 } else { mask.unwrap_or(0) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128_u32.saturating_sub(u32::from(prefix)));
            let mask = if prefix == 0 { 0 } else { mask.unwrap_or(0) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Whether `address` is an ordinary address of the internet: not loopback, unspecified,
/// private (RFC 1918, CGNAT, ULA), link-local (the metadata service), multicast, broadcast,
/// documentation, benchmarking or reserved, and not an IPv6 form that carries one of those
/// (IPv4-mapped, NAT64, 6to4, Teredo).
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    const SPECIAL: &[([u8; 4], u8)] = &[
        ([0, 0, 0, 0], 8),
        ([10, 0, 0, 0], 8),
        ([100, 64, 0, 0], 10),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([172, 16, 0, 0], 12),
        ([192, 0, 0, 0], 24),
        ([192, 0, 2, 0], 24),
        ([192, 88, 99, 0], 24),
        ([192, 168, 0, 0], 16),
        ([198, 18, 0, 0], 15),
        ([198, 51, 100, 0], 24),
        ([203, 0, 113, 0], 24),
        ([224, 0, 0, 0], 4),
        ([240, 0, 0, 0], 4),
    ];
    !SPECIAL.iter().any(|(network, prefix)| {
        in_network(
            IpAddr::V4(v4),
            IpAddr::V4(Ipv4Addr::from(*network)),
            *prefix,
        )
    })
}

fn is_public_v6(v6: Ipv6Addr) -> bool {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = v6.segments();
    let [first, second, ..] = segments;
    // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits; judge that one.
    if first == 0x64 && second == 0xff9b && segments.get(2..6) == Some(&[0, 0, 0, 0][..]) {
        let bits = u128::from(v6);
        let v4 = Ipv4Addr::from(u32::try_from(bits & u128::from(u32::MAX)).unwrap_or(0));
        return is_public_v4(v4);
    }
    // Only 2000::/3 is global unicast: every other IPv6 address is reserved, special or a
    // form carrying an IPv4 address (the SIIT `::ffff:0:a.b.c.d`, which a translator on the
    // path would deliver to that address).
    if !in_network(
        IpAddr::V6(v6),
        IpAddr::V6(Ipv6Addr::from(0x2000_u128 << 112)),
        3,
    ) {
        return false;
    }
    const SPECIAL: &[(u128, u8)] = &[
        (0, 96),                      // unspecified, loopback, IPv4-compatible
        (0x0064_ff9b_0001 << 80, 48), // local-use NAT64
        (0x0100 << 112, 64),          // discard-only
        (0x2001 << 112, 32),          // Teredo
        (0x2001_0002 << 96, 48),      // benchmarking
        (0x2001_0db8 << 96, 32),      // documentation
        (0x2002 << 112, 16),          // 6to4: an IPv4 address inside
        (0x3fff << 112, 20),          // documentation
        (0xfc00 << 112, 7),           // unique local (ULA)
        (0xfe80 << 112, 10),          // link-local
        (0xfec0 << 112, 10),          // site-local (deprecated)
        (0xff00 << 112, 8),           // multicast
    ];
    let address = IpAddr::V6(v6);
    !SPECIAL
        .iter()
        .any(|(network, prefix)| in_network(address, IpAddr::V6(Ipv6Addr::from(*network)), *prefix))
}

/// airlock's own listeners (`--http`, `--metrics`), which no command may reach unless an address rule names
/// them: set once by the program when it binds.
pub fn set_own_listeners(listeners: Vec<SocketAddr>) {
    if OWN_LISTENERS.set(listeners).is_err() {
        tracing::debug!("airlock's own listeners were set already");
    }
}

static OWN_LISTENERS: OnceLock<Vec<SocketAddr>> = OnceLock::new();

fn is_own_listener(address: IpAddr, port: u16) -> bool {
    let Some(listeners) = OWN_LISTENERS.get() else {
        return false;
    };
    listeners.iter().any(|listener| {
        listener.port() == port
            && (listener.ip() == address || (listener.ip().is_unspecified() && is_local(address)))
    })
}

/// Whether `address` is one of this machine's own: the kernel routes to it from itself (a UDP
/// socket connected to it, which sends nothing, gets it as its own source address).
///
/// Binding to the address instead would take every address for a local one on a host with
/// `net.ipv4.ip_nonlocal_bind` set (load balancers' hosts). A socket that cannot be made
/// counts as local: the connection is refused, as it would fail anyway.
fn is_local(address: IpAddr) -> bool {
    let unspecified = match address {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let Ok(socket) = std::net::UdpSocket::bind(SocketAddr::new(unspecified, 0)) else {
        return true;
    };
    // No route: not this machine (and no connection will be made).
    if socket.connect(SocketAddr::new(address, 9)).is_err() {
        return false;
    }
    socket
        .local_addr()
        .map_or(true, |local| unmapped(local.ip()) == unmapped(address))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Destinations {
        Destinations {
            any_public: false,
            rules: entries
                .iter()
                .map(|entry| parse_destination(entry).expect("a destination"))
                .collect(),
        }
    }

    fn name(text: &str) -> Target {
        Target::Name(text.to_owned())
    }

    fn address(text: &str) -> Target {
        Target::Address(text.parse().expect("an address"))
    }

    #[test]
    fn names_match_exactly_and_wildcards_only_below() {
        let rules = list(&["api.github.com:443", "*.githubusercontent.com:443"]);
        assert_eq!(
            rules.admits(&name("api.github.com"), 443),
            Some(Admission::Public)
        );
        assert_eq!(rules.admits(&name("api.github.com"), 80), None);
        assert_eq!(rules.admits(&name("github.com"), 443), None);
        assert_eq!(rules.admits(&name("evil-api.github.com"), 443), None);
        assert!(
            rules
                .admits(&name("raw.githubusercontent.com"), 443)
                .is_some()
        );
        assert_eq!(rules.admits(&name("githubusercontent.com"), 443), None);
        assert_eq!(rules.admits(&name("xgithubusercontent.com"), 443), None);
    }

    #[test]
    fn a_name_without_port_means_the_web_ports() {
        let rules = list(&["example.com"]);
        assert!(rules.admits(&name("example.com"), 443).is_some());
        assert!(rules.admits(&name("example.com"), 80).is_some());
        assert_eq!(rules.admits(&name("example.com"), 22), None);
    }

    #[test]
    fn a_listed_name_reaches_public_addresses_only() {
        let rules = list(&["api.example.com:443"]);
        let admitted = rules.admits(&name("api.example.com"), 443).expect("listed");
        assert!(rules.reaches(admitted, "140.82.112.6".parse().expect("ip"), 443));
        for inside in [
            "127.0.0.1",
            "169.254.169.254",
            "10.0.0.5",
            "172.16.3.4",
            "192.168.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
        ] {
            let ip: IpAddr = inside.parse().expect("ip");
            assert!(!rules.reaches(admitted, ip, 443), "{inside}");
        }
    }

    /// Red team (issue 36): IPv6 outside global unicast (2000::/3) is not public, whatever
    /// IPv4 address it may carry; the ordinary forms of public addresses still are.
    #[test]
    fn only_global_unicast_ipv6_is_public() {
        for inside in [
            "::ffff:0:7f00:1",
            "::ffff:0:a9fe:a9fe",
            "::ffff:0:a00:1",
            "100::1",
            "::1:0:0:1",
            "4000::1",
            "64:ff9b::7f00:1",
        ] {
            let ip: IpAddr = inside.parse().expect("ip");
            assert!(!is_public(ip), "{inside}");
        }
        for public in ["2606:4700:4700::1111", "64:ff9b::101:101", "::ffff:1.1.1.1"] {
            let ip: IpAddr = public.parse().expect("ip");
            assert!(is_public(ip), "{public}");
        }
    }

    /// Red team (issue 36): this machine's own addresses are local (a public one would reach
    /// every service listening on all addresses); other hosts' are not.
    #[test]
    fn this_machines_own_addresses_are_local() {
        assert!(is_local(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert!(!is_local("192.0.2.77".parse().expect("ip")));
        assert!(!is_local("8.8.8.8".parse().expect("ip")));
        // The address this machine would send from, if it has a route out, is its own.
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").expect("a socket");
        if probe.connect("8.8.8.8:53").is_ok()
            && let Ok(own) = probe.local_addr()
        {
            assert!(is_local(own.ip()), "{own}");
        }
    }

    #[test]
    fn an_address_rule_names_the_inside_explicitly() {
        let rules = list(&["10.1.2.3:5432", "[fd00::/8]:8080", "internal.example:443"]);
        assert_eq!(
            rules.admits(&address("10.1.2.3"), 5432),
            Some(Admission::Named)
        );
        assert_eq!(rules.admits(&address("10.1.2.3"), 5433), None);
        assert_eq!(rules.admits(&address("10.1.2.4"), 5432), None);
        assert!(rules.admits(&address("fd12::9"), 8080).is_some());
        assert!(rules.admits(&address("::ffff:10.1.2.3"), 5432).is_some());
        // A listed name that resolves to a named address may use it.
        let admitted = rules
            .admits(&name("internal.example"), 443)
            .expect("listed");
        assert!(!rules.reaches(admitted, "10.1.2.3".parse().expect("ip"), 443));
        assert!(rules.reaches(admitted, "10.1.2.3".parse().expect("ip"), 5432));
    }

    #[test]
    fn any_public_refuses_the_inside_and_admits_the_rest() {
        let rules = Destinations::any_public();
        assert!(rules.admits(&name("anything.example"), 8443).is_some());
        assert!(rules.admits(&address("1.1.1.1"), 53).is_some());
        for inside in ["127.0.0.1", "169.254.169.254", "10.0.0.1", "::1", "fc00::1"] {
            assert_eq!(rules.admits(&address(inside), 80), None, "{inside}");
        }
        let admitted = rules.admits(&name("rebound.example"), 80).expect("any");
        assert!(!rules.reaches(admitted, "127.0.0.1".parse().expect("ip"), 80));
    }

    #[test]
    fn malformed_destinations_are_refused_with_a_reason() {
        for bad in [
            "",
            "10.0.0.1",
            "10.0.0.0/8",
            "10.0.0.0/33:80",
            "host:0",
            "host:65536",
            "ho st:80",
            "*.:443",
            "a..b:443",
            "fd00::1:80",
            "[10.0.0.1]:80",
            "[fd00::1]",
            "-lead.example:443",
            "**.example.com",
            "http://example.com",
        ] {
            assert!(parse_destination(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn destinations_print_as_written() {
        for (written, shown) in [
            ("API.GitHub.com.:443", "api.github.com:443"),
            ("*.example.com", "*.example.com:443 and :80"),
            ("10.0.0.0/8:5432", "10.0.0.0/8:5432"),
            ("10.1.2.3:5432", "10.1.2.3:5432"),
            ("[fd00::1]:80", "[fd00::1]:80"),
        ] {
            let parsed = parse_destination(written).expect("parses");
            assert_eq!(parsed.to_string(), shown);
        }
    }

    proptest::proptest! {
        /// Whatever the text, parsing ends in a value or a reason, and a parsed name
        /// destination admits only names that end with what it names.
        #[test]
        fn parsing_never_panics(text in "\\PC{0,80}") {
            if let Ok(destination) = parse_destination(&text)
                && let HostRule::Name(name) = &destination.host
            {
                proptest::prop_assert!(parse_name(name).as_deref() == Some(name.as_str()));
            }
        }
    }
}
