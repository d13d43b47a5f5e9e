//! Sorted sets through a real socket: the replies redis-server 7.0.15 gave to the same
//! commands (ZADD's flags, ranges by rank and score with exclusive bounds and LIMIT, ranks,
//! errors), and a model check of random ZADD/ZINCRBY/ZREM against an in-memory sorted map,
//! across a restart.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use std::collections::BTreeMap;
use tegula_server::resp::encode::format_double;
use tegula_server::resp::Value;
use tegula_server::ServerOptions;

fn arr(v: &[&str]) -> Value {
    Value::Array(v.iter().map(|s| bulk(s)).collect())
}

#[test]
fn sorted_set_commands_answer_as_redis_7_0_does() {
    let s = TestServer::start(ServerOptions::default());
    let mut c = s.client();
    // Each line was run against redis-server 7.0.15 too; the expected reply is its reply.
    assert_eq!(c.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]), int(3));
    assert_eq!(c.cmd(&["ZADD", "z", "1.5", "a"]), int(0));
    assert_eq!(c.cmd(&["ZADD", "z", "CH", "2.5", "a", "9", "d"]), int(2));
    assert_eq!(c.cmd(&["ZADD", "z", "NX", "100", "a", "4", "e"]), int(1));
    assert_eq!(c.cmd(&["ZADD", "z", "XX", "100", "a", "4", "f"]), int(0));
    assert_eq!(c.cmd(&["ZADD", "z", "GT", "50", "a"]), int(0));
    assert_eq!(c.cmd(&["ZADD", "z", "LT", "60", "a"]), int(0));
    assert_eq!(c.cmd(&["ZADD", "z", "INCR", "5", "a"]), bulk("65"));
    assert_eq!(c.cmd(&["ZADD", "z", "NX", "INCR", "5", "a"]), Value::Nil);
    assert_eq!(c.cmd(&["ZADD", "z", "1", "a", "1", "a"]), int(0));
    assert_eq!(c.cmd(&["ZCARD", "z"]), int(5));
    assert_eq!(c.cmd(&["ZSCORE", "z", "a"]), bulk("1"));
    assert_eq!(c.cmd(&["ZSCORE", "z", "nope"]), Value::Nil);
    assert_eq!(
        c.cmd(&["ZMSCORE", "z", "a", "b", "nope"]),
        Value::Array(vec![bulk("1"), bulk("2"), Value::Nil])
    );
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "0", "-1"]),
        arr(&["a", "b", "c", "e", "d"])
    );
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        arr(&["a", "1", "b", "2", "c", "3", "e", "4", "d", "9"])
    );
    assert_eq!(c.cmd(&["ZRANGE", "z", "1", "2"]), arr(&["b", "c"]));
    assert_eq!(c.cmd(&["ZRANGE", "z", "-2", "-1"]), arr(&["e", "d"]));
    assert_eq!(c.cmd(&["ZRANGE", "z", "5", "10"]), arr(&[]));
    assert_eq!(c.cmd(&["ZRANGE", "z", "0", "-1", "BYSCORE"]), arr(&[]));
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"]),
        arr(&["b", "c"])
    );
    assert!(is_err(
        &c.cmd(&["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"]),
        "ERR syntax error, LIMIT is only supported"
    ));
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "z", "-inf", "+inf"]),
        arr(&["a", "b", "c", "e", "d"])
    );
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "z", "(1", "3", "WITHSCORES"]),
        arr(&["b", "2", "c", "3"])
    );
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "z", "2", "(9", "LIMIT", "1", "1"]),
        arr(&["c"])
    );
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "z", "2", "9", "LIMIT", "-1", "1"]),
        arr(&[])
    );
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "z", "2", "9", "LIMIT", "0", "-1"]),
        arr(&["b", "c", "e", "d"])
    );
    assert!(is_err(
        &c.cmd(&["ZRANGEBYSCORE", "z", "abc", "1"]),
        "ERR min or max is not a float"
    ));
    assert_eq!(c.cmd(&["ZRANGEBYSCORE", "z", "1", "0"]), arr(&[]));
    assert_eq!(c.cmd(&["ZCOUNT", "z", "-inf", "+inf"]), int(5));
    assert_eq!(c.cmd(&["ZCOUNT", "z", "(1", "(9"]), int(3));
    assert_eq!(c.cmd(&["ZRANK", "z", "a"]), int(0));
    assert_eq!(c.cmd(&["ZRANK", "z", "d"]), int(4));
    assert_eq!(c.cmd(&["ZRANK", "z", "nope"]), Value::Nil);
    assert_eq!(c.cmd(&["ZINCRBY", "z", "2.5", "b"]), bulk("4.5"));
    assert_eq!(c.cmd(&["ZINCRBY", "z", "1", "newone"]), bulk("1"));
    assert_eq!(
        c.cmd(&["ZADD", "z", "inf", "top", "-inf", "bottom"]),
        int(2)
    );
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        arr(&[
            "bottom", "-inf", "a", "1", "newone", "1", "c", "3", "e", "4", "b", "4.5", "d", "9",
            "top", "inf"
        ])
    );
    assert_eq!(c.cmd(&["ZADD", "z", "INCR", "-inf", "top"]).clone(), {
        Value::Error(b"ERR resulting score is not a number (NaN)".to_vec())
    });
    assert_eq!(c.cmd(&["ZREM", "z", "a", "nope", "b"]), int(2));
    assert_eq!(c.cmd(&["ZREM", "z", "nope"]), int(0));
    assert_eq!(c.cmd(&["TYPE", "z"]), Value::Simple(b"zset".to_vec()));
    for (args, e) in [
        (
            &["ZADD", "z", "nan", "x"][..],
            "ERR value is not a valid float",
        ),
        (
            &["ZADD", "z", "1"],
            "ERR wrong number of arguments for 'zadd'",
        ),
        (
            &["ZADD", "z", "XX", "NX", "1", "m"],
            "ERR XX and NX options",
        ),
        (
            &["ZADD", "z", "GT", "NX", "1", "m"],
            "ERR GT, LT, and/or NX",
        ),
        (
            &["ZADD", "z", "INCR", "1", "m", "2", "n"],
            "ERR INCR option supports",
        ),
        (&["ZADD", "z", "1", "m", "2"], "ERR syntax error"),
        (
            &["ZRANGE", "z", "0", "-1", "REV"],
            "ERR REV and BYLEX are not supported",
        ),
    ] {
        assert!(is_err(&c.cmd(args), e), "{args:?}");
    }
    // Types: strings and hashes are not sorted sets, nor the other way round.
    assert_eq!(c.cmd(&["SET", "s", "v"]), ok());
    assert!(is_err(&c.cmd(&["ZADD", "s", "1", "a"]), "WRONGTYPE"));
    assert!(is_err(&c.cmd(&["ZSCORE", "s", "a"]), "WRONGTYPE"));
    assert!(is_err(&c.cmd(&["GET", "z"]), "WRONGTYPE"));
    assert!(is_err(&c.cmd(&["HSET", "z", "f", "v"]), "WRONGTYPE"));
    assert_eq!(c.cmd(&["ZRANGE", "nokey", "0", "-1"]), arr(&[]));
    assert_eq!(c.cmd(&["ZCARD", "nokey"]), int(0));
    // The last ZREM removes the key; SET and DEL replace or remove a set whole.
    assert_eq!(
        c.cmd(&["ZREM", "z", "c", "d", "e", "top", "bottom", "newone"]),
        int(6)
    );
    assert_eq!(c.cmd(&["EXISTS", "z"]), int(0));
    assert_eq!(c.cmd(&["ZADD", "z2", "1", "x"]), int(1));
    assert_eq!(c.cmd(&["SET", "z2", "str"]), ok());
    assert_eq!(c.cmd(&["GET", "z2"]), bulk("str"));
    assert_eq!(c.cmd(&["ZADD", "z3", "1", "m"]), int(1));
    assert_eq!(c.cmd(&["DEL", "z3"]), int(1));
    assert_eq!(c.cmd(&["ZADD", "z3", "2", "n"]), int(1));
    assert_eq!(
        c.cmd(&["ZRANGE", "z3", "0", "-1"]),
        arr(&["n"]),
        "no member survives DEL"
    );
    // RESP3: scores are doubles, WITHSCORES gives pairs.
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["ZSCORE", "z3", "n"]), Value::Double(b"2".to_vec()));
    assert_eq!(
        c.cmd(&["ZRANGE", "z3", "0", "-1", "WITHSCORES"]),
        Value::Array(vec![Value::Array(vec![
            bulk("n"),
            Value::Double(b"2".to_vec())
        ])])
    );
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const SCORES: [&str; 9] = ["-inf", "-2.5", "-1", "0", "1", "1.5", "2", "1e300", "inf"];

/// The model's members in Redis's order: by score, then member.
fn ordered(model: &BTreeMap<String, f64>) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn check(c: &mut Client, model: &BTreeMap<String, f64>, rng: &mut Rng) {
    let all = ordered(model);
    let mut want: Vec<String> = Vec::new();
    for (m, s) in &all {
        want.push(m.clone());
        want.push(format_double(*s));
    }
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    assert_eq!(c.cmd(&["ZRANGE", "m", "0", "-1", "WITHSCORES"]), arr(&want));
    assert_eq!(c.cmd(&["ZCARD", "m"]), int(all.len() as i64));
    // A random score range with random exclusivity and a random LIMIT.
    let (lo, hi) = (rng.below(9) as usize, rng.below(9) as usize);
    let (lo_ex, hi_ex) = (rng.below(2) == 1, rng.below(2) == 1);
    let (off, cnt) = (rng.below(4) as usize, rng.below(6) as i64 - 1);
    let lo_v: f64 = SCORES[lo].parse().unwrap();
    let hi_v: f64 = SCORES[hi].parse().unwrap();
    let inside: Vec<&str> = all
        .iter()
        .filter(|(_, s)| {
            (if lo_ex { *s > lo_v } else { *s >= lo_v })
                && (if hi_ex { *s < hi_v } else { *s <= hi_v })
        })
        .map(|(m, _)| m.as_str())
        .collect();
    let limited: Vec<&str> = inside
        .iter()
        .skip(off)
        .take(if cnt < 0 { usize::MAX } else { cnt as usize })
        .copied()
        .collect();
    let lo_arg = format!("{}{}", if lo_ex { "(" } else { "" }, SCORES[lo]);
    let hi_arg = format!("{}{}", if hi_ex { "(" } else { "" }, SCORES[hi]);
    assert_eq!(
        c.cmd(&["ZCOUNT", "m", &lo_arg, &hi_arg]),
        int(inside.len() as i64)
    );
    let (off_s, cnt_s) = (off.to_string(), cnt.to_string());
    assert_eq!(
        c.cmd(&[
            "ZRANGEBYSCORE",
            "m",
            &lo_arg,
            &hi_arg,
            "LIMIT",
            &off_s,
            &cnt_s
        ]),
        arr(&limited),
        "{lo_arg} {hi_arg} LIMIT {off} {cnt}"
    );
    // Ranks, and a range by rank.
    if let Some((i, (m, _))) = all
        .iter()
        .enumerate()
        .nth(rng.below(all.len() as u64 + 1) as usize)
    {
        assert_eq!(c.cmd(&["ZRANK", "m", m]), int(i as i64));
    }
    let (a, b) = (rng.below(12) as i64 - 6, rng.below(12) as i64 - 6);
    let n = all.len() as i64;
    let start = if a < 0 { (a + n).max(0) } else { a };
    let stop = if b < 0 { b + n } else { b.min(n - 1) };
    let by_rank: Vec<&str> = if start > stop || start >= n {
        Vec::new()
    } else {
        all[start as usize..=stop as usize]
            .iter()
            .map(|(m, _)| m.as_str())
            .collect()
    };
    assert_eq!(
        c.cmd(&["ZRANGE", "m", &a.to_string(), &b.to_string()]),
        arr(&by_rank),
        "ZRANGE {a} {b}"
    );
}

#[test]
fn random_operations_match_a_sorted_map_across_a_restart() {
    let dev = memory_drive();
    let mut model: BTreeMap<String, f64> = BTreeMap::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..2 {
        let s = TestServer::start_with(ServerOptions::default(), Box::new(smrdb_on(&dev)));
        let mut c = s.client();
        for step in 0..1500 {
            let m = format!("m{}", rng.below(40));
            let sc = SCORES[rng.below(9) as usize];
            let v: f64 = sc.parse().unwrap();
            match rng.below(4) {
                0 | 1 => {
                    let added = !model.contains_key(&m);
                    model.insert(m.clone(), v);
                    assert_eq!(c.cmd(&["ZADD", "m", sc, &m]), int(i64::from(added)));
                }
                2 => {
                    let by = ["1", "-0.5", "2"][rng.below(3) as usize];
                    let old = model.get(&m).copied().unwrap_or(0.0);
                    let new = old + by.parse::<f64>().unwrap();
                    model.insert(m.clone(), new);
                    assert_eq!(c.cmd(&["ZINCRBY", "m", by, &m]), bulk(&format_double(new)));
                }
                _ => {
                    let gone = model.remove(&m).is_some();
                    assert_eq!(c.cmd(&["ZREM", "m", &m]), int(i64::from(gone)));
                }
            }
            if step % 25 == 0 {
                check(&mut c, &model, &mut rng);
            }
        }
        check(&mut c, &model, &mut rng);
        drop(c);
        s.stop();
        let _ = round;
    }
}

#[test]
fn a_range_larger_than_the_output_limit_is_refused_and_limit_pages_through_it() {
    let s = TestServer::start(ServerOptions {
        max_output: 4096,
        ..ServerOptions::default()
    });
    let mut c = s.client();
    let mut args = vec!["ZADD".to_string(), "big".to_string()];
    for i in 0..500 {
        args.push(i.to_string());
        args.push(format!("member-{i:05}-with-a-long-name"));
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(c.cmd(&a), int(500));
    assert!(is_err(
        &c.cmd(&["ZRANGE", "big", "0", "-1"]),
        "ERR the reply exceeds the output buffer limit"
    ));
    // LIMIT pages through all of it, in order, each page under the limit.
    let mut seen = Vec::new();
    for page in 0..10 {
        let off = (page * 50).to_string();
        match c.cmd(&["ZRANGEBYSCORE", "big", "-inf", "+inf", "LIMIT", &off, "50"]) {
            Value::Array(v) => seen.extend(v),
            other => panic!("{other:?}"),
        }
    }
    let want: Vec<Value> = (0..500)
        .map(|i| bulk(&format!("member-{i:05}-with-a-long-name")))
        .collect();
    assert_eq!(seen, want);
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}
