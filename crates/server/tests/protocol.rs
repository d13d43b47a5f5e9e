//! Every command through a real socket, error replies, pipelining, requests split at every
//! byte, RESP3 via HELLO, AUTH, the connection limit and expiry.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use tegula_server::resp::Value;
use tegula_server::ServerOptions;

fn arr(v: Vec<Value>) -> Value {
    Value::Array(v)
}

#[test]
fn connection_commands_answer_as_redis_does() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    assert_eq!(c.cmd(&["ping", "hi"]), bulk("hi"));
    assert_eq!(c.cmd(&["ECHO", "x y"]), bulk("x y"));
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    assert!(is_err(
        &c.cmd(&["SELECT", "1"]),
        "ERR DB index is out of range"
    ));
    assert!(is_err(&c.cmd(&["NOSUCH", "a"]), "ERR unknown command"));
    assert!(is_err(
        &c.cmd(&["GET"]),
        "ERR wrong number of arguments for 'get'"
    ));
    assert_eq!(c.cmd(&["CLIENT", "SETNAME", "me"]), ok());
    assert_eq!(c.cmd(&["CLIENT", "GETNAME"]), bulk("me"));
    assert!(matches!(c.cmd(&["CLIENT", "ID"]), Value::Integer(n) if n > 0));
    assert!(matches!(c.cmd(&["COMMAND", "COUNT"]), Value::Integer(n) if n > 40));
    let Value::Array(info) = c.cmd(&["COMMAND", "INFO", "get", "nosuch"]) else {
        panic!("COMMAND INFO");
    };
    assert_eq!(info.len(), 2);
    assert_eq!(info[1], Value::Nil);
    assert!(matches!(c.cmd(&["COMMAND"]), Value::Array(v) if v.len() > 40));
    assert_eq!(c.cmd(&["COMMAND", "DOCS"]), arr(vec![]));
    let Value::Array(cfg) = c.cmd(&["CONFIG", "GET", "save"]) else {
        panic!("CONFIG GET");
    };
    assert_eq!(cfg, vec![bulk("save"), bulk("")]);
    let Value::Array(cfg) = c.cmd(&["CONFIG", "GET", "append*"]) else {
        panic!("CONFIG GET");
    };
    assert_eq!(cfg.len(), 4);
    assert!(is_err(&c.cmd(&["CONFIG", "SET", "save", ""]), "ERR"));
    let Value::Bulk(info) = c.cmd(&["INFO"]) else {
        panic!("INFO");
    };
    let info = String::from_utf8(info).unwrap();
    for section in [
        "# Server",
        "# Stats",
        "# Keyspace",
        "# Tegula",
        "engine:smrdb",
    ] {
        assert!(info.contains(section), "{section} in {info}");
    }
    assert!(matches!(c.cmd(&["TIME"]), Value::Array(v) if v.len() == 2));
    assert_eq!(c.cmd(&["QUIT"]), ok());
    assert_eq!(c.read(), None, "QUIT closes the connection");
}

#[test]
fn string_commands_follow_redis_semantics() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    assert_eq!(c.cmd(&["GET", "k"]), Value::Nil);
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
    assert_eq!(c.cmd(&["SET", "k", "w", "NX"]), Value::Nil);
    assert_eq!(c.cmd(&["SET", "k", "w", "XX", "GET"]), bulk("v"));
    assert_eq!(c.cmd(&["SET", "nokey", "w", "XX"]), Value::Nil);
    assert!(is_err(
        &c.cmd(&["SET", "k", "v", "EX", "0"]),
        "ERR invalid expire time"
    ));
    assert!(is_err(
        &c.cmd(&["SET", "k", "v", "NX", "XX"]),
        "ERR syntax error"
    ));
    assert!(is_err(&c.cmd(&["SET", "k", "v", "EX"]), "ERR syntax error"));
    assert_eq!(c.cmd(&["SETNX", "k", "x"]), int(0));
    assert_eq!(c.cmd(&["SETNX", "k2", "x"]), int(1));
    assert_eq!(c.cmd(&["STRLEN", "k"]), int(1));
    assert_eq!(c.cmd(&["APPEND", "k", "xyz"]), int(4));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("wxyz"));
    assert_eq!(c.cmd(&["GETSET", "k", "n"]), bulk("wxyz"));
    assert_eq!(c.cmd(&["GETDEL", "k"]), bulk("n"));
    assert_eq!(c.cmd(&["EXISTS", "k", "k2", "k2"]), int(2));
    assert_eq!(c.cmd(&["INCR", "n"]), int(1));
    assert_eq!(c.cmd(&["INCRBY", "n", "41"]), int(42));
    assert_eq!(c.cmd(&["DECR", "n"]), int(41));
    assert_eq!(c.cmd(&["DECRBY", "n", "40"]), int(1));
    assert!(is_err(
        &c.cmd(&["INCR", "k2"]),
        "ERR value is not an integer"
    ));
    assert_eq!(c.cmd(&["SET", "big", &i64::MAX.to_string()]), ok());
    assert!(is_err(
        &c.cmd(&["INCR", "big"]),
        "ERR increment or decrement would overflow"
    ));
    assert_eq!(c.cmd(&["MSET", "a", "1", "b", "2"]), ok());
    assert!(is_err(&c.cmd(&["MSET", "a", "1", "b"]), "ERR wrong number"));
    assert_eq!(
        c.cmd(&["MGET", "a", "b", "none"]),
        arr(vec![bulk("1"), bulk("2"), Value::Nil])
    );
    assert_eq!(c.cmd(&["DEL", "a", "b", "none"]), int(2));
    assert_eq!(c.cmd(&["TYPE", "n"]), Value::Simple(b"string".to_vec()));
    assert_eq!(c.cmd(&["TYPE", "none"]), Value::Simple(b"none".to_vec()));
    // Binary-safe keys and values.
    c.send_raw(b"*3\r\n$3\r\nSET\r\n$3\r\n\x00\r\n\r\n$2\r\n\xff\n\r\n");
    assert_eq!(c.read(), Some(ok()));
    c.send_raw(b"*2\r\n$3\r\nGET\r\n$3\r\n\x00\r\n\r\n");
    assert_eq!(c.read(), Some(Value::Bulk(b"\xff\n".to_vec())));
}

#[test]
fn hashes_are_composite_keys_read_by_range() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    assert_eq!(c.cmd(&["HSET", "h", "f1", "v1", "f2", "v2"]), int(2));
    assert_eq!(c.cmd(&["HSET", "h", "f1", "v1b", "f3", "v3"]), int(1));
    assert_eq!(
        c.cmd(&["HSET", "h2", "f", "a", "f", "b"]),
        int(1),
        "a field named twice counts once"
    );
    assert_eq!(c.cmd(&["HGET", "h2", "f"]), bulk("b"));
    assert_eq!(c.cmd(&["HMSET", "h", "f4", "v4"]), ok());
    assert_eq!(c.cmd(&["HGET", "h", "f1"]), bulk("v1b"));
    assert_eq!(c.cmd(&["HGET", "h", "nof"]), Value::Nil);
    assert_eq!(c.cmd(&["HGET", "noh", "f"]), Value::Nil);
    assert_eq!(
        c.cmd(&["HMGET", "h", "f2", "nof", "f3"]),
        arr(vec![bulk("v2"), Value::Nil, bulk("v3")])
    );
    // Most of the hash's fields: one range scan answers (a missing field is nil).
    assert_eq!(
        c.cmd(&["HMGET", "h", "f4", "f1", "nof", "f3", "f2"]),
        arr(vec![
            bulk("v4"),
            bulk("v1b"),
            Value::Nil,
            bulk("v3"),
            bulk("v2")
        ])
    );
    assert_eq!(c.cmd(&["HLEN", "h"]), int(4));
    assert_eq!(c.cmd(&["HEXISTS", "h", "f4"]), int(1));
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        arr(["f1", "v1b", "f2", "v2", "f3", "v3", "f4", "v4"]
            .iter()
            .map(|s| bulk(s))
            .collect())
    );
    assert_eq!(
        c.cmd(&["HKEYS", "h"]),
        arr(vec![bulk("f1"), bulk("f2"), bulk("f3"), bulk("f4")])
    );
    assert_eq!(c.cmd(&["HINCRBY", "h", "n", "5"]), int(5));
    assert_eq!(c.cmd(&["HSETNX", "h", "n", "9"]), int(0));
    assert_eq!(c.cmd(&["HDEL", "h", "f1", "f2", "nof"]), int(2));
    assert_eq!(c.cmd(&["HLEN", "h"]), int(3));
    assert!(is_err(&c.cmd(&["GET", "h"]), "WRONGTYPE"));
    c.cmd(&["SET", "s", "x"]);
    assert!(is_err(&c.cmd(&["HSET", "s", "f", "v"]), "WRONGTYPE"));
    assert_eq!(c.cmd(&["TYPE", "h"]), Value::Simple(b"hash".to_vec()));
    // The hash "a" and the hash "ab" keep their fields apart.
    c.cmd(&["HSET", "a", "b", "1"]);
    c.cmd(&["HSET", "ab", "", "2"]);
    assert_eq!(c.cmd(&["HGETALL", "a"]), arr(vec![bulk("b"), bulk("1")]));
    // SET over a hash drops its fields; a new hash of that name starts empty.
    assert_eq!(c.cmd(&["SET", "h", "str"]), ok());
    assert!(is_err(&c.cmd(&["HSET", "h", "z", "1"]), "WRONGTYPE"));
    assert_eq!(c.cmd(&["DEL", "h"]), int(1));
    assert_eq!(c.cmd(&["HSET", "h", "z", "1"]), int(1));
    assert_eq!(c.cmd(&["HGETALL", "h"]), arr(vec![bulk("z"), bulk("1")]));
    assert_eq!(c.cmd(&["DEL", "h"]), int(1));
    assert_eq!(c.cmd(&["HGETALL", "h"]), arr(vec![]));
    assert_eq!(c.cmd(&["HDEL", "ab", ""]), int(1));
    assert_eq!(
        c.cmd(&["EXISTS", "ab"]),
        int(0),
        "the last HDEL removes the hash"
    );
}

#[test]
fn keyspace_commands_list_every_key_once() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    for i in 0..250 {
        c.send(&["SET", &format!("key:{i:03}"), "v"]);
    }
    for _ in 0..250 {
        assert_eq!(c.read(), Some(ok()));
    }
    c.cmd(&["HSET", "hash:1", "f", "v"]);
    assert_eq!(c.cmd(&["DBSIZE"]), int(251));
    let Value::Array(keys) = c.cmd(&["KEYS", "key:1?5"]) else {
        panic!("KEYS");
    };
    assert_eq!(keys.len(), 10);
    let Value::Array(keys) = c.cmd(&["KEYS", "*"]) else {
        panic!("KEYS");
    };
    assert_eq!(keys.len(), 251);
    // SCAN visits every key exactly once.
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let Value::Array(r) = c.cmd(&["SCAN", &cursor, "COUNT", "17"]) else {
            panic!("SCAN");
        };
        let (Value::Bulk(next), Value::Array(keys)) = (&r[0], &r[1]) else {
            panic!("SCAN reply {r:?}");
        };
        for k in keys {
            let k = k.as_bytes().unwrap().to_vec();
            assert!(seen.insert(k.clone()), "{k:?} twice");
        }
        cursor = String::from_utf8(next.clone()).unwrap();
        calls += 1;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 251);
    assert!(calls >= 251 / 17);
    let Value::Array(r) = c.cmd(&[
        "SCAN", "0", "MATCH", "hash:*", "COUNT", "1000", "TYPE", "hash",
    ]) else {
        panic!("SCAN");
    };
    assert_eq!(r[1], arr(vec![bulk("hash:1")]));
    assert!(is_err(&c.cmd(&["SCAN", "999999"]), "ERR invalid cursor"));
    assert_eq!(c.cmd(&["FLUSHDB"]), ok());
    assert_eq!(c.cmd(&["DBSIZE"]), int(0));
    assert_eq!(c.cmd(&["SAVE"]), ok());
    assert_eq!(
        c.cmd(&["BGSAVE"]),
        Value::Simple(b"Background saving started".to_vec())
    );
}

#[test]
fn expiry_is_checked_on_read() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    assert_eq!(c.cmd(&["SET", "e", "v", "PX", "150"]), ok());
    assert!(matches!(c.cmd(&["PTTL", "e"]), Value::Integer(n) if n > 0 && n <= 150));
    assert_eq!(c.cmd(&["TTL", "nokey"]), int(-2));
    c.cmd(&["SET", "p", "v"]);
    assert_eq!(c.cmd(&["TTL", "p"]), int(-1));
    assert_eq!(c.cmd(&["EXPIRE", "p", "100"]), int(1));
    assert!(matches!(c.cmd(&["TTL", "p"]), Value::Integer(n) if n > 98));
    assert_eq!(c.cmd(&["PERSIST", "p"]), int(1));
    assert_eq!(c.cmd(&["TTL", "p"]), int(-1));
    c.cmd(&["HSET", "eh", "f", "v"]);
    assert_eq!(c.cmd(&["PEXPIRE", "eh", "100"]), int(1));
    std::thread::sleep(std::time::Duration::from_millis(250));
    assert_eq!(c.cmd(&["GET", "e"]), Value::Nil);
    assert_eq!(c.cmd(&["HGETALL", "eh"]), arr(vec![]));
    assert_eq!(c.cmd(&["DBSIZE"]), int(1));
    assert_eq!(c.cmd(&["SETEX", "x", "100", "v"]), ok());
    assert_eq!(c.cmd(&["EXPIRE", "x", "-1"]), int(1));
    assert_eq!(c.cmd(&["EXISTS", "x"]), int(0));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    let mut batch = Vec::new();
    for i in 0..3000 {
        batch.extend(tegula_server::resp::encode_command(&[
            "SET",
            &format!("p{i}"),
            &i.to_string(),
        ]));
        batch.extend(tegula_server::resp::encode_command(&[
            "GET",
            &format!("p{i}"),
        ]));
    }
    c.send_raw(&batch);
    for i in 0..3000 {
        assert_eq!(c.read(), Some(ok()));
        assert_eq!(c.read(), Some(bulk(&i.to_string())));
    }
}

#[test]
fn requests_split_at_every_byte_are_reassembled() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    let msg = b"*3\r\n$3\r\nSET\r\n$5\r\nsplit\r\n$10\r\n0123456789\r\nPING\r\n";
    for i in 1..msg.len() {
        c.send_raw(&msg[..i]);
        std::thread::sleep(std::time::Duration::from_millis(2));
        c.send_raw(&msg[i..]);
        assert_eq!(c.read(), Some(ok()), "split at {i}");
        assert_eq!(
            c.read(),
            Some(Value::Simple(b"PONG".to_vec())),
            "split at {i}"
        );
    }
    // One byte at a time.
    for b in msg.iter() {
        c.send_raw(&[*b]);
    }
    assert_eq!(c.read(), Some(ok()));
    assert_eq!(c.read(), Some(Value::Simple(b"PONG".to_vec())));
    assert_eq!(c.cmd(&["GET", "split"]), bulk("0123456789"));
    // Inline commands with quotes, as telnet sends them.
    c.send_raw(b"set \"in line\" 'v 1'\r\nget \"in line\"\n");
    assert_eq!(c.read(), Some(ok()));
    assert_eq!(c.read(), Some(bulk("v 1")));
}

#[test]
fn protocol_errors_are_replied_then_the_connection_closes() {
    let s = TestServer::start(ServerOptions {
        max_bulk: 1 << 20,
        ..ServerOptions::default()
    });
    let bad: [&[u8]; 5] = [
        b"*1\r\n$99999999999\r\n",
        b"*2\r\n+GET\r\n",
        b"*x\r\n",
        b"set \"unbalanced\r\n",
        b"*1\r\n$3\r\nGETXX\r\n",
    ];
    for b in bad {
        let mut c = s.client();
        c.send(&["SET", "before", "1"]);
        c.send_raw(b);
        assert_eq!(
            c.read(),
            Some(ok()),
            "the request before the bad bytes is answered"
        );
        let r = c.read();
        assert!(
            matches!(&r, Some(v) if is_err(v, "ERR Protocol error")),
            "{:?}: {r:?}",
            String::from_utf8_lossy(b)
        );
        assert_eq!(c.read(), None);
    }
    let mut c = s.client();
    assert_eq!(c.cmd(&["GET", "before"]), bulk("1"), "the server stays up");
}

#[test]
fn hello_switches_to_resp3() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    let Value::Map(m) = c.cmd(&["HELLO", "3"]) else {
        panic!("HELLO 3 replies a map");
    };
    assert!(m.contains(&(bulk("proto"), int(3))));
    assert_eq!(c.cmd(&["GET", "none"]), Value::Nil);
    c.cmd(&["HSET", "h", "f", "v"]);
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        Value::Map(vec![(bulk("f"), bulk("v"))])
    );
    assert!(matches!(c.cmd(&["INFO", "server"]), Value::Verbatim(_)));
    assert!(is_err(&c.cmd(&["HELLO", "4"]), "NOPROTO"));
    let Value::Array(v) = c.cmd(&["HELLO", "2"]) else {
        panic!("HELLO 2 replies an array");
    };
    assert_eq!(v.len(), 14);
    assert_eq!(c.cmd(&["HGETALL", "h"]), arr(vec![bulk("f"), bulk("v")]));
}

#[test]
fn requirepass_needs_auth_first() {
    let s = TestServer::start(ServerOptions {
        requirepass: Some("secret".into()),
        ..ServerOptions::default()
    });
    let mut c = s.client();
    assert!(is_err(&c.cmd(&["GET", "k"]), "NOAUTH"));
    assert!(is_err(&c.cmd(&["AUTH", "wrong"]), "WRONGPASS"));
    assert!(is_err(&c.cmd(&["HELLO", "3"]), "NOAUTH"));
    assert_eq!(c.cmd(&["AUTH", "secret"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    let mut c2 = s.client();
    assert!(matches!(
        c2.cmd(&["HELLO", "3", "AUTH", "default", "secret"]),
        Value::Map(_)
    ));
    assert_eq!(c2.cmd(&["GET", "k"]), bulk("v"));
    let s2 = TestServer::start(ServerOptions::default());
    assert!(is_err(
        &s2.client().cmd(&["AUTH", "x"]),
        "ERR AUTH <password> called without"
    ));
}

#[test]
fn connections_past_the_limit_are_refused_and_the_rest_served() {
    let s = TestServer::start(ServerOptions {
        max_clients: 3,
        ..ServerOptions::default()
    });
    let mut cs: Vec<Client> = (0..3).map(|_| s.client()).collect();
    for c in &mut cs {
        assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    }
    let mut extra = s.client();
    let r = extra.read();
    assert!(
        matches!(&r, Some(v) if is_err(v, "ERR max number of clients reached")),
        "{r:?}"
    );
    assert_eq!(extra.read(), None);
    drop(cs.pop());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut again = s.client();
    assert_eq!(again.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    let report = s.stop();
    assert_eq!(report.rejected, 1);
}

#[test]
fn values_larger_than_the_engine_takes_are_refused() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    // 1 MiB bands: a batch may hold 128 KiB.
    let big = "x".repeat(200 << 10);
    assert!(is_err(&c.cmd(&["SET", "big", &big]), "ERR value too large"));
    let fits = "y".repeat(100 << 10);
    assert_eq!(c.cmd(&["SET", "fits", &fits]), ok());
    assert_eq!(c.cmd(&["STRLEN", "fits"]), int(100 << 10));
}

#[test]
fn idle_connections_time_out() {
    let s = TestServer::start(ServerOptions {
        idle_timeout: Some(std::time::Duration::from_millis(300)),
        ..ServerOptions::default()
    });
    let mut c = s.client();
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    std::thread::sleep(std::time::Duration::from_millis(900));
    assert_eq!(c.read(), None);
}

#[test]
fn shutdown_stops_the_server_with_writes_durable() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    c.cmd(&["SET", "k", "v"]);
    c.send(&["SHUTDOWN"]);
    assert_eq!(c.read(), None);
    let report = s.stop();
    assert!(report.commands >= 2);
}

#[test]
fn a_client_that_sends_and_half_closes_is_answered_then_closed() {
    // The request and the end of the stream arrive together: the read that takes the
    // request is short, and the end must still be noticed (no event announces it again).
    let s = TestServer::start(ServerOptions::default());
    for _ in 0..20 {
        let mut c = s.client();
        c.send_raw(b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$2\r\nhc\r\n$1\r\n1\r\n");
        c.stream.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(c.read(), Some(Value::Simple(b"PONG".to_vec())));
        assert_eq!(c.read(), Some(ok()));
        assert_eq!(c.read(), None, "the server closes its side");
    }
    let mut c = s.client();
    assert_eq!(c.cmd(&["GET", "hc"]), bulk("1"));
}
