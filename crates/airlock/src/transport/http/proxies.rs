//! Trusted proxies: who a request is from when it came through a reverse proxy.
//!
//! Behind a TLS-terminating proxy every connection comes from the proxy's address, so without
//! this every client would share one quota key. A request whose peer is a configured trusted
//! proxy is keyed by the address the proxy recorded instead, in the one header the operator
//! said the proxy writes ([`ProxyHeader`]): `X-Forwarded-For` (the default: nginx, HAProxy and
//! Envoy append to it) or `Forwarded`'s `for=` (RFC 7239). The other header is never read: a
//! proxy passes a header it does not write through untouched, so its every entry is the
//! client's own claim (issue 35: a client-written `Forwarded` picked its own quota key and the
//! address of its audit record). The list is read from the right (the entry the nearest
//! proxy appended) past entries that are themselves trusted proxies; the first other entry is
//! the client. Entries further left were written by the client and are never believed. A
//! header that is missing, unparsable at the entry that matters, or longer than the head cap
//! leaves the request keyed by the proxy's own address. A peer that is not a trusted proxy is
//! keyed by its own address, whatever headers it sends.
//!
//! Client addresses are then keyed as any other (an IPv6 address by its /64, see
//! `ClientKey`): one host usually holds a whole /64, and keying by /128 would let one host take
//! 2^64 quota keys.

use std::net::IpAddr;

use hyper::header::HeaderMap;

/// Most address entries read from a forwarding header, from the right; beyond them the chain
/// is not believed (a proxy chain of more than a few hops is not a deployment).
const MAX_HOPS: usize = 16;

/// An address range: a network address and a prefix length.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `ADDR` or `ADDR/PREFIX` (IPv4 or IPv6). The address must be the network's first
    /// (no host bits set), so a typo cannot silently widen or narrow the range.
    ///
    /// # Errors
    ///
    /// A fixed sentence saying what is wrong (never the text itself).
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address.parse().map_err(|_| "not an IP address")?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|prefix| *prefix <= max)
                .ok_or("the prefix length is not a number within the address's size")?,
            None => max,
        };
        let cidr = Self { network, prefix };
        if cidr.masked(network) != network {
            return Err("the address has bits set past the prefix length");
        }
        Ok(cidr)
    }

    /// Whether `address` lies in the range (an IPv4-mapped IPv6 address as its IPv4 one).
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = unmapped(address);
        address.is_ipv4() == self.network.is_ipv4() && self.masked(address) == self.network
    }

    fn masked(&self, address: IpAddr) -> IpAddr {
        match address {
            IpAddr::V4(v4) => {
                let bits = u32::from(v4);
                let mask = u32::MAX
                    .checked_shl(32_u32.saturating_sub(u32::from(self.prefix)))
                    .unwrap_or(0);
                IpAddr::V4((bits & mask).into())
            }
            IpAddr::V6(v6) => {
                let bits = u128::from(v6);
                let mask = u128::MAX
                    .checked_shl(128_u32.saturating_sub(u32::from(self.prefix)))
                    .unwrap_or(0);
                IpAddr::V6((bits & mask).into())
            }
        }
    }
}

/// The forwarding header a trusted proxy writes, the only one believed.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum ProxyHeader {
    /// `X-Forwarded-For`, appended to by nginx (`$proxy_add_x_forwarded_for`), HAProxy
    /// (`option forwardfor`) and Envoy.
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239), for a proxy configured to append to it.
    Forwarded,
}

/// The configured trusted proxies.
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies {
    ranges: Vec<Cidr>,
    header: ProxyHeader,
}

impl TrustedProxies {
    /// Proxies in `ranges`, believed in `X-Forwarded-For`; none trusts no proxy (every
    /// request is keyed by its peer).
    pub fn new(ranges: Vec<Cidr>) -> Self {
        Self {
            ranges,
            header: ProxyHeader::default(),
        }
    }

    /// The same proxies, believed only in `header`.
    #[must_use]
    pub fn reading(mut self, header: ProxyHeader) -> Self {
        self.header = header;
        self
    }

    /// Whether `peer` is a trusted proxy.
    pub(crate) fn trusts(&self, peer: IpAddr) -> bool {
        self.ranges.iter().any(|range| range.contains(peer))
    }

    /// The address a request from `peer` with headers `head` is from.
    pub(crate) fn client(&self, peer: IpAddr, head: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return unmapped(peer);
        }
        let entries = match self.header {
            ProxyHeader::XForwardedFor => x_forwarded_for(head),
            ProxyHeader::Forwarded => forwarded_for(head),
        };
        let mut client = unmapped(peer);
        for entry in entries.iter().rev().take(MAX_HOPS) {
            let Some(address) = entry else {
                // Unparsable where the chain is still being read: not believed.
                return unmapped(peer);
            };
            client = unmapped(*address);
            if !self.trusts(client) {
                return client;
            }
        }
        client
    }
}

/// The `for=` addresses of every `Forwarded` header, in order; `None` for one that is not an
/// address (`unknown`, an obfuscated name, garbage).
fn forwarded_for(head: &HeaderMap) -> Vec<Option<IpAddr>> {
    let mut out = Vec::new();
    for value in head.get_all(hyper::header::FORWARDED) {
        let Ok(text) = value.to_str() else {
            out.push(None);
            continue;
        };
        for element in text.split(',') {
            let node = element.split(';').find_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("for")
                    .then(|| value.trim())
            });
            if let Some(node) = node {
                out.push(node_address(node));
            }
        }
    }
    out
}

/// A `Forwarded` node: `192.0.2.1`, `"192.0.2.1:80"`, `"[2001:db8::1]:4711"`.
fn node_address(node: &str) -> Option<IpAddr> {
    let node = node.trim_matches('"');
    if let Some(rest) = node.strip_prefix('[') {
        let (address, _port) = rest.split_once(']')?;
        return address.parse().ok();
    }
    let address = match node.rsplit_once(':') {
        // An IPv4 address with a port; a bare IPv6 address (several colons) is not quoted form.
        Some((address, port)) if !address.contains(':') && port.parse::<u16>().is_ok() => address,
        _ => node,
    };
    address.parse().ok()
}

/// The addresses of every `X-Forwarded-For` header, in order.
fn x_forwarded_for(head: &HeaderMap) -> Vec<Option<IpAddr>> {
    let mut out = Vec::new();
    for value in head.get_all("x-forwarded-for") {
        match value.to_str() {
            Ok(text) => out.extend(text.split(',').map(|entry| entry.trim().parse().ok())),
            Err(_) => out.push(None),
        }
    }
    out
}

fn unmapped(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;

    use super::*;

    fn proxies(ranges: &[&str]) -> TrustedProxies {
        TrustedProxies::new(ranges.iter().map(|r| Cidr::parse(r).unwrap()).collect())
    }

    fn head(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut head = HeaderMap::new();
        for (name, value) in pairs {
            head.append(*name, HeaderValue::from_str(value).unwrap());
        }
        head
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_parse_strictly() {
        assert!(Cidr::parse("10.0.0.0/8").is_ok());
        assert!(Cidr::parse("10.1.2.3").is_ok());
        assert!(Cidr::parse("2001:db8::/32").is_ok());
        assert!(Cidr::parse("10.0.0.1/8").is_err(), "host bits set");
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        assert!(Cidr::parse("10.0.0.0/x").is_err());
        assert!(Cidr::parse("example.com").is_err());
        let range = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(range.contains(ip("10.200.0.1")));
        assert!(range.contains(ip("::ffff:10.0.0.1")));
        assert!(!range.contains(ip("11.0.0.1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("192.0.2.1")));
    }

    #[test]
    fn an_untrusted_peer_is_keyed_by_its_own_address_whatever_it_claims() {
        let trusted = proxies(&["10.0.0.1"]);
        let claims = head(&[("x-forwarded-for", "192.0.2.9")]);
        assert_eq!(
            trusted.client(ip("198.51.100.4"), &claims),
            ip("198.51.100.4")
        );
    }

    #[test]
    fn the_rightmost_address_that_is_not_a_proxy_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8"]);
        // The client wrote the left entry itself; the proxies appended the rest.
        let chain = head(&[("x-forwarded-for", "6.6.6.6, 192.0.2.7, 10.0.0.5")]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &chain), ip("192.0.2.7"));
        let split = head(&[
            ("x-forwarded-for", "6.6.6.6"),
            ("x-forwarded-for", "192.0.2.8"),
        ]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &split), ip("192.0.2.8"));
    }

    #[test]
    fn only_the_configured_header_is_read() {
        let both = head(&[
            (
                "forwarded",
                r#"for=192.0.2.60;proto=https, for="[2001:db8::17]:4711""#,
            ),
            ("x-forwarded-for", "192.0.2.99"),
        ]);
        let xff = proxies(&["10.0.0.1"]);
        assert_eq!(xff.client(ip("10.0.0.1"), &both), ip("192.0.2.99"));
        // A client's own `Forwarded` alone is not believed behind an XFF-writing proxy.
        let claim = head(&[("forwarded", "for=192.0.2.1")]);
        assert_eq!(xff.client(ip("10.0.0.1"), &claim), ip("10.0.0.1"));
        let forwarded = proxies(&["10.0.0.1"]).reading(ProxyHeader::Forwarded);
        assert_eq!(forwarded.client(ip("10.0.0.1"), &both), ip("2001:db8::17"));
        let with_port = head(&[("forwarded", r#"for="192.0.2.61:8080""#)]);
        assert_eq!(
            forwarded.client(ip("10.0.0.1"), &with_port),
            ip("192.0.2.61")
        );
        let claim = head(&[("x-forwarded-for", "192.0.2.1")]);
        assert_eq!(forwarded.client(ip("10.0.0.1"), &claim), ip("10.0.0.1"));
    }

    #[test]
    fn missing_or_unparsable_forwarding_leaves_the_proxy_s_address() {
        let trusted = proxies(&["10.0.0.1"]);
        assert_eq!(
            trusted.client(ip("10.0.0.1"), &HeaderMap::new()),
            ip("10.0.0.1")
        );
        let garbage = head(&[("x-forwarded-for", "192.0.2.7, not-an-address")]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &garbage), ip("10.0.0.1"));
        let unknown = head(&[("forwarded", "for=unknown")]);
        let forwarded = proxies(&["10.0.0.1"]).reading(ProxyHeader::Forwarded);
        assert_eq!(forwarded.client(ip("10.0.0.1"), &unknown), ip("10.0.0.1"));
    }

    #[test]
    fn a_chain_of_only_proxies_is_keyed_by_its_leftmost_hop_within_the_bound() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let chain = head(&[("x-forwarded-for", "10.0.0.9, 10.0.0.8")]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &chain), ip("10.0.0.9"));
        let long = vec!["10.0.0.2"; 40].join(", ");
        let long = head(&[("x-forwarded-for", long.as_str())]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &long), ip("10.0.0.2"));
    }
}
