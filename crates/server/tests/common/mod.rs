//! A server on an in-memory SMRDB drive and a tiny synchronous RESP client for the tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tegula_server::resp::{encode_command, parse_value, Parse, Value};
use tegula_server::{
    Backend, EventSink, ServeReport, Server, ServerError, ServerOptions, SmrdbBackend,
};

/// A running server; stops (and joins) on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<ServeReport, ServerError>>>,
}

/// SMRDB on a fresh in-memory drive with 1 MiB bands.
pub fn smrdb_backend() -> SmrdbBackend {
    let mut cfg = tegula_device::profile("hm-smr").unwrap();
    cfg.zones.zone_size = 1 << 20;
    cfg.capacity = 256 << 20;
    let dev = Arc::new(tegula_device::Disk::in_memory(cfg).unwrap());
    let db = tegula_smrdb::Db::create(dev, Default::default(), Default::default()).unwrap();
    SmrdbBackend::new(db)
}

impl TestServer {
    pub fn start(opts: ServerOptions) -> TestServer {
        Self::start_with(opts, Box::new(smrdb_backend()))
    }

    pub fn start_with(opts: ServerOptions, backend: Box<dyn Backend>) -> TestServer {
        Self::start_on("127.0.0.1:0", opts, backend, None)
    }

    /// A server on `addr` (e.g. `0.0.0.0:0`), reporting its events to `events`.
    pub fn start_on(
        addr: &str,
        opts: ServerOptions,
        backend: Box<dyn Backend>,
        events: Option<Arc<dyn EventSink>>,
    ) -> TestServer {
        let mut server = Server::bind(addr, opts).unwrap();
        if let Some(e) = events {
            server = server.with_events(e);
        }
        let addr = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || server.run(backend, &s));
        TestServer {
            addr,
            stop,
            handle: Some(handle),
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// Stops the server and returns its report.
    pub fn stop(mut self) -> ServeReport {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap().unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A blocking RESP client.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends raw bytes.
    pub fn send_raw(&mut self, b: &[u8]) {
        self.stream.write_all(b).unwrap();
    }

    /// Sends a command without waiting.
    pub fn send(&mut self, args: &[&str]) {
        self.send_raw(&encode_command(args));
    }

    /// Reads one reply; `None` when the server closed the connection.
    pub fn read(&mut self) -> Option<Value> {
        loop {
            if let Parse::Done(v, n) = parse_value(&self.buf, 1 << 30, 1 << 24).unwrap() {
                self.buf.drain(..n);
                return Some(v);
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// Sends a command and reads its reply.
    pub fn cmd(&mut self, args: &[&str]) -> Value {
        self.send(args);
        self.read().expect("the server closed the connection")
    }
}

pub fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

pub fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

pub fn int(n: i64) -> Value {
    Value::Integer(n)
}

/// Whether `v` is an error reply starting with `prefix`.
pub fn is_err(v: &Value, prefix: &str) -> bool {
    matches!(v, Value::Error(e) if e.starts_with(prefix.as_bytes()))
}

/// A fresh in-memory drive with 1 MiB bands, to open SMRDB on more than once.
pub fn memory_drive() -> Arc<tegula_device::Disk> {
    let mut cfg = tegula_device::profile("hm-smr").unwrap();
    cfg.zones.zone_size = 1 << 20;
    cfg.capacity = 256 << 20;
    Arc::new(tegula_device::Disk::in_memory(cfg).unwrap())
}

/// SMRDB on `dev`: created when the drive holds no database, else opened (recovered).
pub fn smrdb_on(dev: &Arc<tegula_device::Disk>) -> SmrdbBackend {
    let db = match tegula_smrdb::Db::open(dev.clone(), Default::default()) {
        Ok(db) => db,
        Err(tegula_smrdb::Error::NotFound(_)) => {
            tegula_smrdb::Db::create(dev.clone(), Default::default(), Default::default()).unwrap()
        }
        Err(e) => panic!("open: {e}"),
    };
    SmrdbBackend::new(db)
}
