//! `--test-hosts`: for the network tests only, refused by a release build. The proxy still
//! checks every pinned address as it checks a resolved one; an operator has no use for it,
//! and a resolver that lies is not something a deployment should be able to switch on.

use airlock_manifest::sandbox;

/// Why `--test-hosts` was refused; the text follows `airlock: --test-hosts: `.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TestHostsError {
    /// A release build.
    #[error("refused: tests only, and this is a release build")]
    Release,
    /// A value without `=`.
    #[error("`{}` is not NAME=ADDRESS", .0.escape_debug())]
    NotAPair(String),
    /// A name the proxy could not be asked for.
    #[error("`{}` is not a host name", .0.escape_debug())]
    NotAName(String),
    /// An address that is not an IP address.
    #[error("`{}` is not an IP address", .0.escape_debug())]
    NotAnAddress(String),
}

/// Pins each `NAME=ADDRESS` of `pairs` in the network proxy's resolver.
pub(crate) fn set(pairs: &[String]) -> Result<(), TestHostsError> {
    if !cfg!(debug_assertions) {
        return Err(TestHostsError::Release);
    }
    let mut hosts = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let (name, address) = pair
            .split_once('=')
            .ok_or_else(|| TestHostsError::NotAPair(pair.clone()))?;
        let name = sandbox::destinations::parse_name(name)
            .ok_or_else(|| TestHostsError::NotAName(name.to_owned()))?;
        let address = address
            .parse()
            .map_err(|_| TestHostsError::NotAnAddress(address.to_owned()))?;
        hosts.push((name, address));
    }
    sandbox::proxy::set_test_hosts(hosts);
    Ok(())
}
