//! Senders behind a proxy: from the addresses the configuration trusts (`trusted_proxies`, a
//! TLS proxy in front of the collector), the client's address is read from the one forwarding
//! header those proxies set (`forwarding_header`: `X-Forwarded-For`, or `Forwarded`'s `for=`,
//! RFC 7239) as the right-most hop that is not itself a trusted proxy: the hop the last trusted
//! proxy appended (or wrote) itself, whatever a client put to its left. The other header is
//! never read: a proxy passes on a header it does not set as the client wrote it (nginx with
//! only `X-Forwarded-For` set let one client be 105 senders through `Forwarded`). From any other
//! address both are ignored: a client cannot name itself someone else.

use std::net::IpAddr;

use axum::http::HeaderMap;

/// The forwarding header the trusted proxies set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Header {
    /// `X-Forwarded-For: client, proxy1, …`
    #[default]
    XForwardedFor,
    /// `Forwarded: for=client;proto=https, for=proxy1` (RFC 7239)
    Forwarded,
}

impl Header {
    /// `X-Forwarded-For` or `Forwarded`, in any case.
    fn parse(name: &str) -> Result<Header, String> {
        if name.eq_ignore_ascii_case("x-forwarded-for") {
            Ok(Header::XForwardedFor)
        } else if name.eq_ignore_ascii_case("forwarded") {
            Ok(Header::Forwarded)
        } else {
            Err(format!(
                "forwarding_header: `{name}` is not X-Forwarded-For or Forwarded (the header the \
                 trusted proxies set)"
            ))
        }
    }
}

/// The trusted proxies: addresses, or networks as `address/prefix`; and the header they set.
#[derive(Clone, Debug, Default)]
pub struct Proxies {
    nets: Vec<(IpAddr, u8)>,
    header: Header,
}

impl Proxies {
    /// Reads `10.0.0.7`, `10.0.0.0/8` or `fd00::/8` entries and the header's name; the error
    /// names the bad one.
    pub fn parse(list: &[String], header: &str) -> Result<Proxies, String> {
        let header = Header::parse(header)?;
        let mut nets = Vec::new();
        for entry in list {
            let bad = || {
                format!(
                    "trusted_proxies: `{entry}` is not an address or a network (address/prefix)"
                )
            };
            let (addr, prefix) = match entry.split_once('/') {
                Some((a, p)) => (a, Some(p)),
                None => (entry.as_str(), None),
            };
            let ip: IpAddr = addr.trim().parse().map_err(|_| bad())?;
            let bits = if ip.is_ipv4() { 32 } else { 128 };
            let prefix = match prefix {
                Some(p) => p
                    .trim()
                    .parse::<u8>()
                    .ok()
                    .filter(|&p| p <= bits)
                    .ok_or_else(bad)?,
                None => bits,
            };
            nets.push((ip, prefix));
        }
        Ok(Proxies { nets, header })
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.nets
            .iter()
            .any(|&(net, prefix)| within(ip, canonical(net), prefix))
    }

    /// The address a request comes from: `peer`, or where `peer` is a trusted proxy, the
    /// right-most hop of the configured header's chain that is not one. A chain that is
    /// missing, or whose deciding hop cannot be read (`unknown`, an obfuscated name), leaves
    /// the proxy's own address: its clients then share one sender, never take another's.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let chain = match self.header {
            Header::XForwardedFor => x_forwarded_for(headers),
            Header::Forwarded => forwarded_for(headers),
        };
        let Some(chain) = chain else {
            return peer;
        };
        for hop in chain.iter().rev() {
            match hop {
                Some(ip) if self.contains(*ip) => continue,
                Some(ip) => return *ip,
                None => return peer,
            }
        }
        peer
    }
}

/// An IPv4-mapped IPv6 address as its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn within(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let (a, b, bits) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
        _ => return false,
    };
    let shift = bits - u32::from(prefix);
    shift >= bits || (a >> shift) == (b >> shift)
}

/// The `for=` hops of every `Forwarded` header, left to right (`None`: a hop that is no
/// address); `None` when the request has no such hop.
fn forwarded_for(headers: &HeaderMap) -> Option<Vec<Option<IpAddr>>> {
    let mut hops = Vec::new();
    for value in headers.get_all("forwarded") {
        let Ok(text) = value.to_str() else {
            hops.push(None);
            continue;
        };
        for element in text.split(',') {
            for pair in element.split(';') {
                if let Some((k, v)) = pair.trim().split_once('=')
                    && k.trim().eq_ignore_ascii_case("for")
                {
                    hops.push(node(v.trim().trim_matches('"')));
                }
            }
        }
    }
    (!hops.is_empty()).then_some(hops)
}

/// The hops of every `X-Forwarded-For` header, left to right.
fn x_forwarded_for(headers: &HeaderMap) -> Option<Vec<Option<IpAddr>>> {
    let mut hops = Vec::new();
    for value in headers.get_all("x-forwarded-for") {
        match value.to_str() {
            Ok(text) => hops.extend(text.split(',').map(|h| node(h.trim()))),
            Err(_) => hops.push(None),
        }
    }
    (!hops.is_empty()).then_some(hops)
}

/// A hop's address: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1` or `[2001:db8::1]:4711`.
fn node(text: &str) -> Option<IpAddr> {
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    if let Ok(ip) = text.parse() {
        return Some(ip);
    }
    // IPv4 with a port.
    let (addr, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    addr.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_right_most_untrusted_hop_from_a_trusted_proxy_only() {
        let nets = ["10.0.0.0/8".to_string(), "2001:db8::1".to_string()];
        let p = Proxies::parse(&nets, "X-Forwarded-For").unwrap();
        let xff = headers(&[("x-forwarded-for", "203.0.113.9, 198.51.100.4, 10.1.2.3")]);
        // From the proxy: the client is the right-most hop that is not a proxy.
        assert_eq!(p.client(ip("10.0.0.1"), &xff), ip("198.51.100.4"));
        // From anyone else the header is the client's own claim, and ignored.
        assert_eq!(p.client(ip("192.0.2.7"), &xff), ip("192.0.2.7"));
        // Only the configured header is read: a client's own `Forwarded` passed on by the proxy
        // names no one. Quoted IPv6 with a port, and IPv4 with one.
        let fwd = headers(&[
            (
                "forwarded",
                r#"for="[2001:db8:cafe::17]:4711";proto=https, for=10.9.9.9"#,
            ),
            ("x-forwarded-for", "198.51.100.4"),
        ]);
        assert_eq!(p.client(ip("::ffff:10.0.0.1"), &fwd), ip("198.51.100.4"));
        let forwarded = Proxies::parse(&nets, "Forwarded").unwrap();
        assert_eq!(
            forwarded.client(ip("::ffff:10.0.0.1"), &fwd),
            ip("2001:db8:cafe::17")
        );
        let port = headers(&[("x-forwarded-for", "198.51.100.4:5555")]);
        assert_eq!(p.client(ip("2001:db8::1"), &port), ip("198.51.100.4"));
        // No chain, or a deciding hop that is no address: the proxy itself.
        assert_eq!(p.client(ip("10.0.0.1"), &HeaderMap::new()), ip("10.0.0.1"));
        let hidden = headers(&[("forwarded", "for=_hidden, for=10.0.0.2")]);
        assert_eq!(forwarded.client(ip("10.0.0.1"), &hidden), ip("10.0.0.1"));
    }

    #[test]
    fn bad_entries_are_named() {
        for bad in ["10.0.0.0/33", "host.example", "::/129", "1.2.3.4/x"] {
            let e = Proxies::parse(&[bad.to_string()], "Forwarded").unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        let e = Proxies::parse(&[], "X-Real-IP").unwrap_err();
        assert!(e.contains("X-Real-IP"), "{e}");
        let none = Proxies::parse(&[], "x-forwarded-for").unwrap();
        assert!(!none.contains("127.0.0.1".parse().unwrap()));
    }
}
