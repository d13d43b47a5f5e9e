//! The memtable's tests: order, lookups at snapshots, the point index, the key filter and
//! the arena.

use super::*;
use std::collections::BTreeMap;

fn all(m: &Memtable) -> Vec<Entry> {
    m.with_iter(|it| it.map(|e| e.to_entry()).collect())
}

#[test]
fn a_version_takes_48_bytes_in_the_tree() {
    assert_eq!(std::mem::size_of::<IKey>(), 48);
}

/// The packed offset and lengths give back what was packed, at the ends of their ranges.
#[test]
fn a_place_unpacks_what_was_packed() {
    let max_off = CHUNK_BYTES - 1;
    for (off, klen, put, vlen) in [
        (0, 0, false, Some(0)),
        (max_off, crate::db::MAX_KEY_LEN, true, Some(OWN_CHUNK)),
        (7, 1, true, None),
        (max_off, 0, false, None),
        (12_345, 21, true, Some(100)),
    ] {
        let p = Place::new(off, klen, put, vlen);
        assert_eq!(
            (p.off(), p.klen(), p.put(), p.vlen()),
            (off, klen, put, vlen)
        );
    }
}

/// Versions fill chunks one after another (a chunk's end left unused when the next one
/// does not fit), a version larger than a quarter chunk gets a chunk of its own, empty keys
/// and values and tombstones read back, and a scan's batch still reads its versions after
/// the memtable is gone.
#[test]
fn versions_in_chunks_read_back_and_outlive_the_memtable() {
    let m = Memtable::new();
    let mut model = BTreeMap::new();
    let sizes = [
        0,
        1,
        100,
        4096,
        70_000,
        OWN_CHUNK - 9,
        OWN_CHUNK + 1,
        3 * CHUNK_BYTES / 2,
    ];
    for i in 0..80u64 {
        let k = if i == 0 {
            String::new()
        } else {
            format!("key{i:05}")
        };
        let len = sizes[i as usize % sizes.len()];
        let v: Vec<u8> = (0..len).map(|j| (j as u64 * 31 + i) as u8).collect();
        let value = (i % 7 != 3).then_some(&v[..]);
        m.insert(k.as_bytes(), i + 1, value);
        model.insert(k.into_bytes(), value.map(<[u8]>::to_vec));
    }
    for (k, v) in &model {
        assert_eq!(m.get(k, u64::MAX).map(|(_, v)| v), Some(v.clone()));
    }
    let mut batch = FlatBatch::default();
    assert!(!m.batch_into(BatchFrom::Start(b""), 1000, usize::MAX, &mut batch));
    drop(m);
    assert_eq!(batch.len(), model.len());
    for (i, (k, v)) in model.iter().enumerate() {
        let e = batch.get(i).unwrap();
        assert_eq!((e.key, e.value), (&k[..], v.as_deref()));
    }
}

#[test]
fn newest_visible_version_wins() {
    let m = Memtable::new();
    m.insert(b"a", 1, Some(b"x"));
    m.insert(b"a", 3, None);
    m.insert(b"a", 5, Some(b"z"));
    m.insert(b"b", 2, Some(b"y"));
    assert_eq!(m.get(b"a", 10), Some((5, Some(b"z".to_vec()))));
    assert_eq!(m.get(b"a", 4), Some((3, None)));
    assert_eq!(m.get(b"a", 2), Some((1, Some(b"x".to_vec()))));
    assert_eq!(m.get(b"a", 0), None);
    assert_eq!(m.get(b"c", 10), None);
    let all = all(&m);
    assert_eq!(all.len(), 4);
    assert_eq!((all[0].seq, all[3].key.as_slice()), (5, &b"b"[..]));
    let mut rest = FlatBatch::default();
    assert!(!m.batch_into(BatchFrom::After(b"a", 3), 10, 1 << 20, &mut rest));
    assert_eq!(rest.get(0).map(|e| (e.key, e.seq)), Some((&b"a"[..], 1)));
    assert_eq!(rest.len(), 2);
    // A limit stops it (more may follow), so does the byte budget after one entry.
    assert!(m.batch_into(BatchFrom::Start(b""), 1, 1 << 20, &mut rest));
    assert!(m.batch_into(BatchFrom::Start(b""), 10, 1, &mut rest));
    assert_eq!(rest.len(), 1);
}

/// Keys that differ only past the inline 24-byte prefix or in its last 8 bytes, keys that
/// are prefixes of others, tombstones and values, trailing zero bytes (which the prefix's padding cannot tell apart from a
/// shorter key) and the empty key: order and lookups agree with plain byte order.
#[test]
fn inline_prefix_keeps_byte_order() {
    let mut keys: Vec<Vec<u8>> = vec![
        vec![],
        vec![0],
        vec![0, 0],
        b"a".to_vec(),
        b"a\0".to_vec(),
        b"a\0\0".to_vec(),
        b"0123456789abcdef".to_vec(),
        b"0123456789abcdef\0".to_vec(),
        b"0123456789abcdefA".to_vec(),
        b"0123456789abcdefB".to_vec(),
        b"0123456789abcdeg".to_vec(),
        b"0123456789abcde".to_vec(),
        b"0123456789abcdef0123".to_vec(),
        b"0123456789abcdef0123\0".to_vec(),
        b"0123456789abcdef0123A".to_vec(),
        b"0123456789abcdef012".to_vec(),
        b"0123456789abcdef013".to_vec(),
        vec![0xff; 20],
        vec![0xff; 21],
        vec![0xff; 16],
        b"0123456789abcdef01234567".to_vec(),
        b"0123456789abcdef01234567\0".to_vec(),
        b"0123456789abcdef01234567A".to_vec(),
        b"0123456789abcdef01234568".to_vec(),
        b"0123456789abcdef0123456".to_vec(),
        b"0123456789abcdef0123456\0".to_vec(),
        vec![0xff; 24],
        vec![0xff; 25],
        vec![0xff; 23],
    ];
    for i in 0..100u32 {
        keys.push(format!("kcounter:{:012}", i.wrapping_mul(2_654_435_761)).into_bytes());
    }
    for i in 0..200u32 {
        keys.push(format!("user{:020}", i.wrapping_mul(2_654_435_761)).into_bytes());
    }
    let m = Memtable::new();
    let mut model = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let seq = i as u64 + 1;
        m.insert(k, seq, Some(k));
        model.insert((k.clone(), u64::MAX - seq), ());
    }
    let got: Vec<Vec<u8>> = all(&m).into_iter().map(|e| e.key).collect();
    let want: Vec<Vec<u8>> = model.keys().map(|(k, _)| k.clone()).collect();
    assert_eq!(got, want);
    for k in &keys {
        assert_eq!(m.get(k, u64::MAX).and_then(|(_, v)| v), Some(k.clone()));
        let mut missing = k.clone();
        missing.push(1);
        if !keys.contains(&missing) {
            assert_eq!(m.get(&missing, u64::MAX), None, "{missing:?}");
        }
    }
    let mut from = FlatBatch::default();
    m.batch_into(BatchFrom::Start(b"a\0"), 2, 1 << 20, &mut from);
    assert_eq!(from.get(0).map(|e| e.key), Some(&b"a\0"[..]));
    assert_eq!(from.get(1).map(|e| e.key), Some(&b"a\0\0"[..]));
}

/// With a point index, gets agree with a plain memtable at every snapshot, whatever the
/// order in which versions arrive (recovery may insert a key's versions out of order), and
/// the index costs memory it reports.
#[test]
fn the_point_index_answers_as_the_tree_does() {
    let plain = Memtable::new();
    let indexed = Memtable::for_band(1 << 20, true);
    assert!(indexed.has_point_index() && !plain.has_point_index());
    assert_eq!(indexed.point_index_bytes(), 0);
    // Sequence numbers 1..=3000 in a scrambled order; every fifth a tombstone.
    for i in 0..3000u64 {
        let seq = i * 1237 % 3000 + 1;
        let k = format!("k{:04}", seq * 7 % 401);
        let v = (seq % 5 != 0).then(|| seq.to_be_bytes());
        for m in [&plain, &indexed] {
            m.insert(k.as_bytes(), seq, v.as_ref().map(|v| &v[..]));
        }
    }
    for m in [&plain, &indexed] {
        m.insert_many(
            5000,
            [(&b"batch-a"[..], Some(&b"1"[..])), (&b"k0001"[..], None)].into_iter(),
        );
    }
    for i in 0..450u64 {
        let k = format!("k{i:04}");
        for snap in [0, 1, 700, 1500, 2999, 3000, 4999, 5001, u64::MAX] {
            assert_eq!(
                plain.get(k.as_bytes(), snap),
                indexed.get(k.as_bytes(), snap),
                "{k} at {snap}"
            );
        }
    }
    assert_eq!(indexed.get(b"k0001", u64::MAX), Some((5001, None)));
    assert_eq!(
        indexed.get(b"batch-a", 5000),
        Some((5000, Some(b"1".to_vec())))
    );
    assert_eq!(indexed.get(b"batch-a", 4999), None);
    // 402 keys at 4-byte positions and a control byte each, not 48-byte copies.
    assert!(indexed.point_index_bytes() >= 402 * 5);
    assert!(indexed.point_index_bytes() < 402 * 48);
    assert_eq!(plain.approximate_bytes(), indexed.approximate_bytes());
}

/// The point index tells keys apart that share their first 24 bytes (kept inline) and differ
/// after them or in length, before the log is sorted, after (its positions rebuilt), after
/// more writes to the sorted log, and once the log has become a tree (copies).
#[test]
fn the_point_index_tells_long_keys_apart_across_sorts() {
    let plain = Memtable::new();
    let indexed = Memtable::for_band(1 << 20, true);
    let base = "p".repeat(24);
    let keys: Vec<String> = (0..60)
        .map(|i| match i % 3 {
            0 => format!("{base}{i:03}"),
            1 => format!("{base}{i:03}-longer"),
            _ => base[..(i % 24) + 1].to_string(),
        })
        .collect();
    let mut seq = 0;
    let mut write = |n: usize| {
        for i in 0..n {
            seq += 1;
            let k = &keys[(i * 7 + seq as usize) % keys.len()];
            for m in [&plain, &indexed] {
                m.insert(k.as_bytes(), seq, Some(&seq.to_be_bytes()));
            }
        }
    };
    let check = |step: &str| {
        for k in keys
            .iter()
            .map(String::as_bytes)
            .chain([&b"q"[..], &b""[..]])
        {
            assert_eq!(plain.get(k, u64::MAX), indexed.get(k, u64::MAX), "{step}");
            assert_eq!(plain.get(k, 30), indexed.get(k, 30), "{step}");
        }
    };
    let positions = || {
        matches!(
            indexed.map.read().newest,
            Some(point::PointIndex::Positions(_))
        )
    };
    write(200);
    check("log");
    assert_eq!(all(&plain), all(&indexed));
    assert!(positions());
    check("sorted log");
    write(50);
    check("sorted log written again");
    assert_eq!(all(&plain), all(&indexed));
    write(2000);
    assert_eq!(all(&plain), all(&indexed));
    write(10);
    assert!(matches!(indexed.map.read().order, Order::Tree(_)));
    assert!(!positions());
    check("tree");
}

/// With a key filter, gets agree with a memtable without one: present keys (values and
/// tombstones, at every snapshot) are found, absent ones are not, and a filter far too
/// small for its keys (mostly false positives) changes nothing either.
#[test]
fn the_key_filter_never_hides_a_version() {
    for cap in [0u64, 1 << 30] {
        let plain = Memtable::new();
        let filtered = Memtable::with_key_filter(cap);
        for m in [&plain, &filtered] {
            for i in 0..3000u64 {
                let k = format!("k{:06}", i * 7 % 3001);
                let v = (i % 5 != 0).then_some(k.as_bytes());
                m.insert(k.as_bytes(), i + 1, v);
            }
            m.insert_many(
                5000,
                [(&b"batch-a"[..], Some(&b"1"[..])), (&b"batch-b"[..], None)].into_iter(),
            );
        }
        for i in 0..4000u64 {
            let k = format!("k{i:06}");
            for snap in [1, 1500, u64::MAX] {
                assert_eq!(
                    plain.get(k.as_bytes(), snap),
                    filtered.get(k.as_bytes(), snap)
                );
            }
        }
        for k in [&b"batch-a"[..], b"batch-b", b"batch-c"] {
            assert_eq!(plain.get(k, u64::MAX), filtered.get(k, u64::MAX));
        }
        assert_eq!(filtered.get(b"batch-b", u64::MAX), Some((5001, None)));
    }
}

/// A memtable with a point index keeps its versions in a log until it is read in order: a
/// scan sorts the log (dropping a duplicate version), writes after it go to a tree, and at
/// every step the whole order, scans from a position and gets at old snapshots agree with a
/// plain memtable's.
#[test]
fn a_logged_memtable_reads_in_order_before_and_after_it_becomes_a_tree() {
    let plain = Memtable::new();
    let logged = Memtable::for_band(1 << 20, true);
    let check = |step: &str| {
        assert_eq!(all(&plain), all(&logged), "{step}");
        assert_eq!(plain.len(), logged.len(), "{step}");
        for from in [BatchFrom::Start(b"k0100"), BatchFrom::After(b"k0200", 40)] {
            let (mut a, mut b) = (FlatBatch::default(), FlatBatch::default());
            plain.batch_into(from, 7, 1 << 20, &mut a);
            logged.batch_into(from, 7, 1 << 20, &mut b);
            let keys = |f: &FlatBatch| {
                (0..f.len())
                    .map(|i| f.get(i).map(|e| e.to_entry()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(keys(&a), keys(&b), "{step}");
        }
        for i in 0..400u64 {
            let k = format!("k{i:04}");
            for snap in [1, 50, 150, u64::MAX] {
                assert_eq!(
                    plain.get(k.as_bytes(), snap),
                    logged.get(k.as_bytes(), snap),
                    "{step}: {k}@{snap}"
                );
            }
        }
    };
    let write = |lo: u64, hi: u64| {
        for seq in lo..hi {
            let k = format!("k{:04}", seq * 37 % 397);
            let v = (seq % 4 != 0).then(|| seq.to_be_bytes());
            for m in [&plain, &logged] {
                m.insert(k.as_bytes(), seq, v.as_ref().map(|v| &v[..]));
            }
        }
    };
    let is_log = || matches!(logged.map.read().order, Order::Log { .. });
    // Read in order while empty (as the server does when it starts): still a log.
    check("empty");
    write(1, 100);
    // The same version twice (a log replayed over itself) is held once.
    logged.insert(b"k0037", 1, Some(&1u64.to_be_bytes()));
    assert!(matches!(
        logged.map.read().order,
        Order::Log { sorted: false, .. }
    ));
    check("a log");
    assert!(matches!(
        logged.map.read().order,
        Order::Log { sorted: true, .. }
    ));
    // A small log written again stays a log, sorted again when read in order.
    write(100, 200);
    assert!(is_log());
    check("a log sorted twice");
    write(200, 2000);
    check("a long log");
    assert!(is_log());
    // A long log written after a read in order becomes a tree.
    write(2000, 2100);
    assert!(!is_log());
    check("a tree");
}

/// A sorted log's search narrowed by its prefix samples finds the same first version as the
/// tree, for probes before, between, on and after its keys: keys that share their first 24
/// bytes (equal samples across many strides), keys that differ there, several versions each,
/// from a key's start and from just after one of its versions.
#[test]
fn the_sampled_search_of_a_sorted_log_starts_where_the_tree_does() {
    let plain = Memtable::new();
    let logged = Memtable::for_band(1 << 20, true);
    let key = |i: u64| match i % 3 {
        0 => format!("a-shared-prefix-of-24-bytes-{:05}", i * 7 % 1999),
        1 => format!("k{:05}", i * 11 % 1999),
        _ => format!("m{:03}", i % 211),
    };
    for seq in 1..6000u64 {
        let k = key(seq);
        let v = (seq % 5 != 0).then(|| seq.to_be_bytes());
        for m in [&plain, &logged] {
            m.insert(k.as_bytes(), seq, v.as_ref().map(|v| &v[..]));
        }
    }
    let first = |m: &Memtable, from: BatchFrom<'_>| {
        let mut b = FlatBatch::default();
        m.batch_into(from, 3, 1 << 10, &mut b);
        (0..b.len())
            .map(|i| b.get(i).map(|e| e.to_entry()))
            .collect::<Vec<_>>()
    };
    let mut probes: Vec<String> = (0..6000).map(key).collect();
    probes.extend(["", "a", "a-shared-prefix-of-24-bytes-", "k", "m999", "zz"].map(String::from));
    probes.extend((0..400).map(|i| format!("a-shared-prefix-of-24-bytes-{i:05}x")));
    for p in &probes {
        let from = BatchFrom::Start(p.as_bytes());
        assert_eq!(first(&plain, from), first(&logged, from), "{p}");
        for seq in [1, 2999, 5999] {
            let from = BatchFrom::After(p.as_bytes(), seq);
            assert_eq!(first(&plain, from), first(&logged, from), "after {p}@{seq}");
        }
    }
    assert!(matches!(
        logged.map.read().order,
        Order::Log { sorted: true, ref tops, .. } if !tops.is_empty()
    ));
}
