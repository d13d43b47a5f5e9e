//! How hashes are stored (inline in their key record while small, as field records once
//! large) and what the engine holds after each command: no field record outlives its hash,
//! the registry of field-record hashes matches them across restarts, a database written by
//! format 1 is upgraded, and a pipeline reads its own writes whatever the encoding.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use std::sync::Arc;
use tegula_server::resp::{encode_command, Value};
use tegula_server::ServerOptions;

fn arr(v: Vec<Value>) -> Value {
    Value::Array(v)
}

/// Every engine record with a key starting with `prefix`.
fn records(dev: &Arc<tegula_device::Disk>, prefix: u8) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = tegula_smrdb::Db::open(dev.clone(), Default::default()).unwrap();
    let out = db
        .scan(&[prefix], Some(&[prefix + 1]))
        .unwrap()
        .map(|kv| kv.unwrap())
        .collect();
    db.close().unwrap();
    out
}

fn format_version(dev: &Arc<tegula_device::Disk>) -> Option<Vec<u8>> {
    let db = tegula_smrdb::Db::open(dev.clone(), Default::default()).unwrap();
    let v = db.get(b"\0format").unwrap();
    db.close().unwrap();
    v
}

/// `HSET key f0 v0 ... f{n-1} v{n-1}` as arguments.
fn hset_args(key: &str, n: usize) -> Vec<String> {
    let mut a = vec!["HSET".to_string(), key.to_string()];
    for i in 0..n {
        a.push(format!("f{i:03}"));
        a.push(format!("v{i}"));
    }
    a
}

fn cmd_owned(c: &mut Client, a: &[String]) -> Value {
    let v: Vec<&str> = a.iter().map(String::as_str).collect();
    c.cmd(&v)
}

#[test]
fn hashes_grow_from_inline_to_field_records_and_strings_replace_either() {
    let dev = memory_drive();
    let s = TestServer::start_with(ServerOptions::default(), Box::new(smrdb_on(&dev)));
    let mut c = s.client();
    // Inline: a few small fields.
    assert_eq!(c.cmd(&["HSET", "small", "b", "2", "a", "1"]), int(2));
    assert_eq!(c.cmd(&["HSET", "small", "a", "1b", "c", "3"]), int(1));
    assert_eq!(c.cmd(&["HSETNX", "small", "a", "no"]), int(0));
    assert_eq!(
        c.cmd(&["HGETALL", "small"]),
        arr(["a", "1b", "b", "2", "c", "3"]
            .iter()
            .map(|s| bulk(s))
            .collect())
    );
    // 129 fields: past INLINE_MAX_FIELDS, so field records; one HSET at a time crosses it.
    assert_eq!(cmd_owned(&mut c, &hset_args("big", 128)), int(128));
    assert_eq!(c.cmd(&["HSET", "big", "zz", "last"]), int(1));
    assert_eq!(c.cmd(&["HLEN", "big"]), int(129));
    assert_eq!(c.cmd(&["HGET", "big", "f127"]), bulk("v127"));
    assert_eq!(
        c.cmd(&["HMGET", "big", "f000", "nof", "zz"]),
        arr(vec![bulk("v0"), Value::Nil, bulk("last")])
    );
    assert_eq!(c.cmd(&["HDEL", "big", "f000", "zz", "nof"]), int(2));
    assert_eq!(c.cmd(&["HLEN", "big"]), int(127));
    // One large value: past INLINE_MAX_BYTES from the first HSET.
    let large = "x".repeat(5000);
    assert_eq!(c.cmd(&["HSET", "wide", "f", &large]), int(1));
    assert_eq!(c.cmd(&["HGET", "wide", "f"]), bulk(&large));
    assert_eq!(c.cmd(&["TYPE", "wide"]), Value::Simple(b"hash".to_vec()));
    assert_eq!(c.cmd(&["TYPE", "small"]), Value::Simple(b"hash".to_vec()));
    // Strings replace either kind; the field records go with a field-record hash.
    assert_eq!(c.cmd(&["SET", "small", "s"]), ok());
    assert_eq!(c.cmd(&["MSET", "big", "s2", "other", "o"]), ok());
    assert_eq!(c.cmd(&["GET", "big"]), bulk("s2"));
    assert!(is_err(&c.cmd(&["HGET", "big", "f001"]), "WRONGTYPE"));
    assert_eq!(c.cmd(&["DEL", "big"]), int(1));
    assert_eq!(c.cmd(&["HSET", "big", "new", "1"]), int(1));
    assert_eq!(
        c.cmd(&["HGETALL", "big"]),
        arr(vec![bulk("new"), bulk("1")])
    );
    // The last HDEL of an inline hash removes it.
    assert_eq!(c.cmd(&["HDEL", "big", "new"]), int(1));
    assert_eq!(c.cmd(&["EXISTS", "big"]), int(0));
    assert_eq!(c.cmd(&["SETEX", "wide", "100", "s3"]), ok());
    assert_eq!(c.cmd(&["GET", "wide"]), bulk("s3"));
    drop(c);
    s.stop();
    assert_eq!(
        records(&dev, b'f'),
        vec![],
        "no field record outlives its hash"
    );
    assert_eq!(records(&dev, b'b'), vec![]);
    assert_eq!(format_version(&dev), Some(3u32.to_le_bytes().to_vec()));
}

#[test]
fn the_registry_of_field_record_hashes_survives_a_restart() {
    let dev = memory_drive();
    let s = TestServer::start_with(ServerOptions::default(), Box::new(smrdb_on(&dev)));
    let mut c = s.client();
    assert_eq!(cmd_owned(&mut c, &hset_args("a", 200)), int(200));
    assert_eq!(cmd_owned(&mut c, &hset_args("b", 200)), int(200));
    assert_eq!(cmd_owned(&mut c, &hset_args("gone", 200)), int(200));
    assert_eq!(c.cmd(&["PEXPIRE", "gone", "1"]), int(1));
    drop(c);
    s.stop();
    assert_eq!(records(&dev, b'b').len(), 3);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let s = TestServer::start_with(ServerOptions::default(), Box::new(smrdb_on(&dev)));
    let mut c = s.client();
    // The restarted server knows "a" is a field-record hash: SET deletes its fields.
    assert_eq!(c.cmd(&["SET", "a", "str"]), ok());
    assert_eq!(c.cmd(&["HLEN", "b"]), int(200));
    // An expired one is deleted, fields and registry record, by the read that finds it.
    assert_eq!(c.cmd(&["EXISTS", "gone"]), int(0));
    drop(c);
    s.stop();
    let b = records(&dev, b'b');
    assert_eq!(b, vec![(b"bb".to_vec(), Vec::new())]);
    let f = records(&dev, b'f');
    assert_eq!(f.len(), 200);
    assert!(f.iter().all(|(k, _)| k.starts_with(b"f\0\0\0\x01b")));
}

#[test]
fn a_format_1_database_is_upgraded_at_start() {
    let dev = memory_drive();
    {
        // What the format-1 server wrote for `HSET old x 1 y 2` and `SET s v`: a hash is a
        // count record plus field records, with no registry and no version record.
        let db =
            tegula_smrdb::Db::create(dev.clone(), Default::default(), Default::default()).unwrap();
        db.put(b"kold", b"h\0\x02\0\0\0\0\0\0\0").unwrap();
        db.put(b"f\0\0\0\x03oldx", b"1").unwrap();
        db.put(b"f\0\0\0\x03oldy", b"2").unwrap();
        db.put(b"kold2", b"h\0\x01\0\0\0\0\0\0\0").unwrap();
        db.put(b"f\0\0\0\x04old2z", b"3").unwrap();
        db.put(b"ks", b"s\0v").unwrap();
        db.close().unwrap();
    }
    let s = TestServer::start_with(ServerOptions::default(), Box::new(smrdb_on(&dev)));
    let mut c = s.client();
    assert_eq!(
        c.cmd(&["HGETALL", "old"]),
        arr(vec![bulk("x"), bulk("1"), bulk("y"), bulk("2")])
    );
    assert_eq!(c.cmd(&["GET", "s"]), bulk("v"));
    assert_eq!(c.cmd(&["SET", "old", "now a string"]), ok());
    assert_eq!(c.cmd(&["HSET", "old2", "w", "4"]), int(1));
    assert_eq!(c.cmd(&["HLEN", "old2"]), int(2));
    drop(c);
    s.stop();
    assert_eq!(format_version(&dev), Some(3u32.to_le_bytes().to_vec()));
    assert_eq!(records(&dev, b'b'), vec![(b"bold2".to_vec(), Vec::new())]);
    assert_eq!(
        records(&dev, b'f').len(),
        2,
        "old2's two fields, none of old's"
    );
}

#[test]
fn a_newer_format_is_refused() {
    let dev = memory_drive();
    {
        let db =
            tegula_smrdb::Db::create(dev.clone(), Default::default(), Default::default()).unwrap();
        db.put(b"\0format", &4u32.to_le_bytes()).unwrap();
        db.close().unwrap();
    }
    let server = tegula_server::Server::bind("127.0.0.1:0", ServerOptions::default()).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let e = server.run(Box::new(smrdb_on(&dev)), &stop).unwrap_err();
    assert!(e.to_string().contains("format 4"), "{e}");
}

/// Options that make every round go to the engine thread, none, or the default's small ones.
fn round_placements() -> Vec<ServerOptions> {
    [0, 64, usize::MAX]
        .into_iter()
        .map(|m| ServerOptions {
            inline_round_max: m,
            ..ServerOptions::default()
        })
        .collect()
}

#[test]
fn a_pipeline_reads_its_own_writes_whatever_the_encoding() {
    for opts in round_placements() {
        pipeline_reads_its_own_writes(opts);
    }
}

fn pipeline_reads_its_own_writes(opts: ServerOptions) {
    let s = TestServer::start(opts);
    let mut c = s.client();
    let big = hset_args("big", 150);
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    let script: Vec<(Vec<&str>, Value)> = vec![
        (vec!["SET", "a", "1"], ok()),
        (vec!["GET", "a"], bulk("1")),
        (vec!["INCR", "a"], int(2)),
        (vec!["GET", "a"], bulk("2")),
        (vec!["HSET", "h", "f", "v"], int(1)),
        (vec!["HGET", "h", "f"], bulk("v")),
        (vec!["SET", "h", "s"], ok()),
        (vec!["GET", "h"], bulk("s")),
        (vec!["HSET", "h", "f", "v"], Value::Error(Vec::new())),
        (big.clone(), int(150)),
        (vec!["HGET", "big", "f149"], bulk("v149")),
        (vec!["SET", "big", "str"], ok()),
        (vec!["HGETALL", "big"], Value::Error(Vec::new())),
        (vec!["DEL", "big"], int(1)),
        (big, int(150)),
        (vec!["HLEN", "big"], int(150)),
        (vec!["MSET", "big", "m", "a", "3"], ok()),
        (vec!["MGET", "big", "a"], arr(vec![bulk("m"), bulk("3")])),
        (vec!["EXISTS", "big", "h", "a", "none"], int(3)),
    ];
    let mut batch = Vec::new();
    for (a, _) in &script {
        batch.extend(encode_command(a));
    }
    // One write: the server reads it in one piece and runs it as one round.
    c.send_raw(&batch);
    for (a, want) in &script {
        let got = c.read().unwrap();
        match want {
            Value::Error(_) => assert!(is_err(&got, "WRONGTYPE"), "{a:?}: {got:?}"),
            w => assert_eq!(&got, w, "{a:?}"),
        }
    }
}

#[test]
fn concurrent_clients_see_their_own_writes_and_each_others_acknowledged_ones() {
    for opts in round_placements() {
        concurrent_clients(opts);
    }
}

fn concurrent_clients(opts: ServerOptions) {
    let max = opts.inline_round_max;
    let s = TestServer::start(opts);
    let addr = s.addr;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..150 {
                    let k = format!("k{t}");
                    let h = format!("h{}", i % 4);
                    let v = format!("{t}-{i}");
                    let mut batch = Vec::new();
                    for a in [
                        &["SET", &k, &v][..],
                        &["GET", &k],
                        &["HSET", &h, &k, &v],
                        &["HGET", &h, &k],
                        &["SET", "shared", &v],
                    ] {
                        batch.extend(encode_command(a));
                    }
                    c.send_raw(&batch);
                    assert_eq!(c.read(), Some(ok()));
                    assert_eq!(c.read(), Some(bulk(&v)));
                    assert!(matches!(c.read(), Some(Value::Integer(0 | 1))));
                    assert_eq!(c.read(), Some(bulk(&v)));
                    assert_eq!(c.read(), Some(ok()));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = s.client();
    for h in 0..4 {
        assert_eq!(c.cmd(&["HLEN", &format!("h{h}")]), int(8));
    }
    for t in 0..8 {
        assert_eq!(c.cmd(&["GET", &format!("k{t}")]), bulk(&format!("{t}-149")));
    }
    assert!(matches!(c.cmd(&["GET", "shared"]), Value::Bulk(v) if v.ends_with(b"-149")));
    let info = c.cmd(&["INFO", "stats"]);
    let Value::Bulk(info) = info else {
        panic!("{info:?}")
    };
    let info = String::from_utf8(info).unwrap();
    let field = |name: &str| -> u64 {
        let line = info.lines().find(|l| l.starts_with(name)).unwrap();
        line[name.len() + 1..].trim().parse().unwrap()
    };
    let (rounds, inline) = (field("engine_rounds"), field("engine_inline_rounds"));
    match max {
        0 => assert_eq!(inline, 0),
        // Every round the engine thread did not hold the engine for ran in the loop.
        usize::MAX => assert!(inline > 0 && inline <= rounds, "{inline} of {rounds}"),
        _ => assert!(inline <= rounds),
    }
}

#[test]
fn flushall_of_more_keys_than_one_engine_batch_holds_succeeds() {
    // 1 MiB bands: SMRDB takes batches up to a quarter band, counting 64 bytes per record
    // besides keys and values; the server spills a round's writes past an eighth of a band.
    // 20,000 deletes of short keys are several batches, none of which may be refused.
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    for chunk in 0..40 {
        let mut a = vec!["MSET".to_string()];
        for i in 0..500 {
            a.push(format!("k{}", chunk * 500 + i));
            a.push("v".to_string());
        }
        assert_eq!(cmd_owned(&mut c, &a), ok());
    }
    assert_eq!(c.cmd(&["DBSIZE"]), int(20_000));
    assert_eq!(c.cmd(&["FLUSHALL"]), ok());
    assert_eq!(c.cmd(&["DBSIZE"]), int(0));
}

#[test]
fn a_format_2_database_is_upgraded_to_3_and_sorted_sets_keep_their_records_in_step() {
    let dev = memory_drive();
    {
        // Format 2 as that server wrote it: a registered field-record hash and the version.
        let db =
            tegula_smrdb::Db::create(dev.clone(), Default::default(), Default::default()).unwrap();
        db.put(b"\0format", &2u32.to_le_bytes()).unwrap();
        db.put(b"kh", b"h\0\x01\0\0\0\0\0\0\0").unwrap();
        db.put(b"bh", b"").unwrap();
        db.put(b"f\0\0\0\x01hx", b"1").unwrap();
        db.close().unwrap();
    }
    let s = TestServer::start_with(ServerOptions::default(), Box::new(smrdb_on(&dev)));
    let mut c = s.client();
    assert_eq!(c.cmd(&["HGET", "h", "x"]), bulk("1"));
    assert_eq!(c.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]), int(3));
    assert_eq!(c.cmd(&["ZADD", "z", "5", "a"]), int(0));
    assert_eq!(c.cmd(&["ZREM", "z", "b"]), int(1));
    assert_eq!(c.cmd(&["ZADD", "gone", "1", "x"]), int(1));
    assert_eq!(c.cmd(&["PEXPIRE", "gone", "1"]), int(1));
    assert_eq!(c.cmd(&["ZADD", "str", "1", "x", "2", "y"]), int(2));
    drop(c);
    s.stop();
    assert_eq!(format_version(&dev), Some(3u32.to_le_bytes().to_vec()));
    // One member record and one index record per member, each with the member's score.
    let score = |s: f64| tegula_server::keys::score_bits(s).to_be_bytes().to_vec();
    let m = records(&dev, b'm');
    assert_eq!(
        m,
        vec![
            // Shorter keys first: the length comes before the key.
            (b"m\0\0\0\x01za".to_vec(), score(5.0)),
            (b"m\0\0\0\x01zc".to_vec(), score(3.0)),
            (b"m\0\0\0\x03strx".to_vec(), score(1.0)),
            (b"m\0\0\0\x03stry".to_vec(), score(2.0)),
            (b"m\0\0\0\x04gonex".to_vec(), score(1.0)),
        ]
    );
    let r: Vec<Vec<u8>> = records(&dev, b'r').into_iter().map(|(k, _)| k).collect();
    let entry = |k: &str, s: f64, m: &str| {
        tegula_server::keys::score_entry(
            k.as_bytes(),
            tegula_server::keys::score_bits(s),
            m.as_bytes(),
        )
    };
    assert_eq!(
        r,
        vec![
            entry("z", 3.0, "c"),
            entry("z", 5.0, "a"),
            entry("str", 1.0, "x"),
            entry("str", 2.0, "y"),
            entry("gone", 1.0, "x"),
        ]
    );
    assert_eq!(records(&dev, b'b').len(), 4, "h, gone, str, z");
    std::thread::sleep(std::time::Duration::from_millis(5));
    // Restarted: the server knows "str" is a sorted set (SET must delete its records), and
    // the expired one goes, records and all, with the read that finds it.
    let s = TestServer::start_with(ServerOptions::default(), Box::new(smrdb_on(&dev)));
    let mut c = s.client();
    assert_eq!(c.cmd(&["SET", "str", "now a string"]), ok());
    assert_eq!(c.cmd(&["EXISTS", "gone"]), int(0));
    assert_eq!(c.cmd(&["ZCARD", "z"]), int(2));
    drop(c);
    s.stop();
    let m: Vec<Vec<u8>> = records(&dev, b'm').into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        m,
        vec![b"m\0\0\0\x01za".to_vec(), b"m\0\0\0\x01zc".to_vec()]
    );
    assert_eq!(records(&dev, b'r').len(), 2);
    let b: Vec<Vec<u8>> = records(&dev, b'b').into_iter().map(|(k, _)| k).collect();
    assert_eq!(b, vec![b"bh".to_vec(), b"bz".to_vec()]);
}
