//! A small synchronous NBD client: fixed newstyle negotiation with NBD_OPT_GO, then READ,
//! WRITE (optionally FUA), FLUSH, TRIM and DISC with simple replies, one request at a time.
//! Tests use it to account exactly which writes a server acknowledged and flushed; the prober
//! uses it to time a drive served over NBD.

use crate::proto::{cmd, get_u16, get_u32, get_u64, opt, rep, IHAVEOPT, NBDMAGIC, REPLY_MAGIC};
use crate::proto::{CMD_FLAG_FUA, FLAG_C_FIXED_NEWSTYLE, REQUEST_MAGIC, SIMPLE_REPLY_MAGIC};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Instant;

/// What can go wrong talking to an NBD server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The address is not an `nbd://HOST[:PORT]` or `nbd+unix:///?socket=PATH` URI.
    #[error("bad NBD address {0:?} (want nbd://HOST[:PORT] or nbd+unix:///?socket=PATH)")]
    BadUri(String),
    /// The connection failed or broke.
    #[error("NBD connection: {0}")]
    Io(#[from] io::Error),
    /// The server said something the protocol does not allow.
    #[error("NBD protocol: {0}")]
    Protocol(String),
    /// The server refused an option during negotiation.
    #[error("NBD server refused option {option} (reply {reply:#x})")]
    Refused {
        /// Option number.
        option: u32,
        /// Reply type.
        reply: u32,
    },
    /// A command completed with an error number.
    #[error("NBD command failed with errno {0}")]
    Command(u32),
}

/// Result alias of the client.
pub type Result<T> = std::result::Result<T, ClientError>;

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A Unix socket.
    Unix(PathBuf),
    /// A TCP `host:port`.
    Tcp(String),
}

impl Address {
    /// Parses `nbd+unix:///?socket=PATH` or `nbd://HOST[:PORT][/]` (port 10809 by default).
    pub fn parse(uri: &str) -> Result<Address> {
        if let Some(rest) = uri.strip_prefix("nbd+unix://") {
            let query = rest.split_once('?').map(|(_, q)| q).unwrap_or("");
            let socket = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("socket="))
                .filter(|s| !s.is_empty())
                .ok_or_else(|| ClientError::BadUri(uri.to_string()))?;
            return Ok(Address::Unix(PathBuf::from(socket)));
        }
        if let Some(rest) = uri.strip_prefix("nbd://") {
            let host = rest.split('/').next().unwrap_or("");
            if host.is_empty() {
                return Err(ClientError::BadUri(uri.to_string()));
            }
            let with_port = if host
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            {
                host.to_string()
            } else {
                format!("{host}:10809")
            };
            return Ok(Address::Tcp(with_port));
        }
        Err(ClientError::BadUri(uri.to_string()))
    }
}

/// Either kind of stream.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

/// One command of a pipelined batch ([`NbdClient::pipeline`]).
#[derive(Debug, Clone, Copy)]
pub enum Command<'a> {
    /// Read `len` bytes at `offset` (the data is read and dropped).
    Read {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
    },
    /// Write `data` at `offset`; with `fua` durable when its reply arrives.
    Write {
        /// Byte offset.
        offset: u64,
        /// The bytes.
        data: &'a [u8],
        /// Force unit access.
        fua: bool,
    },
    /// Flush.
    Flush,
}

/// A connected client in the transmission phase.
pub struct NbdClient {
    r: BufReader<Stream>,
    w: BufWriter<Stream>,
    size: u64,
    flags: u16,
    handle: u64,
}

impl NbdClient {
    /// Connects to `uri` (see [`Address::parse`]) and negotiates the default export.
    pub fn connect(uri: &str) -> Result<NbdClient> {
        let stream = match Address::parse(uri)? {
            Address::Unix(p) => Stream::Unix(UnixStream::connect(p)?),
            Address::Tcp(a) => {
                let s = TcpStream::connect(a)?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
        };
        let mut c = NbdClient {
            r: BufReader::new(stream.try_clone()?),
            w: BufWriter::new(stream),
            size: 0,
            flags: 0,
            handle: 0,
        };
        c.negotiate()?;
        Ok(c)
    }

    /// Export size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Transmission flags the server announced (`proto::tflag`).
    pub fn flags(&self) -> u16 {
        self.flags
    }

    fn negotiate(&mut self) -> Result<()> {
        if get_u64(&mut self.r)? != NBDMAGIC || get_u64(&mut self.r)? != IHAVEOPT {
            return Err(ClientError::Protocol("not a newstyle NBD server".into()));
        }
        let _server_flags = get_u16(&mut self.r)?;
        self.w.write_all(&FLAG_C_FIXED_NEWSTYLE.to_be_bytes())?;
        // NBD_OPT_GO for the default export ("") with no information requests.
        let mut data = Vec::new();
        data.extend_from_slice(&0u32.to_be_bytes());
        data.extend_from_slice(&0u16.to_be_bytes());
        self.w.write_all(&IHAVEOPT.to_be_bytes())?;
        self.w.write_all(&opt::GO.to_be_bytes())?;
        self.w.write_all(&(data.len() as u32).to_be_bytes())?;
        self.w.write_all(&data)?;
        self.w.flush()?;
        loop {
            if get_u64(&mut self.r)? != REPLY_MAGIC {
                return Err(ClientError::Protocol("bad option reply magic".into()));
            }
            let option = get_u32(&mut self.r)?;
            let kind = get_u32(&mut self.r)?;
            let len = get_u32(&mut self.r)?;
            if len > 1 << 20 {
                return Err(ClientError::Protocol(format!(
                    "option reply of {len} bytes"
                )));
            }
            let mut body = vec![0u8; len as usize];
            self.r.read_exact(&mut body)?;
            match kind {
                rep::ACK => return Ok(()),
                rep::INFO if body.len() >= 12 && body[..2] == [0, 0] => {
                    let mut size = [0u8; 8];
                    size.copy_from_slice(&body[2..10]);
                    self.size = u64::from_be_bytes(size);
                    self.flags = u16::from_be_bytes([body[10], body[11]]);
                }
                rep::INFO => {}
                reply if reply & (1 << 31) != 0 => {
                    return Err(ClientError::Refused { option, reply });
                }
                other => {
                    return Err(ClientError::Protocol(format!(
                        "unexpected option reply {other}"
                    )))
                }
            }
        }
    }

    /// Writes one request (header under the next handle, then `data`) without flushing it.
    fn send(&mut self, kind: u16, flags: u16, offset: u64, len: u32, data: &[u8]) -> Result<()> {
        self.handle += 1;
        let mut h = Vec::with_capacity(28);
        h.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
        h.extend_from_slice(&flags.to_be_bytes());
        h.extend_from_slice(&kind.to_be_bytes());
        h.extend_from_slice(&self.handle.to_be_bytes());
        h.extend_from_slice(&offset.to_be_bytes());
        h.extend_from_slice(&len.to_be_bytes());
        self.w.write_all(&h)?;
        self.w.write_all(data)?;
        Ok(())
    }

    /// Sends one request and reads its simple reply; returns the handle used.
    fn request(&mut self, kind: u16, flags: u16, offset: u64, len: u32, data: &[u8]) -> Result<()> {
        self.send(kind, flags, offset, len, data)?;
        self.w.flush()?;
        if get_u32(&mut self.r)? != SIMPLE_REPLY_MAGIC {
            return Err(ClientError::Protocol("bad reply magic".into()));
        }
        let error = get_u32(&mut self.r)?;
        if get_u64(&mut self.r)? != self.handle {
            return Err(ClientError::Protocol("reply for another request".into()));
        }
        if error != 0 {
            return Err(ClientError::Command(error));
        }
        Ok(())
    }

    /// Sends every command of `cmds` before reading any reply (the server sees them queued,
    /// queue depth = their number), then reads the replies in whatever order they come. For
    /// each command: the instant its reply (and a read's data) had arrived, or its error. A
    /// broken connection fails the commands still unanswered.
    pub fn pipeline(&mut self, cmds: &[Command<'_>]) -> Vec<Result<Instant>> {
        let first = self.handle + 1;
        let mut out: Vec<Option<Result<Instant>>> = cmds.iter().map(|_| None).collect();
        let sent = self.send_all(cmds);
        if let Err(e) = sent {
            return cmds
                .iter()
                .map(|_| Err(ClientError::Protocol(format!("sending the batch: {e}"))))
                .collect();
        }
        let mut left = cmds.len();
        let mut sink = Vec::new();
        while left > 0 {
            match self.reply_of(first, cmds, &mut sink) {
                Ok((i, r)) if out[i].is_none() => {
                    out[i] = Some(r);
                    left -= 1;
                }
                Ok((i, _)) => {
                    let e = format!("two replies for request {}", first + i as u64);
                    return fail_rest(out, &e);
                }
                Err(e) => return fail_rest(out, &e.to_string()),
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(ClientError::Protocol("no reply".into()))))
            .collect()
    }

    fn send_all(&mut self, cmds: &[Command<'_>]) -> Result<()> {
        for c in cmds {
            let (kind, flags, offset, len, data): (u16, u16, u64, u32, &[u8]) = match *c {
                Command::Read { offset, len } => (cmd::READ, 0, offset, len, &[]),
                Command::Write { offset, data, fua } => {
                    let len = u32::try_from(data.len())
                        .map_err(|_| ClientError::Protocol("write longer than 4 GiB".into()))?;
                    let flags = if fua { CMD_FLAG_FUA } else { 0 };
                    (cmd::WRITE, flags, offset, len, data)
                }
                Command::Flush => (cmd::FLUSH, 0, 0, 0, &[]),
            };
            self.send(kind, flags, offset, len, data)?;
        }
        self.w.flush()?;
        Ok(())
    }

    /// Reads one simple reply of a pipelined batch whose first handle is `first`: the index
    /// of its command and its outcome.
    fn reply_of(
        &mut self,
        first: u64,
        cmds: &[Command<'_>],
        sink: &mut Vec<u8>,
    ) -> Result<(usize, Result<Instant>)> {
        if get_u32(&mut self.r)? != SIMPLE_REPLY_MAGIC {
            return Err(ClientError::Protocol("bad reply magic".into()));
        }
        let error = get_u32(&mut self.r)?;
        let handle = get_u64(&mut self.r)?;
        let i = handle
            .checked_sub(first)
            .map(|i| i as usize)
            .filter(|&i| i < cmds.len())
            .ok_or_else(|| ClientError::Protocol(format!("reply for unknown handle {handle}")))?;
        if error != 0 {
            return Ok((i, Err(ClientError::Command(error))));
        }
        if let Command::Read { len, .. } = cmds[i] {
            sink.resize(len as usize, 0);
            self.r.read_exact(sink)?;
        }
        Ok((i, Ok(Instant::now())))
    }

    /// Reads `buf.len()` bytes at `offset`.
    pub fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let len = u32::try_from(buf.len())
            .map_err(|_| ClientError::Protocol("read longer than 4 GiB".into()))?;
        self.request(cmd::READ, 0, offset, len, &[])?;
        self.r.read_exact(buf)?;
        Ok(())
    }

    /// Writes `data` at `offset`; with `fua` it is durable when this returns.
    pub fn write(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<()> {
        let len = u32::try_from(data.len())
            .map_err(|_| ClientError::Protocol("write longer than 4 GiB".into()))?;
        let flags = if fua { CMD_FLAG_FUA } else { 0 };
        self.request(cmd::WRITE, flags, offset, len, data)
    }

    /// Makes every completed write durable.
    pub fn flush(&mut self) -> Result<()> {
        self.request(cmd::FLUSH, 0, 0, 0, &[])
    }

    /// Tells the server `len` bytes at `offset` are no longer needed.
    pub fn trim(&mut self, offset: u64, len: u32) -> Result<()> {
        self.request(cmd::TRIM, 0, offset, len, &[])
    }

    /// Ends the session politely (NBD_CMD_DISC has no reply).
    pub fn disconnect(mut self) -> Result<()> {
        self.handle += 1;
        let mut h = Vec::with_capacity(28);
        h.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
        h.extend_from_slice(&0u16.to_be_bytes());
        h.extend_from_slice(&cmd::DISC.to_be_bytes());
        h.extend_from_slice(&self.handle.to_be_bytes());
        h.extend_from_slice(&0u64.to_be_bytes());
        h.extend_from_slice(&0u32.to_be_bytes());
        self.w.write_all(&h)?;
        self.w.flush()?;
        Ok(())
    }
}

/// Fails every command of a pipelined batch not yet answered.
fn fail_rest(out: Vec<Option<Result<Instant>>>, why: &str) -> Vec<Result<Instant>> {
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(ClientError::Protocol(format!("no reply: {why}")))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_unix_and_tcp_uris_and_rejects_others() {
        assert_eq!(
            Address::parse("nbd+unix:///?socket=/tmp/d.sock").ok(),
            Some(Address::Unix("/tmp/d.sock".into()))
        );
        assert_eq!(
            Address::parse("nbd://127.0.0.1:10810").ok(),
            Some(Address::Tcp("127.0.0.1:10810".into()))
        );
        assert_eq!(
            Address::parse("nbd://localhost/").ok(),
            Some(Address::Tcp("localhost:10809".into()))
        );
        for bad in ["", "nbd+unix:///", "nbd://", "http://x", "/dev/nbd0"] {
            assert!(Address::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
