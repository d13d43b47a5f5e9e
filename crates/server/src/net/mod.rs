//! The network loop: one thread, one `mio` poll over the listener and every connection
//! (edge-triggered, no thread per connection), as Redis's event loop. It reads and parses
//! requests and makes each poll iteration's requests one round: a small one it executes
//! itself while the engine thread is idle (no hand-off), a larger one it hands to the engine
//! thread, and it writes the replies back when the engine thread wakes it. Limits: `max_clients`
//! connections, `max_request` bytes of unparsed input and `max_output` bytes of pending
//! replies per connection, `max_client_memory` for all of them together ([`memory`]),
//! `idle_timeout`, `output_stall_timeout`; before `AUTH`, small requests one at a time;
//! protected mode at accept; a request named `POST` or `Host:` closes its connection.

mod conn;
mod memory;

pub(crate) use conn::KEEP_SPARE;

use crate::backend::Backend;
use crate::commands::{CommandTable, ConnState};
use crate::engine::{self, Done, Engine, Job, ToEngine};
use crate::error::ServerError;
use crate::events::{EventSink, ServerEvent};
use crate::options::{AppendFsync, ServerOptions};
use crate::resp::{Limits, Proto};
use crate::security;
use crate::stats::{Shared, Stats};
use conn::{Conn, ParseEnd, ReadOutcome};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);
/// Longest wait of one poll: how soon a stop request, a timeout or a retried accept is seen.
const TICK: Duration = Duration::from_millis(100);
/// How long a stopping server keeps sending pending replies.
const DRAIN: Duration = Duration::from_secs(5);

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    opts: ServerOptions,
    commands: CommandTable,
    events: Option<Arc<dyn EventSink>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("opts", &self.opts)
            .field("events", &self.events.is_some())
            .finish()
    }
}

/// What a server did, returned when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServeReport {
    /// Connections accepted.
    pub connections: u64,
    /// Commands executed.
    pub commands: u64,
    /// Connections refused at the limit.
    pub rejected: u64,
}

impl Server {
    /// Binds `addr` (`127.0.0.1:6379`; port 0 picks a free port) after checking `opts`.
    pub fn bind(addr: &str, opts: ServerOptions) -> Result<Server, ServerError> {
        if opts.max_clients == 0 {
            return Err(ServerError::InvalidOption(
                "max_clients must be at least 1".into(),
            ));
        }
        if opts.max_request <= opts.max_bulk {
            return Err(ServerError::InvalidOption(
                "max_request (client-query-buffer-limit) must exceed max_bulk \
                 (proto-max-bulk-len)"
                    .into(),
            ));
        }
        if opts.max_pipeline == 0 {
            return Err(ServerError::InvalidOption(
                "max_pipeline must be at least 1".into(),
            ));
        }
        if opts.requirepass.as_ref().is_some_and(|p| p.is_empty()) {
            return Err(ServerError::InvalidOption(
                "the password (requirepass) is empty".into(),
            ));
        }
        let commands = CommandTable::with_renames(&opts.rename_commands)?;
        let bind_err = |source| ServerError::Bind {
            addr: addr.to_string(),
            source,
        };
        let std_listener = std::net::TcpListener::bind(addr).map_err(bind_err)?;
        std_listener.set_nonblocking(true).map_err(bind_err)?;
        let addr = std_listener.local_addr().map_err(bind_err)?;
        Ok(Server {
            listener: TcpListener::from_std(std_listener),
            addr,
            opts,
            commands,
            events: None,
        })
    }

    /// Reports [`ServerEvent`]s (attacks seen, clients refused or evicted) to `sink`.
    pub fn with_events(mut self, sink: Arc<dyn EventSink>) -> Server {
        self.events = Some(sink);
        self
    }

    /// Whether clients from outside the loopback interface are refused (protected mode on,
    /// no password) while the server listens on an address they can reach (not loopback).
    pub fn protected_mode_refuses_outsiders(&self) -> bool {
        self.opts.protected_mode
            && self.opts.requirepass.is_none()
            && !security::is_local(self.addr.ip())
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `backend` until `stop` is set (or a client sends `SHUTDOWN`); then stops
    /// accepting, sends the replies of requests under way, makes every acknowledged write
    /// durable and closes the backend.
    pub fn run(
        self,
        backend: Box<dyn Backend>,
        stop: &AtomicBool,
    ) -> Result<ServeReport, ServerError> {
        let shared = Arc::new(Shared {
            opts: self.opts.clone(),
            stats: Stats::default(),
            started: Instant::now(),
            addr: self.addr,
            shutdown: AtomicBool::new(false),
            commands: self.commands,
        });
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let (to_engine, engine_rx) = mpsc::channel::<ToEngine>();
        let (done_tx, from_engine) = mpsc::channel::<Vec<Done>>();
        let engine = Arc::new(Mutex::new(Engine::new(backend, shared.clone())?));
        let w = waker.clone();
        let e = engine.clone();
        let handle = std::thread::Builder::new()
            .name("resp-engine".into())
            .spawn(move || {
                engine::run(e, engine_rx, done_tx, move || {
                    // A failed wake only delays replies to the next tick.
                    let _ = w.wake();
                })
            })
            .map_err(ServerError::Io)?;
        let mut lp = Loop {
            poll,
            listener: self.listener,
            conns: Vec::new(),
            free: Vec::new(),
            live: 0,
            next_gen: 0,
            next_id: 0,
            shared: shared.clone(),
            limits: Limits {
                max_bulk: self.opts.max_bulk,
                max_args: self.opts.max_args,
                max_inline: 64 << 10,
            },
            engine,
            to_engine,
            from_engine,
            round: Vec::new(),
            scratch: vec![0; conn::SCRATCH],
            accept_pending: false,
            stopping: false,
            client_memory: 0,
            trim_pending: false,
            events: self.events,
        };
        let served = lp.serve(stop);
        // Stop the engine whatever happened: it commits, syncs and closes the backend (once
        // this loop's handle on it is gone).
        let to_engine = lp.to_engine.clone();
        drop(lp);
        let _ = to_engine.send(ToEngine::Stop);
        let closed = handle
            .join()
            .map_err(|_| ServerError::EngineThread("the engine thread panicked".into()))?;
        served?;
        closed?;
        let st = &shared.stats;
        Ok(ServeReport {
            connections: Stats::get(&st.connections_received),
            commands: Stats::get(&st.commands_processed),
            rejected: Stats::get(&st.rejected_connections),
        })
    }
}

struct Loop {
    poll: Poll,
    listener: TcpListener,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    live: usize,
    next_gen: u64,
    next_id: u64,
    shared: Arc<Shared>,
    limits: Limits,
    /// The engine, shared with the engine thread (locked by whichever executes a round).
    engine: Arc<Mutex<Engine>>,
    to_engine: mpsc::Sender<ToEngine>,
    from_engine: mpsc::Receiver<Vec<Done>>,
    /// Jobs gathered in this poll iteration.
    round: Vec<Job>,
    /// The one buffer sockets are read into.
    scratch: Vec<u8>,
    /// An accept failed for lack of descriptors: retry at the next tick.
    accept_pending: bool,
    /// Bytes the buffers of all connections hold, as last counted ([`memory`]).
    client_memory: usize,
    /// Large buffers were freed since the last sweep: give free memory back to the system.
    trim_pending: bool,
    /// Where events go.
    events: Option<Arc<dyn EventSink>>,
    stopping: bool,
}

impl Loop {
    fn serve(&mut self, stop: &AtomicBool) -> Result<(), ServerError> {
        self.poll
            .registry()
            .register(&mut self.listener, LISTENER, Interest::READABLE)?;
        let mut events = Events::with_capacity(1024);
        let mut last_sweep = Instant::now();
        let mut drain_deadline = None;
        loop {
            if !self.stopping
                && (stop.load(Ordering::Relaxed) || self.shared.shutdown.load(Ordering::Acquire))
            {
                self.stopping = true;
                self.poll.registry().deregister(&mut self.listener)?;
                drain_deadline = Some(Instant::now() + DRAIN);
            }
            if let Some(d) = drain_deadline {
                let busy = self
                    .conns
                    .iter()
                    .flatten()
                    .any(|c| c.in_flight || c.pending_output() > 0);
                if !busy || Instant::now() >= d {
                    return Ok(());
                }
            }
            // Jobs gathered while applying replies wait for no event.
            let wait = if self.round.is_empty() {
                TICK
            } else {
                Duration::ZERO
            };
            match self.poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept_all(),
                    WAKER => {}
                    Token(t) => {
                        let Some(Some(c)) = self.conns.get_mut(t) else {
                            continue;
                        };
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                            c.may_read = true;
                        }
                        if ev.is_read_closed() || ev.is_error() {
                            c.peer_done = true;
                        }
                        if ev.is_writable() || ev.is_write_closed() {
                            self.flush(t);
                        }
                        self.pump(t);
                    }
                }
            }
            self.take_replies();
            if self.accept_pending && !self.stopping {
                self.accept_all();
            }
            self.send_round()?;
            if last_sweep.elapsed() >= TICK {
                last_sweep = Instant::now();
                self.sweep();
                self.trim_if_freed();
            }
        }
    }

    /// Accepts every waiting connection (refusing those over the limit).
    fn accept_all(&mut self) {
        self.accept_pending = false;
        if self.stopping {
            return;
        }
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // Out of descriptors (or a connection reset before accept): the
                    // connection stays queued; try again at the next tick.
                    self.accept_pending = true;
                    return;
                }
            }
        }
    }

    /// Reports an event to the sink, if any.
    fn report(&self, e: ServerEvent) {
        if let Some(sink) = &self.events {
            sink.event(&e);
        }
    }

    fn admit(&mut self, mut stream: TcpStream, peer: SocketAddr) {
        let st = &self.shared.stats;
        let opts = &self.shared.opts;
        if opts.protected_mode && opts.requirepass.is_none() && !security::is_local(peer.ip()) {
            Stats::add(&st.rejected_connections, 1);
            Stats::add(&st.protected_mode_rejections, 1);
            // Best effort, as Redis: the socket is new, its buffer empty.
            let _ = stream.write(security::DENIED.as_bytes());
            self.report(ServerEvent::ProtectedModeDenied { peer });
            return;
        }
        if self.live >= self.shared.opts.max_clients {
            Stats::add(&st.rejected_connections, 1);
            // Best effort, as Redis: the socket is new, its buffer empty.
            let _ = stream.write(b"-ERR max number of clients reached\r\n");
            return;
        }
        let _ = stream.set_nodelay(true);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        if self
            .poll
            .registry()
            .register(
                &mut stream,
                Token(slot),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            self.free.push(slot);
            return;
        }
        self.next_gen += 1;
        self.next_id += 1;
        let state = ConnState {
            id: self.next_id,
            proto: Proto::Resp2,
            authed: self.shared.opts.requirepass.is_none(),
            name: None,
            close: false,
        };
        self.conns[slot] = Some(Conn::new(stream, peer, self.next_gen, state));
        self.live += 1;
        Stats::add(&st.connections_received, 1);
        Stats::add(&st.connected_clients, 1);
    }

    fn close(&mut self, t: usize) {
        if let Some(mut c) = self.conns.get_mut(t).and_then(Option::take) {
            self.forget_memory(&c);
            let _ = self.poll.registry().deregister(&mut c.stream);
            self.free.push(t);
            self.live -= 1;
            self.shared
                .stats
                .connected_clients
                .fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Sends pending output; closes the connection when it fails, or when it was closing and
    /// everything is sent.
    fn flush(&mut self, t: usize) {
        let Some(Some(c)) = self.conns.get_mut(t) else {
            return;
        };
        match c.write_output() {
            Ok(n) => {
                Stats::add(&self.shared.stats.net_output_bytes, n as u64);
                if c.closing && c.pending_output() == 0 && !c.in_flight {
                    self.close(t);
                } else {
                    self.account(t);
                }
            }
            Err(_) => self.close(t),
        }
    }

    /// Reads and parses what a connection sent (see [`Loop::read_requests`]), then counts
    /// its buffers and closes the biggest clients if all together hold too much.
    fn pump(&mut self, t: usize) {
        self.read_requests(t);
        self.account(t);
        self.enforce_client_memory();
    }

    /// Reads and parses what a connection sent, queueing a job when it has requests and none
    /// is under way. A client that has not authenticated is held to small requests and has
    /// them executed one at a time (its `AUTH` takes effect before the next is parsed with
    /// the limits it then has); a request named `POST` or `Host:` closes the connection.
    fn read_requests(&mut self, t: usize) {
        let opts = &self.shared.opts;
        let Some(Some(c)) = self.conns.get_mut(t) else {
            return;
        };
        if c.in_flight || c.closing || self.stopping {
            return;
        }
        if c.pending_output() > opts.output_pause {
            return;
        }
        // Read and parse until there are requests, the socket is drained, or a request
        // outgrows the limit (edge-triggered: bytes left in the socket raise no new event).
        let authed = c.state.authed;
        let max = if authed { opts.max_pipeline } else { 1 };
        let (cmds, perr, outcome) = loop {
            let (n, outcome) = c.read_input(&mut self.scratch, opts.max_request);
            Stats::add(&self.shared.stats.net_input_bytes, n as u64);
            let (cmds, perr) = c.parse(&self.limits, max, authed);
            let more = cmds.is_empty()
                && perr.is_none()
                && outcome == ReadOutcome::Open
                && c.may_read
                && c.unparsed() <= opts.max_request;
            if !more {
                break (cmds, perr, outcome);
            }
        };
        let mut protocol_error = match perr {
            None => None,
            Some(ParseEnd::Protocol(e)) => Some(format!("ERR {e}")),
            Some(ParseEnd::CrossProtocol) => {
                // An HTTP request: as Redis, close at once, executing nothing it sent (not
                // even requests parsed before the line) and replying nothing.
                let peer = c.peer;
                Stats::add(&self.shared.stats.cross_protocol_disconnections, 1);
                self.close(t);
                self.report(ServerEvent::CrossProtocol { peer });
                return;
            }
        };
        if protocol_error.is_none() && cmds.is_empty() && c.unparsed() > opts.max_request {
            protocol_error = Some(
                "ERR Protocol error: request larger than client-query-buffer-limit".to_string(),
            );
        }
        if let Some(msg) = protocol_error {
            Stats::add(&self.shared.stats.protocol_errors, 1);
            if cmds.is_empty() {
                c.closing = true;
                c.push_error(&msg);
                self.flush(t);
                return;
            }
            // Requests before the bad bytes are answered first; then the error, then close.
            c.error_after = Some(msg);
        }
        if !cmds.is_empty() {
            c.in_flight = true;
            self.round.push(Job {
                token: t,
                gen: c.gen,
                cmds,
                state: c.state.clone(),
                reply: c.take_reply_buffer(),
            });
            return;
        }
        if outcome == ReadOutcome::Closed {
            // The client is gone (or half-closed with nothing left to answer).
            c.closing = true;
            if c.pending_output() == 0 {
                self.close(t);
            } else {
                self.flush(t);
            }
        }
    }

    /// Executes this iteration's jobs here if they are few and the engine thread is idle,
    /// else hands them to the engine thread.
    fn send_round(&mut self) -> Result<(), ServerError> {
        if self.round.is_empty() {
            return Ok(());
        }
        let mut jobs = std::mem::take(&mut self.round);
        let opts = &self.shared.opts;
        let requests: usize = jobs.iter().map(|j| j.cmds.len()).sum();
        // The engine's lock decides: held by the engine thread (a round or a sync under way),
        // the round goes there. Jobs are of other connections than those of rounds still
        // queued there, whose order does not matter.
        if requests <= opts.inline_round_max && opts.appendfsync != AppendFsync::Always {
            match Engine::try_inline(&self.engine, jobs) {
                Ok(done) => {
                    Stats::add(&self.shared.stats.inline_rounds, 1);
                    self.apply(done);
                    return Ok(());
                }
                Err(back) => jobs = back,
            }
        }
        self.to_engine
            .send(ToEngine::Round(jobs))
            .map_err(|_| ServerError::EngineThread("the engine thread stopped".into()))
    }

    /// Queues the engine thread's replies and writes them.
    fn take_replies(&mut self) {
        while let Ok(batch) = self.from_engine.try_recv() {
            self.apply(batch);
        }
    }

    /// Queues the replies of a round and writes them; reads the connections' next requests.
    fn apply(&mut self, batch: Vec<Done>) {
        for d in batch {
            let max_output = self.shared.opts.max_output;
            let Some(Some(c)) = self.conns.get_mut(d.token) else {
                continue;
            };
            if c.gen != d.gen {
                continue;
            }
            c.in_flight = false;
            c.state = d.state;
            if d.overflow || c.pending_output() + d.reply.len() > max_output {
                Stats::add(&self.shared.stats.output_limit_disconnections, 1);
                self.close(d.token);
                continue;
            }
            c.push_output_owned(d.reply, d.cmds);
            if let Some(e) = c.error_after.take() {
                // A protocol error followed these requests: its reply goes after theirs.
                c.push_error(&e);
                c.closing = true;
            }
            if c.state.close {
                c.closing = true;
            }
            self.flush(d.token);
            // More requests may be waiting in the buffer or the socket.
            self.pump(d.token);
        }
    }

    /// Closes connections idle past `idle_timeout` and those whose output stalled.
    fn sweep(&mut self) {
        let now = Instant::now();
        let idle = self.shared.opts.idle_timeout;
        let stall = self.shared.opts.output_stall_timeout;
        let mut doomed = Vec::new();
        for (t, c) in self.conns.iter().enumerate() {
            let Some(c) = c else { continue };
            let stalled = c.pending_output() > 0 && now.duration_since(c.last_write) >= stall;
            let idle_out = idle.is_some_and(|d| {
                !c.in_flight && c.pending_output() == 0 && now.duration_since(c.last_active) >= d
            });
            if stalled || idle_out {
                doomed.push(t);
            }
        }
        for t in doomed {
            Stats::add(&self.shared.stats.timeout_disconnections, 1);
            self.close(t);
        }
    }
}
