//! The memtable's cost per operation in isolation: inserts and point gets of redis-benchmark's
//! keys (`key:` + 12 digits, 16 bytes; 102-byte values, the size of the server's record),
//! drawn uniformly from a million, into a memtable of N versions. Prints nanoseconds of
//! thread CPU time per operation. `KP=k` prefixes the keys with the server's `'k'` byte, as
//! the server stores them (17 bytes: one past the memtable's 16 inline key bytes).
//!
//! `KP=k cargo run --release -p tegula-smrdb --example memtable_bench -- [n]`
#![allow(clippy::unwrap_used)] // a measurement tool: fail loudly

use tegula_smrdb::memtable::Memtable;

/// This thread's CPU time in nanoseconds (`/proc/thread-self/schedstat`, Linux): not
/// disturbed by other processes' load as wall time is (their cache pressure still counts).
fn cpu_ns() -> u128 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|t| t.parse().ok()))
        .unwrap_or(0)
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(1_000_000, |s| s.parse().unwrap());
    let mut x = 88172645463325252u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % 1_000_000
    };
    let keys: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            format!(
                "{}key:{:012}",
                std::env::var("KP").unwrap_or_default(),
                rnd()
            )
            .into_bytes()
        })
        .collect();
    let val = vec![b'x'; 102];
    let m = Memtable::new();
    let t0 = cpu_ns();
    for (i, k) in keys.iter().enumerate() {
        m.insert(k, i as u64 + 1, Some(&val));
    }
    let ins = cpu_ns() - t0;
    let t0 = cpu_ns();
    let mut hits = 0;
    for k in keys.iter().rev() {
        hits += usize::from(m.get(k, u64::MAX).is_some());
    }
    let get = cpu_ns() - t0;
    println!(
        "memtable of {n} versions: insert {:.0} ns/op, get {:.0} ns/op ({hits} hits)",
        ins as f64 / n as f64,
        get as f64 / n as f64
    );
}
