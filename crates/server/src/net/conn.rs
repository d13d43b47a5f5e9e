//! One client connection: its socket, input buffer (requests not yet parsed), output buffer
//! (replies not yet sent) and the limits on both.

use crate::commands::ConnState;
use crate::resp::{
    parse_request, parse_request_unauthenticated, Batch, Limits, Parse, Partial, ProtocolError,
    Reply, Request,
};
use crate::security::is_http_request_name;
use mio::net::TcpStream;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

/// Bytes read ahead of the parser when no partial request needs more.
const READ_AHEAD: usize = 64 << 10;
/// Most bytes of arguments a parse reserves room for before it knows what is complete.
const RESERVE_AHEAD: usize = 256 << 10;
/// Size of the network loop's read buffer.
pub(crate) const SCRATCH: usize = 256 << 10;
/// Buffers larger than this are given back to the allocator once empty.
const KEEP_CAPACITY: usize = 256 << 10;
/// A spare buffer (a round's batch or reply buffer, kept for the next round) larger than this
/// is given back: idle connections hold little.
pub(crate) const KEEP_SPARE: usize = 64 << 10;

/// What reading found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// Nothing more to read for now.
    Open,
    /// The client closed its side (or the socket failed).
    Closed,
}

/// Why parsing stopped before the end of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParseEnd {
    /// The input is not RESP: answer with the error, then close.
    Protocol(ProtocolError),
    /// A request named `POST` or `Host:`: an HTTP request. Close at once; execute nothing.
    CrossProtocol,
}

/// A client connection.
#[derive(Debug)]
pub(crate) struct Conn {
    pub stream: TcpStream,
    /// The client's address.
    pub peer: SocketAddr,
    pub gen: u64,
    pub state: ConnState,
    inbuf: Vec<u8>,
    /// Parsed bytes at the start of `inbuf`.
    in_start: usize,
    /// Unparsed bytes the parser needs before it can make progress.
    need: usize,
    /// The parser's state: the request being parsed, when only part of it has arrived.
    partial: Partial,
    out: Vec<u8>,
    out_pos: usize,
    /// Buffers of the last round, emptied, reused by the next: its request batch and a reply
    /// buffer (no allocation per round in the steady state).
    spare_cmds: Batch,
    spare_out: Vec<u8>,
    /// The socket may have bytes to read (edge-triggered: set by an event, cleared when a
    /// read would block).
    pub may_read: bool,
    /// The poll reported the peer's end of the stream (or an error): reads go on until they
    /// return 0 (no event will announce it again).
    pub peer_done: bool,
    /// The client closed its side.
    pub eof: bool,
    /// A job of this connection is with the engine thread.
    pub in_flight: bool,
    /// Close once the output is sent (QUIT, a protocol error, EOF).
    pub closing: bool,
    /// A protocol error to reply after the replies of the job under way, before closing.
    pub error_after: Option<String>,
    /// Last input or output.
    pub last_active: Instant,
    /// Last time output went out (or the output buffer was empty).
    pub last_write: Instant,
    /// Bytes of buffers counted against the server's client memory (see [`Conn::memory`]),
    /// as last counted.
    pub accounted: usize,
}

impl Conn {
    pub fn new(stream: TcpStream, peer: SocketAddr, gen: u64, state: ConnState) -> Self {
        let now = Instant::now();
        Conn {
            stream,
            peer,
            gen,
            state,
            inbuf: Vec::new(),
            in_start: 0,
            need: 1,
            partial: Partial::default(),
            out: Vec::new(),
            out_pos: 0,
            spare_cmds: Batch::default(),
            spare_out: Vec::new(),
            may_read: true,
            peer_done: false,
            eof: false,
            in_flight: false,
            closing: false,
            error_after: None,
            last_active: now,
            last_write: now,
            accounted: 0,
        }
    }

    /// Bytes its buffers hold allocated: input, output, the parser's state and the spare
    /// buffers kept for the next round.
    pub fn memory(&self) -> usize {
        self.inbuf.capacity()
            + self.out.capacity()
            + self.partial.capacity_bytes()
            + self.spare_cmds.capacity_bytes()
            + self.spare_out.capacity()
    }

    /// Unparsed input bytes.
    pub fn unparsed(&self) -> usize {
        self.inbuf.len() - self.in_start
    }

    /// Reply bytes waiting to be sent.
    pub fn pending_output(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Reads while the socket has bytes, up to what the parser needs (at least a read-ahead)
    /// and never past `max_request` unparsed bytes, through `scratch` (the loop's one read
    /// buffer: only the bytes read are copied, none are zeroed per read). Returns bytes read
    /// and the outcome.
    pub fn read_input(&mut self, scratch: &mut [u8], max_request: usize) -> (usize, ReadOutcome) {
        let mut total = 0;
        while self.may_read && !self.eof {
            let want = self.need.max(READ_AHEAD).min(max_request + 1);
            let have = self.unparsed();
            if have >= want {
                break;
            }
            if self.in_start > 0 && self.in_start == self.inbuf.len() {
                self.inbuf.clear();
                self.in_start = 0;
            }
            let room = (want - have).min(scratch.len());
            match self.stream.read(&mut scratch[..room]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.inbuf.extend_from_slice(&scratch[..n]);
                    total += n;
                    self.last_active = Instant::now();
                    if n < room && !self.peer_done {
                        // A short read emptied the socket's receive queue: bytes arriving
                        // from now on raise a new edge-triggered event, so the read that would
                        // only say `WouldBlock` (a system call per request) is skipped, as
                        // nginx does.
                        self.may_read = false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.may_read = false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return (total, ReadOutcome::Closed),
            }
        }
        let outcome = if self.eof {
            ReadOutcome::Closed
        } else {
            ReadOutcome::Open
        };
        (total, outcome)
    }

    /// Parses up to `max` complete requests from the input, with the limits of a client that
    /// has not authenticated unless `authed`. A protocol error ends the list (the requests
    /// before it are still returned); a request named `POST` or `Host:` ends it too, and then
    /// the requests before it must not be executed either (the connection is to be closed).
    pub fn parse(&mut self, lim: &Limits, max: usize, authed: bool) -> (Batch, Option<ParseEnd>) {
        if self.unparsed() < self.need {
            return (Batch::default(), None);
        }
        // The arguments are at most the unparsed bytes, each at least 5 of them (`$0\r\n\r\n`):
        // room for a round of pipelined requests at once, rather than growing the buffers
        // step by step; a larger request gets room for itself once complete (a partial one
        // gets none: memory only for bytes that arrived, and only once).
        let n = self.unparsed().min(RESERVE_AHEAD);
        let mut cmds = std::mem::take(&mut self.spare_cmds);
        cmds.reserve(n, (n / 5).min(1 << 12));
        while cmds.len() < max {
            // A partly parsed request resumes where it stopped: linear in its length.
            let buf = &self.inbuf[self.in_start..];
            let parsed = if authed {
                parse_request(buf, lim, &mut self.partial)
            } else {
                parse_request_unauthenticated(buf, lim, &mut self.partial)
            };
            match parsed {
                Ok(Parse::Done(req, n)) => {
                    let name = match &req {
                        Request::Array => self
                            .partial
                            .spans()
                            .first()
                            .and_then(|&(s, e)| buf.get(s..e)),
                        Request::Inline(args) => args.first().map(Vec::as_slice),
                    };
                    if name.is_some_and(is_http_request_name) {
                        // Nothing from this client is executed any more: drop its input.
                        self.inbuf = Vec::new();
                        self.in_start = 0;
                        self.eof = true;
                        return (cmds, Some(ParseEnd::CrossProtocol));
                    }
                    match req {
                        Request::Array => {
                            let spans = self.partial.spans();
                            let bytes = spans.iter().map(|&(s, e)| e - s).sum();
                            cmds.reserve(bytes, spans.len());
                            cmds.push(
                                spans
                                    .iter()
                                    .map(|&(s, e)| buf.get(s..e).unwrap_or_default()),
                            )
                        }
                        Request::Inline(args) => cmds.push(args.iter().map(Vec::as_slice)),
                    }
                    self.in_start += n;
                    self.need = 1;
                }
                Ok(Parse::Incomplete(need)) => {
                    self.need = need;
                    break;
                }
                Err(e) => return (cmds, Some(ParseEnd::Protocol(e))),
            }
        }
        if self.in_start == self.inbuf.len() {
            self.inbuf.clear();
            self.in_start = 0;
            if self.inbuf.capacity() > KEEP_CAPACITY {
                self.inbuf = Vec::new();
            }
        } else if self.in_start > self.inbuf.len() / 2 {
            self.inbuf.drain(..self.in_start);
            self.in_start = 0;
        }
        if cmds.is_empty() {
            // Nothing complete yet: the batch stays for the next call.
            self.spare_cmds = cmds;
            return (Batch::default(), None);
        }
        (cmds, None)
    }

    /// Appends replies.
    pub fn push_output(&mut self, bytes: &[u8]) {
        if self.pending_output() == 0 {
            self.last_write = Instant::now();
        }
        if self.out.is_empty() && self.out.capacity() < bytes.len() {
            self.out = bytes.to_vec();
            return;
        }
        self.out.extend_from_slice(bytes);
    }

    /// Appends a round's replies, taking their buffer when nothing is pending; keeps the
    /// round's batch and a reply buffer for the next round.
    pub fn push_output_owned(&mut self, mut bytes: Vec<u8>, cmds: Batch) {
        self.spare_cmds = cmds;
        if self.out.is_empty() {
            self.last_write = Instant::now();
            std::mem::swap(&mut self.out, &mut bytes);
            self.out_pos = 0;
        } else {
            self.push_output(&bytes);
        }
        bytes.clear();
        if bytes.capacity() <= KEEP_SPARE {
            self.spare_out = bytes;
        }
    }

    /// A reply buffer for a round (empty).
    pub fn take_reply_buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.spare_out)
    }

    /// Appends an error reply.
    pub fn push_error(&mut self, msg: &str) {
        let mut buf = Vec::new();
        Reply {
            out: &mut buf,
            proto: self.state.proto,
        }
        .error(msg);
        self.push_output(&buf);
    }

    /// Writes pending output until done or the socket is full. Returns bytes written, or
    /// `Err` when the socket failed.
    pub fn write_output(&mut self) -> std::io::Result<usize> {
        let mut total = 0;
        while self.out_pos < self.out.len() {
            match self.stream.write(&self.out[self.out_pos..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.out_pos += n;
                    total += n;
                    let now = Instant::now();
                    self.last_write = now;
                    self.last_active = now;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            if self.out.capacity() > KEEP_CAPACITY {
                self.out = Vec::new();
            }
        }
        Ok(total)
    }
}
