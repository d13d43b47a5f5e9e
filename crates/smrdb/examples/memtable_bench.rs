//! The memtable's cost per operation in isolation: inserts and point gets of redis-benchmark's
//! keys as the RESP server stores them (`'k'` + `key:` + 12 digits, 17 bytes; 102-byte values),
//! drawn uniformly from a million, into a memtable of N versions. Prints nanoseconds of
//! thread CPU time per operation.
//!
//! `cargo run --release -p tegula-smrdb --example memtable_bench -- [n]`
#![allow(clippy::unwrap_used)] // a measurement tool: fail loudly

use tegula_smrdb::memtable::Memtable;

fn cpu_ns() -> u128 {
    // Thread CPU time: not disturbed by other processes' load as wall time is.
    let mut ts = libc_timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(3, &mut ts) }; // CLOCK_THREAD_CPUTIME_ID
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

#[repr(C)]
struct libc_timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
extern "C" {
    fn clock_gettime(clk: i32, ts: *mut libc_timespec) -> i32;
}

fn main() {
    let n: u64 = std::env::args().nth(1).map_or(1_000_000, |s| s.parse().unwrap());
    let mut x = 88172645463325252u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % 1_000_000
    };
    let keys: Vec<Vec<u8>> = (0..n).map(|_| format!("{}key:{:012}", std::env::var("KP").unwrap_or_default(), rnd()).into_bytes()).collect();
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
