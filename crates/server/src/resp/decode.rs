//! The RESP decoder. Two entry points: [`parse_command`] reads one client request (a RESP
//! array of bulk strings, or an inline command line as telnet sends), and [`parse_value`]
//! reads any RESP2/RESP3 value (a reply, for clients and tests). Both work on a byte slice
//! that may hold a partial message, never panic and never allocate more than the bytes they
//! were given justify: a declared length is checked against the limits before anything is
//! reserved.

use super::ProtocolError;
use crate::security::{PREAUTH_MAX_ARGS, PREAUTH_MAX_BULK};

/// Limits a request must respect (see [`crate::ServerOptions`] for their defaults).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest bulk string (argument) accepted.
    pub max_bulk: usize,
    /// Most arguments in one request.
    pub max_args: usize,
    /// Longest inline command line.
    pub max_inline: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk: 512 << 20,
            max_args: 1 << 20,
            max_inline: 64 << 10,
        }
    }
}

/// The outcome of parsing from the start of a buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Parse<T> {
    /// A complete message and the bytes it took.
    Done(T, usize),
    /// The buffer holds the start of a message; it needs at least this many bytes in all
    /// before parsing again can make progress.
    Incomplete(usize),
}

/// One client request: its arguments (an empty list for an empty line or `*0`, which
/// Redis ignores).
pub type Args = Vec<Vec<u8>>;

/// Finds the end of the line starting at `from`: the index of its `\r` (which must be
/// followed by `\n`), or `None` when the buffer ends first.
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    let i = rest.iter().position(|&b| b == b'\n')?;
    if i == 0 || rest[i - 1] != b'\r' {
        // A bare `\n`: reported as a line ending at i (the caller checks the `\r`).
        return Some(from + i);
    }
    Some(from + i - 1)
}

/// Parses a decimal integer as RESP writes lengths and integers (optional `-`, digits).
fn parse_int(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if neg { -v } else { v })
}

/// Reads the line starting at `pos` (after a type byte): its content and the index after
/// its `\r\n`. `Ok(None)` when incomplete.
fn read_line(buf: &[u8], pos: usize, max: usize) -> Result<Option<(&[u8], usize)>, ProtocolError> {
    match line_end(buf, pos) {
        None => {
            if buf.len().saturating_sub(pos) > max {
                return Err(ProtocolError::LineTooLong);
            }
            Ok(None)
        }
        Some(end) => {
            if buf.get(end) != Some(&b'\r') || buf.get(end + 1) != Some(&b'\n') {
                return Err(ProtocolError::BadLineEnding);
            }
            if end - pos > max {
                return Err(ProtocolError::LineTooLong);
            }
            Ok(Some((&buf[pos..end], end + 2)))
        }
    }
}

/// Longest length or integer line (`*`, `$`, `:` headers).
const MAX_HEADER: usize = 32;

/// Parses one request from the start of `buf`.
pub fn parse_command(buf: &[u8], lim: &Limits) -> Result<Parse<Args>, ProtocolError> {
    parse_command_resume(buf, lim, &mut None)
}

/// The state of [`parse_request`]: a request array parsed in part (where each argument read
/// so far lies in the buffer, and where the next starts), so that parsing resumes there when
/// more bytes arrive (a long request costs linear time however it is split); after a complete
/// array, where its arguments lie. Kept from request to request, it allocates nothing in the
/// steady state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Partial {
    /// An array is being parsed.
    active: bool,
    n: usize,
    /// Start and end of each argument read so far, in the buffer.
    spans: Vec<(usize, usize)>,
    pos: usize,
}

impl Partial {
    /// Whether a request array is parsed in part.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Where the arguments of the request array just parsed lie in the buffer it was parsed
    /// from (empty for `*0`).
    pub fn spans(&self) -> &[(usize, usize)] {
        &self.spans
    }

    /// Bytes it holds allocated (for the accounting of client memory).
    pub fn capacity_bytes(&self) -> usize {
        self.spans.capacity() * std::mem::size_of::<(usize, usize)>()
    }
}

/// A complete request found by [`parse_request`].
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// A request array, its arguments in the buffer at [`Partial::spans`] (none: `*0`,
    /// which Redis ignores).
    Array,
    /// An inline command (as telnet sends), split into arguments (none: an empty line).
    Inline(Args),
}

/// Parses one request from the start of `buf`, resuming from `partial` (left by an earlier
/// call on a prefix of the same bytes, or by a complete request). An array's arguments are
/// not copied: [`Partial::spans`] says where they are.
pub fn parse_request(
    buf: &[u8],
    lim: &Limits,
    p: &mut Partial,
) -> Result<Parse<Request>, ProtocolError> {
    parse_request_as(buf, lim, p, false)
}

/// [`parse_request`] for a client that has not authenticated yet: as Redis 7 (which closed
/// CVE-2021-32675 so), a request array of more than [`PREAUTH_MAX_ARGS`] arguments or an
/// argument longer than [`PREAUTH_MAX_BULK`] bytes is a protocol error
/// ([`ProtocolError::UnauthenticatedMultibulkLength`],
/// [`ProtocolError::UnauthenticatedBulkLength`]) before its bytes are read, so such a client
/// cannot make the server hold more than a few hundred KiB.
pub fn parse_request_unauthenticated(
    buf: &[u8],
    lim: &Limits,
    p: &mut Partial,
) -> Result<Parse<Request>, ProtocolError> {
    parse_request_as(buf, lim, p, true)
}

fn parse_request_as(
    buf: &[u8],
    lim: &Limits,
    p: &mut Partial,
    preauth: bool,
) -> Result<Parse<Request>, ProtocolError> {
    let r = parse_request_inner(buf, lim, p, preauth);
    if !matches!(r, Ok(Parse::Incomplete(_))) {
        p.active = false;
    }
    r
}

fn parse_request_inner(
    buf: &[u8],
    lim: &Limits,
    p: &mut Partial,
    preauth: bool,
) -> Result<Parse<Request>, ProtocolError> {
    if !p.active {
        match buf.first() {
            None => return Ok(Parse::Incomplete(1)),
            Some(b'*') => {
                let Some((line, pos)) = read_line(buf, 1, MAX_HEADER)
                    .map_err(|_| ProtocolError::InvalidMultibulkLength)?
                else {
                    return Ok(Parse::Incomplete(buf.len() + 1));
                };
                let n = parse_int(line).ok_or(ProtocolError::InvalidMultibulkLength)?;
                p.spans.clear();
                if n <= 0 {
                    return Ok(Parse::Done(Request::Array, pos));
                }
                if n as u64 > lim.max_args as u64 {
                    return Err(ProtocolError::InvalidMultibulkLength);
                }
                if preauth && n as u64 > PREAUTH_MAX_ARGS as u64 {
                    return Err(ProtocolError::UnauthenticatedMultibulkLength);
                }
                let n = n as usize;
                // Every argument takes at least 5 bytes (`$0\r\n\r\n`): reserve no more
                // than the buffer can hold, so a large declared count costs nothing until its
                // bytes arrive.
                p.spans.reserve(n.min(buf.len() / 5 + 1));
                p.n = n;
                p.pos = pos;
                p.active = true;
            }
            Some(_) => {
                return Ok(match parse_inline(buf, lim)? {
                    Parse::Done(args, n) => Parse::Done(Request::Inline(args), n),
                    Parse::Incomplete(k) => Parse::Incomplete(k),
                })
            }
        }
    }
    while p.spans.len() < p.n {
        let pos = p.pos;
        match buf.get(pos) {
            None => return Ok(Parse::Incomplete(pos + 1)),
            Some(b'$') => {}
            Some(&c) => return Err(ProtocolError::ExpectedDollar(c)),
        }
        let Some((line, next)) =
            read_line(buf, pos + 1, MAX_HEADER).map_err(|_| ProtocolError::InvalidBulkLength)?
        else {
            return Ok(Parse::Incomplete(buf.len() + 1));
        };
        let len = parse_int(line).ok_or(ProtocolError::InvalidBulkLength)?;
        if len < 0 || len as u64 > lim.max_bulk as u64 {
            return Err(ProtocolError::InvalidBulkLength);
        }
        if preauth && len as u64 > PREAUTH_MAX_BULK as u64 {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
        let len = len as usize;
        match bulk_body(buf, next, len)? {
            Parse::Done(_, after) => {
                p.spans.push((next, next + len));
                p.pos = after;
            }
            Parse::Incomplete(need) => return Ok(Parse::Incomplete(need)),
        }
    }
    Ok(Parse::Done(Request::Array, p.pos))
}

/// Parses one request from the start of `buf` into owned arguments, resuming from `partial`
/// (left by an earlier call on a prefix of the same bytes) and leaving it set while the
/// request is incomplete.
pub fn parse_command_resume(
    buf: &[u8],
    lim: &Limits,
    partial: &mut Option<Partial>,
) -> Result<Parse<Args>, ProtocolError> {
    let p = partial.get_or_insert_with(Partial::default);
    let r = match parse_request(buf, lim, p) {
        Ok(Parse::Done(Request::Array, n)) => {
            let args = p.spans.iter().map(|&(s, e)| buf[s..e].to_vec()).collect();
            Ok(Parse::Done(args, n))
        }
        Ok(Parse::Done(Request::Inline(args), n)) => Ok(Parse::Done(args, n)),
        Ok(Parse::Incomplete(k)) => Ok(Parse::Incomplete(k)),
        Err(e) => Err(e),
    };
    if !p.active {
        *partial = None;
    }
    r
}

/// The body of `len` bytes that starts at `at` in `buf` and the position after its CRLF, or
/// how many bytes `buf` must hold to have it all.
fn bulk_body(buf: &[u8], at: usize, len: usize) -> Result<Parse<&[u8]>, ProtocolError> {
    let end = at + len;
    if buf.len() < end + 2 {
        return Ok(Parse::Incomplete(end + 2));
    }
    if &buf[end..end + 2] != b"\r\n" {
        return Err(ProtocolError::BadLineEnding);
    }
    Ok(Parse::Done(&buf[at..end], end + 2))
}

fn parse_inline(buf: &[u8], lim: &Limits) -> Result<Parse<Args>, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > lim.max_inline {
            return Err(ProtocolError::InlineTooLong);
        }
        return Ok(Parse::Incomplete(buf.len() + 1));
    };
    if nl > lim.max_inline {
        return Err(ProtocolError::InlineTooLong);
    }
    let line = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
    let args = split_args(line)?;
    if args.len() > lim.max_args {
        return Err(ProtocolError::InvalidMultibulkLength);
    }
    Ok(Parse::Done(args, nl + 1))
}

/// Splits an inline command line into arguments as Redis's `sdssplitargs` does: blanks
/// separate arguments; `"..."` understands `\n`, `\r`, `\t`, `\b`, `\a`, `\\`, `\"` and
/// `\xHH`; `'...'` understands `\'`; a closing quote must be followed by a blank or the end.
pub fn split_args(line: &[u8]) -> Result<Args, ProtocolError> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Ok(out);
        }
        let mut cur = Vec::new();
        let mut quote = None;
        loop {
            if let Some(q) = quote {
                if i >= n {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\' {
                    if let Some((b, len)) = unescape(&line[i..], q) {
                        cur.push(b);
                        i += len;
                        continue;
                    }
                }
                if c == q {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    i += 1;
                    break;
                }
                cur.push(c);
                i += 1;
            } else {
                if i >= n || line[i].is_ascii_whitespace() {
                    break;
                }
                match line[i] {
                    q @ (b'"' | b'\'') if cur.is_empty() => quote = Some(q),
                    c => cur.push(c),
                }
                i += 1;
            }
        }
        out.push(cur);
    }
}

/// The byte a backslash at the start of `rest`, inside `quote`s, escapes and how many bytes
/// the escape takes; `None` where the backslash stands for itself (`'...'` knows only `\'`).
fn unescape(rest: &[u8], quote: u8) -> Option<(u8, usize)> {
    let next = *rest.get(1)?;
    if quote == b'\'' {
        return (next == b'\'').then_some((b'\'', 2));
    }
    if next == b'x' && rest.len() > 3 {
        if let (Some(h), Some(l)) = (hex(rest[2]), hex(rest[3])) {
            return Some((h * 16 + l, 4));
        }
    }
    let b = match next {
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'b' => 8,
        b'a' => 7,
        other => other,
    };
    Some((b, 2))
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// A RESP2 or RESP3 value, as a server replies.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `+OK`: a simple string.
    Simple(Vec<u8>),
    /// `-ERR ...`: an error.
    Error(Vec<u8>),
    /// `:42`: an integer.
    Integer(i64),
    /// `$3\r\nabc`: a bulk string (`$-1` is [`Value::Nil`]).
    Bulk(Vec<u8>),
    /// `*N`: an array (`*-1` is [`Value::Nil`]).
    Array(Vec<Value>),
    /// RESP2's `$-1` / `*-1`, RESP3's `_`.
    Nil,
    /// RESP3 `#t` / `#f`.
    Boolean(bool),
    /// RESP3 `,1.5` (kept as text).
    Double(Vec<u8>),
    /// RESP3 `(123...`: a big number, as text.
    BigNumber(Vec<u8>),
    /// RESP3 `=N\r\ntxt:...`: a verbatim string (format and text).
    Verbatim(Vec<u8>),
    /// RESP3 `%N`: a map.
    Map(Vec<(Value, Value)>),
    /// RESP3 `~N`: a set.
    Set(Vec<Value>),
    /// RESP3 `>N`: a push message.
    Push(Vec<Value>),
}

impl Value {
    /// The bytes of a simple, bulk or verbatim string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Simple(b) | Value::Bulk(b) | Value::Verbatim(b) => Some(b),
            _ => None,
        }
    }
}

/// Deepest nesting accepted by [`parse_value`].
pub const MAX_DEPTH: usize = 64;

/// Parses one RESP2/RESP3 value from the start of `buf`, refusing bulk strings longer than
/// `max_bulk` and aggregates longer than `max_len` or nested deeper than [`MAX_DEPTH`].
pub fn parse_value(
    buf: &[u8],
    max_bulk: usize,
    max_len: usize,
) -> Result<Parse<Value>, ProtocolError> {
    parse_value_at(buf, 0, max_bulk, max_len, 0)
}

fn parse_value_at(
    buf: &[u8],
    pos: usize,
    max_bulk: usize,
    max_len: usize,
    depth: usize,
) -> Result<Parse<Value>, ProtocolError> {
    if depth > MAX_DEPTH {
        return Err(ProtocolError::TooDeep);
    }
    let Some(&t) = buf.get(pos) else {
        return Ok(Parse::Incomplete(pos + 1));
    };
    let max_line = max_bulk.max(MAX_HEADER);
    let Some((line, next)) = read_line(buf, pos + 1, max_line)? else {
        return Ok(Parse::Incomplete(buf.len() + 1));
    };
    let int = || parse_int(line).ok_or(ProtocolError::InvalidInteger);
    let v = match t {
        b'+' => Value::Simple(line.to_vec()),
        b'-' => Value::Error(line.to_vec()),
        b':' => Value::Integer(int()?),
        b',' => Value::Double(line.to_vec()),
        b'(' => Value::BigNumber(line.to_vec()),
        b'_' => {
            if !line.is_empty() {
                return Err(ProtocolError::UnexpectedByte(t));
            }
            Value::Nil
        }
        b'#' => match line {
            b"t" => Value::Boolean(true),
            b"f" => Value::Boolean(false),
            _ => return Err(ProtocolError::UnexpectedByte(t)),
        },
        b'$' | b'=' | b'!' => {
            let len = int()?;
            if len < 0 {
                if t == b'$' {
                    return Ok(Parse::Done(Value::Nil, next));
                }
                return Err(ProtocolError::InvalidBulkLength);
            }
            if len as u64 > max_bulk as u64 {
                return Err(ProtocolError::InvalidBulkLength);
            }
            let (body, after) = match bulk_body(buf, next, len as usize)? {
                Parse::Done(body, after) => (body.to_vec(), after),
                Parse::Incomplete(need) => return Ok(Parse::Incomplete(need)),
            };
            let v = match t {
                b'$' => Value::Bulk(body),
                b'=' => Value::Verbatim(body),
                _ => Value::Error(body),
            };
            return Ok(Parse::Done(v, after));
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = int()?;
            if n < 0 {
                if t == b'*' {
                    return Ok(Parse::Done(Value::Nil, next));
                }
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            if n as u64 > max_len as u64 {
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            let items = if matches!(t, b'%' | b'|') {
                2 * n as usize
            } else {
                n as usize
            };
            // Every element takes at least 3 bytes.
            let mut vals = Vec::with_capacity(items.min(buf.len().saturating_sub(next) / 3 + 1));
            let mut p = next;
            for _ in 0..items {
                match parse_value_at(buf, p, max_bulk, max_len, depth + 1)? {
                    Parse::Done(v, q) => {
                        vals.push(v);
                        p = q;
                    }
                    Parse::Incomplete(need) => return Ok(Parse::Incomplete(need)),
                }
            }
            let v = match t {
                b'*' => Value::Array(vals),
                b'~' => Value::Set(vals),
                b'>' => Value::Push(vals),
                b'%' => Value::Map(pairs(vals)),
                _ => {
                    // `|`: attributes precede the value they describe; skip them.
                    return parse_value_at(buf, p, max_bulk, max_len, depth + 1);
                }
            };
            return Ok(Parse::Done(v, p));
        }
        other => return Err(ProtocolError::UnexpectedByte(other)),
    };
    Ok(Parse::Done(v, next))
}

fn pairs(vals: Vec<Value>) -> Vec<(Value, Value)> {
    let mut out = Vec::with_capacity(vals.len() / 2);
    let mut it = vals.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn done(buf: &[u8]) -> (Args, usize) {
        match parse_command(buf, &Limits::default()).unwrap() {
            Parse::Done(a, n) => (a, n),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn multibulk_and_inline_requests_parse() {
        let (a, n) = done(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nrest");
        assert_eq!(a, vec![b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(n, 20);
        let (a, _) = done(b"set k \"a b\\x41\\n\" 'c\\'d'\r\n");
        assert_eq!(
            a,
            vec![
                b"set".to_vec(),
                b"k".to_vec(),
                b"a bA\n".to_vec(),
                b"c'd".to_vec()
            ]
        );
        assert_eq!(done(b"\r\n").0, Args::new());
        assert_eq!(done(b"*0\r\n").0, Args::new());
    }

    #[test]
    fn every_prefix_of_a_request_is_incomplete() {
        let msg = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
        for i in 0..msg.len() {
            match parse_command(&msg[..i], &Limits::default()).unwrap() {
                Parse::Incomplete(need) => assert!(need > i, "{i}: needs {need}"),
                d => panic!("prefix {i} parsed: {d:?}"),
            }
        }
        assert_eq!(done(msg).1, msg.len());
    }

    #[test]
    fn resumed_parsing_gives_the_same_request_for_every_split() {
        let msg = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
        let whole = done(msg);
        for i in 0..msg.len() {
            let mut p = None;
            let lim = Limits::default();
            match parse_command_resume(&msg[..i], &lim, &mut p).unwrap() {
                Parse::Incomplete(_) => {}
                d => panic!("{d:?}"),
            }
            assert_eq!(
                parse_command_resume(msg, &lim, &mut p).unwrap(),
                Parse::Done(whole.0.clone(), whole.1)
            );
            assert_eq!(p, None);
        }
    }

    #[test]
    fn bad_requests_are_protocol_errors() {
        let lim = Limits {
            max_bulk: 10,
            max_args: 4,
            max_inline: 16,
        };
        let bad: [&[u8]; 7] = [
            b"*x\r\n",
            b"*5\r\n",
            b"*1\r\n$11\r\n",
            b"*1\r\n+3\r\n",
            b"*1\r\n$-2\r\n",
            b"*1\r\n$1\r\nab\r\n",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ];
        for b in bad {
            assert!(
                parse_command(b, &lim).is_err(),
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
        assert_eq!(
            parse_command(b"set \"a\"b\n", &lim),
            Err(ProtocolError::UnbalancedQuotes)
        );
    }

    #[test]
    fn unauthenticated_requests_are_held_to_ten_arguments_of_16_kib() {
        let lim = Limits::default();
        let pre = |b: &[u8]| parse_request_unauthenticated(b, &lim, &mut Partial::default());
        let ok = |b: &[u8]| parse_request(b, &lim, &mut Partial::default());
        let eleven = b"*11\r\n";
        assert_eq!(
            pre(eleven),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
        assert!(matches!(ok(eleven), Ok(Parse::Incomplete(_))));
        assert!(matches!(pre(b"*10\r\n"), Ok(Parse::Incomplete(_))));
        let big = b"*2\r\n$4\r\nAUTH\r\n$16385\r\n";
        assert_eq!(pre(big), Err(ProtocolError::UnauthenticatedBulkLength));
        assert!(matches!(ok(big), Ok(Parse::Incomplete(_))));
        assert!(matches!(
            pre(b"*2\r\n$4\r\nAUTH\r\n$16384\r\n"),
            Ok(Parse::Incomplete(_))
        ));
        // Past the server's own limits the usual error comes first, as in Redis.
        assert_eq!(
            pre(b"*99999999999\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            ProtocolError::UnauthenticatedBulkLength.to_string(),
            "Protocol error: unauthenticated bulk length"
        );
    }

    #[test]
    fn values_of_both_protocols_parse() {
        let v = parse_value(b"*3\r\n:1\r\n$-1\r\n%1\r\n+a\r\n#t\r\n", 100, 100).unwrap();
        assert_eq!(
            v,
            Parse::Done(
                Value::Array(vec![
                    Value::Integer(1),
                    Value::Nil,
                    Value::Map(vec![(Value::Simple(b"a".to_vec()), Value::Boolean(true))]),
                ]),
                25
            )
        );
        assert!(matches!(
            parse_value(b"*2\r\n:1\r\n", 100, 100).unwrap(),
            Parse::Incomplete(_)
        ));
        assert!(parse_value(b"?\r\n", 100, 100).is_err());
        let deep = "*1\r\n".repeat(MAX_DEPTH + 2);
        assert_eq!(
            parse_value(deep.as_bytes(), 100, 100),
            Err(ProtocolError::TooDeep)
        );
    }
}
