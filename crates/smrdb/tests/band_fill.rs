//! One memtable flush fills one band: with 4 KiB values and 16-byte keys (one data block, so
//! one index entry, per value) the default memtable size left too little room for the band's
//! index, every flush spilled a few entries into a second band, and L0 grew twice as fast
//! (paper figure 9's SOC device time went from 26 to 40 s).

mod common;

use common::{format, Rng};
use std::sync::Arc;
use tegula_device::{profile, Disk};
use tegula_smrdb::{Db, Mode, Options};

#[test]
fn each_flush_of_4_kib_values_writes_one_band() {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.zones.zone_size = 4 << 20;
    cfg.capacity = 256 << 20;
    let disk = Arc::new(Disk::in_memory(cfg).unwrap());
    let opts = Options {
        background_compaction: false,
        l0_compaction_trigger: 1000,
        l0_slowdown: 1000,
        l0_stop: 1000,
        ..Options::default()
    };
    let db = Db::create(disk, format(Mode::Soc), opts).unwrap();
    let mut rng = Rng(7);
    let value = vec![0x5au8; 4096];
    // About five bands of data, in random key order.
    for _ in 0..5 * 1000 {
        let k = format!("{:016}", rng.below(1 << 40));
        db.put(k.as_bytes(), &value).unwrap();
    }
    let s = db.stats();
    assert!(s.flushes >= 4, "{} flushes", s.flushes);
    assert_eq!(s.compactions, 0, "nothing compacted");
    assert_eq!(
        s.bands_per_level[0] as u64, s.flushes,
        "L0 holds {} bands after {} flushes: a flush spilled into a second band",
        s.bands_per_level[0], s.flushes
    );
}
