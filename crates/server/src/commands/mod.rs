//! The command table: each command's name, arity, flags and handler, the dispatch that checks
//! arity and authentication before calling the handler, and the helpers handlers share. The
//! names a server answers to (after `rename-command`) are its [`CommandTable`]; SCAN's
//! positions are kept by [`Cursors`]. One file per family: connection ([`conn`]), server ([`server`]), strings ([`strings`]), the
//! key space ([`keyspace`]), hashes ([`hashes`]) and sorted sets ([`sorted_sets`]).

pub mod conn;
pub mod cursors;
pub mod hashes;
pub mod keyspace;
pub mod server;
pub mod sorted_sets;
pub mod strings;
pub mod table;

pub use cursors::Cursors;
pub use table::{CommandTable, RenameError};

use crate::backend::OP_OVERHEAD;
use crate::error::BackendError;
use crate::keys::Record;
use crate::resp::{Proto, Reply};
use crate::stats::{Shared, Stats};
use crate::store::Store;

/// A connection's session state, carried with its requests to the engine thread and back.
#[derive(Debug, Clone, Default)]
pub struct ConnState {
    /// Connection id (`CLIENT ID`).
    pub id: u64,
    /// Protocol (`HELLO`).
    pub proto: Proto,
    /// Whether `AUTH` succeeded (or no password is required).
    pub authed: bool,
    /// `CLIENT SETNAME`.
    pub name: Option<Vec<u8>>,
    /// Close the connection once its replies are sent (`QUIT`).
    pub close: bool,
}

/// Why a command failed: the error reply, or an engine failure.
#[derive(Debug)]
pub enum CmdError {
    /// A complete error reply (`ERR ...`, `WRONGTYPE ...`).
    Reply(String),
    /// The engine failed.
    Backend(BackendError),
}

impl From<BackendError> for CmdError {
    fn from(e: BackendError) -> Self {
        CmdError::Backend(e)
    }
}

/// Result of a handler.
pub type CmdResult = Result<(), CmdError>;

/// A command handler: the request's arguments, the command's name first.
pub type Handler = fn(&mut Ctx<'_>, &[&[u8]]) -> CmdResult;

/// One entry of the command table.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis arity: `n` exactly `n` arguments with the name, `-n` at least `n`.
    pub arity: i32,
    /// Redis command flags (`COMMAND` reports them).
    pub flags: &'static [&'static str],
    /// First key argument (0: none).
    pub first_key: i32,
    /// Last key argument (-1: the last argument).
    pub last_key: i32,
    /// Step between key arguments.
    pub step: i32,
    /// The handler.
    pub handler: Handler,
}

const W: &[&str] = &["write"];
const WF: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
const F: &[&str] = &["fast"];
const A: &[&str] = &["admin"];
const N: &[&str] = &["noauth", "fast"];

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $fk:expr, $lk:expr, $st:expr, $h:path) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $fk,
            last_key: $lk,
            step: $st,
            handler: $h,
        }
    };
}

/// Every command the server knows.
pub static COMMANDS: &[CommandSpec] = &[
    cmd!("ping", -1, F, 0, 0, 0, conn::ping),
    cmd!("echo", 2, F, 0, 0, 0, conn::echo),
    cmd!("hello", -1, N, 0, 0, 0, conn::hello),
    cmd!("auth", -2, N, 0, 0, 0, conn::auth),
    cmd!("quit", -1, N, 0, 0, 0, conn::quit),
    cmd!("select", 2, F, 0, 0, 0, conn::select),
    cmd!("client", -2, F, 0, 0, 0, conn::client),
    cmd!("command", -1, F, 0, 0, 0, conn::command),
    cmd!("info", -1, F, 0, 0, 0, server::info),
    cmd!("dbsize", 1, R, 0, 0, 0, server::dbsize),
    cmd!("config", -2, A, 0, 0, 0, server::config),
    cmd!("flushdb", -1, W, 0, 0, 0, server::flushdb),
    cmd!("flushall", -1, W, 0, 0, 0, server::flushdb),
    cmd!("save", 1, A, 0, 0, 0, server::save),
    cmd!("bgsave", -1, A, 0, 0, 0, server::bgsave),
    cmd!("lastsave", 1, F, 0, 0, 0, server::lastsave),
    cmd!("time", 1, F, 0, 0, 0, server::time),
    cmd!("shutdown", -1, A, 0, 0, 0, server::shutdown),
    cmd!("get", 2, RF, 1, 1, 1, strings::get),
    cmd!("set", -3, W, 1, 1, 1, strings::set),
    cmd!("setnx", 3, WF, 1, 1, 1, strings::setnx),
    cmd!("setex", 4, W, 1, 1, 1, strings::setex),
    cmd!("psetex", 4, W, 1, 1, 1, strings::psetex),
    cmd!("getset", 3, WF, 1, 1, 1, strings::getset),
    cmd!("getdel", 2, WF, 1, 1, 1, strings::getdel),
    cmd!("mget", -2, RF, 1, -1, 1, strings::mget),
    cmd!("mset", -3, W, 1, -1, 2, strings::mset),
    cmd!("incr", 2, WF, 1, 1, 1, strings::incr),
    cmd!("decr", 2, WF, 1, 1, 1, strings::decr),
    cmd!("incrby", 3, WF, 1, 1, 1, strings::incrby),
    cmd!("decrby", 3, WF, 1, 1, 1, strings::decrby),
    cmd!("append", 3, W, 1, 1, 1, strings::append),
    cmd!("strlen", 2, RF, 1, 1, 1, strings::strlen),
    cmd!("del", -2, W, 1, -1, 1, keyspace::del),
    cmd!("unlink", -2, WF, 1, -1, 1, keyspace::del),
    cmd!("exists", -2, RF, 1, -1, 1, keyspace::exists),
    cmd!("type", 2, RF, 1, 1, 1, keyspace::type_),
    cmd!("keys", 2, R, 0, 0, 0, keyspace::keys),
    cmd!("scan", -2, R, 0, 0, 0, keyspace::scan),
    cmd!("expire", -3, WF, 1, 1, 1, keyspace::expire),
    cmd!("pexpire", -3, WF, 1, 1, 1, keyspace::pexpire),
    cmd!("ttl", 2, RF, 1, 1, 1, keyspace::ttl),
    cmd!("pttl", 2, RF, 1, 1, 1, keyspace::pttl),
    cmd!("persist", 2, WF, 1, 1, 1, keyspace::persist),
    cmd!("hset", -4, WF, 1, 1, 1, hashes::hset),
    cmd!("hmset", -4, WF, 1, 1, 1, hashes::hmset),
    cmd!("hsetnx", 4, WF, 1, 1, 1, hashes::hsetnx),
    cmd!("hget", 3, RF, 1, 1, 1, hashes::hget),
    cmd!("hmget", -3, RF, 1, 1, 1, hashes::hmget),
    cmd!("hgetall", 2, R, 1, 1, 1, hashes::hgetall),
    cmd!("hkeys", 2, R, 1, 1, 1, hashes::hkeys),
    cmd!("hvals", 2, R, 1, 1, 1, hashes::hvals),
    cmd!("hdel", -3, WF, 1, 1, 1, hashes::hdel),
    cmd!("hlen", 2, RF, 1, 1, 1, hashes::hlen),
    cmd!("hexists", 3, RF, 1, 1, 1, hashes::hexists),
    cmd!("hincrby", 4, WF, 1, 1, 1, hashes::hincrby),
    cmd!("zadd", -4, WF, 1, 1, 1, sorted_sets::zadd),
    cmd!("zincrby", 4, WF, 1, 1, 1, sorted_sets::zincrby),
    cmd!("zrem", -3, WF, 1, 1, 1, sorted_sets::zrem),
    cmd!("zscore", 3, RF, 1, 1, 1, sorted_sets::zscore),
    cmd!("zmscore", -3, RF, 1, 1, 1, sorted_sets::zmscore),
    cmd!("zcard", 2, RF, 1, 1, 1, sorted_sets::zcard),
    cmd!("zcount", 4, RF, 1, 1, 1, sorted_sets::zcount),
    cmd!("zrank", 3, RF, 1, 1, 1, sorted_sets::zrank),
    cmd!("zrange", -4, R, 1, 1, 1, sorted_sets::zrange),
    cmd!("zrangebyscore", -4, R, 1, 1, 1, sorted_sets::zrangebyscore),
];

/// What a handler works with.
pub struct Ctx<'a> {
    /// The data.
    pub store: &'a mut Store,
    /// The connection's reply buffer.
    pub out: &'a mut Vec<u8>,
    /// The connection's session.
    pub conn: &'a mut ConnState,
    /// Options and counters.
    pub shared: &'a Shared,
    /// SCAN cursors.
    pub cursors: &'a mut Cursors,
    /// When the last `SAVE` finished (Unix seconds).
    pub last_save: &'a mut u64,
    /// The time the round started (Unix milliseconds): expiry is checked against it.
    pub now: u64,
}

impl Ctx<'_> {
    /// The reply writer of this connection.
    pub fn reply(&mut self) -> Reply<'_> {
        Reply {
            out: self.out,
            proto: self.conn.proto,
        }
    }

    /// The record of a key, counting a hit or a miss.
    pub fn load(&mut self, k: &[u8]) -> Result<Option<Record>, CmdError> {
        let r = self.store.load(k, self.now)?;
        let s = &self.shared.stats;
        Stats::add(
            if r.is_some() {
                &s.keyspace_hits
            } else {
                &s.keyspace_misses
            },
            1,
        );
        Ok(r)
    }

    /// Refuses an engine key or a key-value pair the engine cannot store.
    pub fn check_size(&self, engine_key: usize, value: usize) -> CmdResult {
        let b = self.store.backend();
        if engine_key > b.max_key() {
            return Err(CmdError::Reply(format!(
                "ERR key too large ({engine_key} bytes encoded, the engine's limit is {})",
                b.max_key()
            )));
        }
        if engine_key + value + OP_OVERHEAD > b.max_batch() {
            return Err(CmdError::Reply(format!(
                "ERR value too large ({value} bytes, the engine's limit is {})",
                b.max_batch().saturating_sub(engine_key + OP_OVERHEAD)
            )));
        }
        Ok(())
    }

    /// Whether the reply buffer is past the output limit (long replies stop there).
    pub fn over_output_limit(&self) -> bool {
        self.out.len() > self.shared.opts.max_output
    }
}

/// The error replies Redis uses.
pub mod errors {
    /// Wrong type.
    pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    /// Not an integer.
    pub const NOT_INT: &str = "ERR value is not an integer or out of range";
    /// Syntax.
    pub const SYNTAX: &str = "ERR syntax error";
    /// Authentication needed.
    pub const NOAUTH: &str = "NOAUTH Authentication required.";
}

/// Shorthand for an error reply.
pub fn err<T>(msg: impl Into<String>) -> Result<T, CmdError> {
    Err(CmdError::Reply(msg.into()))
}

/// Parses an integer argument.
pub fn int_arg(a: &[u8]) -> Result<i64, CmdError> {
    std::str::from_utf8(a)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| CmdError::Reply(errors::NOT_INT.into()))
}

/// Whether argument `a` is the keyword `kw` (lower case), in any case.
pub fn is(a: &[u8], kw: &str) -> bool {
    a.eq_ignore_ascii_case(kw.as_bytes())
}

/// Executes one request, appending exactly one reply to the connection's buffer.
pub fn execute(ctx: &mut Ctx<'_>, args: &[&[u8]]) {
    let Some(name) = args.first() else {
        return;
    };
    Stats::add(&ctx.shared.stats.commands_processed, 1);
    let Some(spec) = ctx.shared.commands.lookup(name) else {
        let mut msg = format!(
            "ERR unknown command '{}', with args beginning with: ",
            printable(name)
        );
        for a in args.iter().skip(1).take(8) {
            msg.push_str(&format!("'{}' ", printable(a)));
        }
        ctx.reply().error(&msg);
        return;
    };
    let n = args.len() as i32;
    if (spec.arity > 0 && n != spec.arity) || (spec.arity < 0 && n < -spec.arity) {
        ctx.reply().error(&format!(
            "ERR wrong number of arguments for '{}' command",
            spec.name
        ));
        return;
    }
    if !ctx.conn.authed && !spec.flags.contains(&"noauth") {
        ctx.reply().error(errors::NOAUTH);
        return;
    }
    let mark = ctx.out.len();
    if let Err(e) = (spec.handler)(ctx, args) {
        ctx.out.truncate(mark);
        let msg = match e {
            CmdError::Reply(m) => m,
            CmdError::Backend(e) => {
                Stats::add(&ctx.shared.stats.engine_errors, 1);
                format!("ERR engine: {e}")
            }
        };
        ctx.reply().error(&msg);
    }
}

/// An argument for an error message: at most 128 bytes, non-printable bytes escaped.
pub fn printable(a: &[u8]) -> String {
    let mut s = String::new();
    for &b in a.iter().take(128) {
        if b.is_ascii_graphic() || b == b' ' {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}
