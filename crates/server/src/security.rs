//! Defences against clients that should not be talking to the server at all, as Redis has
//! them:
//!
//! * **Cross-protocol requests** ([`is_http_request_name`]): an HTTP request sent to this
//!   port (a web page can make a browser `POST` to `127.0.0.1:6390`) starts with a line
//!   whose first word is `POST` (or `GET`, ...) and goes on with header lines such as
//!   `Host: ...`; a server that skips what it does not understand would then execute the
//!   body's lines. A request named `POST` or `Host:` closes the connection at once, before
//!   anything else from it is executed.
//! * **Protected mode** ([`is_local`], [`DENIED`]): with no password, only clients
//!   connecting from the loopback interface are served.
//! * **Limits before `AUTH`** ([`PREAUTH_MAX_ARGS`], [`PREAUTH_MAX_BULK`]): a client that has
//!   not authenticated cannot make the server hold large requests.

use std::net::IpAddr;

/// Most arguments in one request of a client that has not authenticated (Redis 7's limit,
/// CVE-2021-32675).
pub const PREAUTH_MAX_ARGS: usize = 10;

/// Longest argument of a client that has not authenticated (Redis 7's limit).
pub const PREAUTH_MAX_BULK: usize = 16 << 10;

/// Whether a request named `name` is a line of an HTTP request rather than a command:
/// `POST` (the method a web page can send a body with, without asking) or the `Host:`
/// header every HTTP/1.1 request carries, in any case.
pub fn is_http_request_name(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"post") || name.eq_ignore_ascii_case(b"host:")
}

/// Whether a client at `ip` connects from the loopback interface (127.0.0.0/8, `::1`, and
/// IPv4 loopback mapped into IPv6, `::ffff:127.0.0.1`).
pub fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// What a client refused by protected mode is told before its connection is closed (one
/// line, as Redis's `-DENIED` reply).
pub const DENIED: &str =
    "-DENIED tegula serve resp is running in protected mode because protected mode is \
enabled and no password is set for the default user. In this mode connections are only \
accepted from the loopback interface. If you want to connect from external computers, either \
restart the server with a password (tegula serve resp --requirepass-file FILE, or the \
TEGULA_REQUIREPASS environment variable), or, if the port is not reachable from networks you \
do not trust, restart it with '--protected-mode no'.\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_lines_are_recognised_in_any_case() {
        for n in [&b"POST"[..], b"post", b"PoSt", b"Host:", b"HOST:", b"host:"] {
            assert!(is_http_request_name(n), "{n:?}");
        }
        for n in [&b"GET"[..], b"SET", b"host", b"posts", b"Host: x", b""] {
            assert!(!is_http_request_name(n), "{n:?}");
        }
    }

    #[test]
    fn loopback_addresses_are_local() {
        for a in ["127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1"] {
            assert!(
                is_local(a.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))),
                "{a}"
            );
        }
        for a in [
            "10.0.0.1",
            "0.0.0.0",
            "192.168.1.2",
            "::",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(
                !is_local(a.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))),
                "{a}"
            );
        }
        assert!(DENIED.starts_with("-DENIED ") && DENIED.ends_with("\r\n"));
        assert_eq!(DENIED.matches('\n').count(), 1);
    }
}
