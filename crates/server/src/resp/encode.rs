//! The reply encoder: [`Reply`] appends RESP2 or RESP3 to a byte buffer, choosing the
//! encoding of nulls and maps by the connection's protocol, and [`encode_command`] writes a
//! request as clients do.

use std::io::Write;

/// The protocol a connection speaks (RESP2 until `HELLO 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Proto {
    /// RESP2: nulls are `$-1` / `*-1`, maps are flat arrays.
    #[default]
    Resp2,
    /// RESP3: `_` null, `%` maps, `#` booleans.
    Resp3,
}

impl Proto {
    /// The protocol number `HELLO` uses.
    pub fn number(self) -> i64 {
        match self {
            Proto::Resp2 => 2,
            Proto::Resp3 => 3,
        }
    }
}

/// Appends replies to a buffer.
#[derive(Debug)]
pub struct Reply<'a> {
    /// The buffer replies are appended to.
    pub out: &'a mut Vec<u8>,
    /// The connection's protocol.
    pub proto: Proto,
}

impl Reply<'_> {
    fn header(&mut self, t: u8, n: i64) {
        self.out.push(t);
        let mut b = itoa_buf(n);
        self.out.append(&mut b);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `+s`: `s` must hold no `\r` or `\n`.
    pub fn simple(&mut self, s: &str) {
        self.out.push(b'+');
        self.out.extend_from_slice(s.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// `+OK`.
    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    /// `-msg`: line breaks in `msg` become blanks.
    pub fn error(&mut self, msg: &str) {
        self.out.push(b'-');
        self.out.extend(
            msg.bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.out.extend_from_slice(b"\r\n");
    }

    /// `:n`.
    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    /// `$len\r\nbytes`.
    pub fn bulk(&mut self, b: &[u8]) {
        self.header(b'$', b.len() as i64);
        self.out.extend_from_slice(b);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A bulk string or, for `None`, a null.
    pub fn opt_bulk(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => self.bulk(b),
            None => self.null(),
        }
    }

    /// The null bulk string: `$-1` (RESP2) or `_` (RESP3).
    pub fn null(&mut self) {
        match self.proto {
            Proto::Resp2 => self.out.extend_from_slice(b"$-1\r\n"),
            Proto::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// The null array: `*-1` (RESP2) or `_` (RESP3).
    pub fn null_array(&mut self) {
        match self.proto {
            Proto::Resp2 => self.out.extend_from_slice(b"*-1\r\n"),
            Proto::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// The header of an array of `n` elements.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// The header of a map of `n` pairs: `%n` (RESP3) or an array of `2n` (RESP2).
    pub fn map(&mut self, n: usize) {
        match self.proto {
            Proto::Resp2 => self.header(b'*', 2 * n as i64),
            Proto::Resp3 => self.header(b'%', n as i64),
        }
    }

    /// The header of a set of `n` elements: `~n` (RESP3) or an array (RESP2).
    pub fn set(&mut self, n: usize) {
        match self.proto {
            Proto::Resp2 => self.header(b'*', n as i64),
            Proto::Resp3 => self.header(b'~', n as i64),
        }
    }

    /// A double: a bulk string (RESP2) or `,` (RESP3), formatted as Redis 7.0 does
    /// ([`format_double`]).
    pub fn double(&mut self, d: f64) {
        let text = format_double(d);
        match self.proto {
            Proto::Resp2 => self.bulk(text.as_bytes()),
            Proto::Resp3 => {
                self.out.push(b',');
                self.out.extend_from_slice(text.as_bytes());
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A verbatim text (`=` in RESP3, a bulk string in RESP2), as `INFO` replies.
    pub fn verbatim(&mut self, text: &str) {
        match self.proto {
            Proto::Resp2 => self.bulk(text.as_bytes()),
            Proto::Resp3 => {
                self.header(b'=', text.len() as i64 + 4);
                self.out.extend_from_slice(b"txt:");
                self.out.extend_from_slice(text.as_bytes());
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }
}

/// `d` as C's `printf("%.17g")`, which Redis 7.0 replies scores with (`1.1000000000000001`,
/// `3`, `1e+21`), and `inf`, `-inf`, `nan`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.into();
    }
    // 17 significant digits; the exponent of the rounded value picks the style, as %g does.
    let sci = format!("{d:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..17).contains(&exp) {
        let decimals = (16 - exp) as usize;
        trim(&format!("{d:.decimals$}"))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

fn itoa_buf(n: i64) -> Vec<u8> {
    let mut v = Vec::with_capacity(20);
    // Writing to a Vec cannot fail.
    let _ = write!(v, "{n}");
    v
}

/// A request as clients send it: an array of bulk strings.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut r = Reply {
        out: &mut out,
        proto: Proto::Resp2,
    };
    r.array(args.len());
    for a in args {
        r.bulk(a.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::resp::{parse_value, Parse, Value};

    #[test]
    fn doubles_are_formatted_as_redis_7_0_formats_scores() {
        // What redis-server 7.0.15 replied to ZSCORE after ZADD of the left-hand text.
        for (score, text) in [
            (1.1, "1.1000000000000001"),
            (3.0, "3"),
            (1e21, "1e+21"),
            (1e17, "1e+17"),
            (1e16, "10000000000000000"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (1e-7, "9.9999999999999995e-08"),
            (-2.5, "-2.5"),
            (1.5e300, "1.5000000000000001e+300"),
            (0.0, "0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_double(score), text, "{score}");
        }
        let mut out = Vec::new();
        Reply {
            out: &mut out,
            proto: Proto::Resp3,
        }
        .double(2.5);
        assert_eq!(out, b",2.5\r\n");
    }

    #[test]
    fn replies_round_trip_through_the_decoder() {
        for proto in [Proto::Resp2, Proto::Resp3] {
            let mut out = Vec::new();
            let mut r = Reply {
                out: &mut out,
                proto,
            };
            r.array(5);
            r.ok();
            r.int(-7);
            r.bulk(b"a\r\nb");
            r.null();
            r.map(1);
            r.bulk(b"f");
            r.bulk(b"v");
            let Parse::Done(v, n) = parse_value(&out, 100, 100).unwrap() else {
                panic!("incomplete");
            };
            assert_eq!(n, out.len());
            let map = match proto {
                Proto::Resp2 => {
                    Value::Array(vec![Value::Bulk(b"f".to_vec()), Value::Bulk(b"v".to_vec())])
                }
                Proto::Resp3 => Value::Map(vec![(
                    Value::Bulk(b"f".to_vec()),
                    Value::Bulk(b"v".to_vec()),
                )]),
            };
            assert_eq!(
                v,
                Value::Array(vec![
                    Value::Simple(b"OK".to_vec()),
                    Value::Integer(-7),
                    Value::Bulk(b"a\r\nb".to_vec()),
                    Value::Nil,
                    map,
                ])
            );
        }
        assert_eq!(
            encode_command(&["GET", "k"]),
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
        );
    }
}
