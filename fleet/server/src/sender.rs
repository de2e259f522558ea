//! Who sent a request, as far as the collector keeps it: the address's key (an IPv6 address is
//! keyed by its /64, the block one subscriber gets, so that an address per request does not
//! escape the per-address limits) and the salted hash of that key, which is all that is stored.

use std::net::IpAddr;

use sha2::{Digest, Sha256};

/// The address a limit or a hash applies to: IPv4 as it is (an IPv4-mapped IPv6 address as its
/// IPv4 address), IPv6 by its /64 prefix.
pub fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Hashes addresses with the database's secret salt.
#[derive(Clone, Debug)]
pub struct Senders {
    salt: String,
}

impl Senders {
    pub fn new(salt: String) -> Self {
        Senders { salt }
    }

    /// The stored identity of `ip`: 32 hex digits of SHA-256(salt, key(ip)).
    pub fn hash(&self, ip: IpAddr) -> String {
        let digest = Sha256::new()
            .chain_update(self.salt.as_bytes())
            .chain_update(b"\0")
            .chain_update(key(ip).to_string().as_bytes())
            .finalize();
        format!("{digest:x}")[..32].to_string()
    }
}
