//! The same server over RocksDB and LevelDB (feature `compare`): one command script gives the
//! same replies on every engine, and data survives a restart of the server.
#![cfg(feature = "compare")]
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use tegula_server::resp::Value;
use tegula_server::{Backend, CapiBackend, CapiEngine, ServerOptions};

/// How to open (and reopen) one engine.
type Opener = Box<dyn Fn() -> Box<dyn Backend>>;

fn script(c: &mut Client) -> Vec<Value> {
    let cmds: [&[&str]; 12] = [
        &["SET", "k", "v"],
        &["GET", "k"],
        &["HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"],
        &["HMGET", "h", "a", "b", "c", "d", "e"],
        &["HGETALL", "h"],
        &["INCR", "n"],
        &["MSET", "x", "1", "y", "2"],
        &["DBSIZE"],
        &["DEL", "x", "h"],
        &["SCAN", "0", "COUNT", "100"],
        &["KEYS", "*"],
        &["SAVE"],
    ];
    cmds.iter().map(|a| c.cmd(a)).collect()
}

#[test]
fn every_engine_gives_the_same_replies() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies = Vec::new();
    let engines: Vec<(&str, Opener)> = vec![
        (
            "smrdb",
            Box::new(|| Box::new(smrdb_backend()) as Box<dyn Backend>),
        ),
        (
            "rocksdb",
            Box::new({
                let p = dir.path().join("rocks");
                move || {
                    Box::new(CapiBackend::open(CapiEngine::Rocksdb, &p).unwrap())
                        as Box<dyn Backend>
                }
            }),
        ),
        (
            "leveldb",
            Box::new({
                let p = dir.path().join("level");
                move || {
                    Box::new(CapiBackend::open(CapiEngine::Leveldb, &p).unwrap())
                        as Box<dyn Backend>
                }
            }),
        ),
    ];
    for (name, open) in &engines {
        let s = TestServer::start_with(ServerOptions::default(), open());
        let mut c = s.client();
        let r = script(&mut c);
        let Value::Bulk(info) = c.cmd(&["INFO", "tegula"]) else {
            panic!("INFO");
        };
        assert!(String::from_utf8_lossy(&info).contains(&format!("engine:{name}")));
        drop(c);
        s.stop();
        replies.push((name, r));
        if *name != "smrdb" {
            // Reopened, the engine still holds the data.
            let s = TestServer::start_with(ServerOptions::default(), open());
            assert_eq!(s.client().cmd(&["GET", "k"]), bulk("v"), "{name}");
        }
    }
    let (_, first) = &replies[0];
    for (name, r) in &replies[1..] {
        assert_eq!(r, first, "{name} differs from smrdb");
    }
}
