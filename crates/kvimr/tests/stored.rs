//! What a store keeps for the next open: the options it was formatted with (superblock
//! version 2), and its counters over its life (map version 2), so that a store reopened
//! without being told its options runs as formatted and its statistics go on counting.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use std::sync::Arc;
use tegula_device::BlockDevice;
use tegula_kvimr::{NewFile, Options, Policy, RmwMode, Store, ZonedAdapter, ZonedOptions};

fn odd_options() -> Options {
    Options {
        policy: Policy::ThreePhase,
        rmw: RmwMode::Naive,
        hot_levels: 3,
        bottom_share: 0.25,
        cold_runs: false,
        unsafe_skip_bottom_sync: false,
    }
}

#[test]
fn a_reopened_store_runs_with_the_options_it_was_formatted_with() {
    let d = disk(config(16, 8 << 10, true));
    let s = format(&d, small_format(16, 1 << 20), odd_options());
    assert_eq!(s.options(), odd_options());
    drop(s);
    let dev: Arc<dyn BlockDevice> = d.clone();
    let s = Store::open_stored(dev.clone(), &tracks(&d)).unwrap();
    assert_eq!(s.options(), odd_options());
    let sb = Store::superblock(&*dev, &tracks(&d)).unwrap().unwrap();
    assert_eq!(sb.options, Some(odd_options()));
    // Options given to `open` win over the stored ones.
    drop(s);
    let s = Store::open(dev, &tracks(&d), Options::default()).unwrap();
    assert_eq!(s.options(), Options::default());
}

#[test]
fn the_unsafe_flag_is_never_stored() {
    let d = disk(config(16, 8 << 10, true));
    let unsafe_opts = Options {
        unsafe_skip_bottom_sync: true,
        ..Options::default()
    };
    drop(format(&d, small_format(16, 1 << 20), unsafe_opts));
    let dev: Arc<dyn BlockDevice> = d.clone();
    let s = Store::open_stored(dev, &tracks(&d)).unwrap();
    assert!(!s.options().unsafe_skip_bottom_sync);
}

#[test]
fn lifetime_counters_survive_a_reopen_and_a_checkpoint_saves_the_last_ones() {
    let d = disk(config(16, 8 << 10, true));
    let s = format(&d, small_format(16, 1 << 20), Options::default());
    let a = content(1, (40 * SS) as usize);
    put(&s, 0, Some(3), &a);
    s.sync().unwrap();
    // A sync after which the map does not change: its flush is counted in memory only.
    s.sync().unwrap();
    let before = s.lifetime_stats();
    assert_eq!(before, s.stats(), "a new store's life is this open");
    assert!(before.syncs > 0 && before.bytes_appended == 40 * SS);
    s.checkpoint().unwrap();
    let saved = s.lifetime_stats();
    // Nothing changed since: no copy is written.
    s.checkpoint().unwrap();
    assert_eq!(s.lifetime_stats(), saved);
    drop(s);
    let s = reopen(&d, Options::default());
    assert_eq!(s.stats().syncs, 0);
    assert_eq!(
        s.lifetime_stats(),
        saved,
        "the checkpoint recorded every counter"
    );
    // This open's counters add to them.
    put(&s, 1, Some(3), &a);
    s.sync().unwrap();
    let now = s.lifetime_stats();
    assert_eq!(now.bytes_appended, 80 * SS);
    assert_eq!(now.files_created, saved.files_created + 1);
    assert_eq!(now.levels["L3"].files, 2);
}

#[test]
fn the_zoned_view_reopens_without_options_and_records_its_counters_when_dropped() {
    let d = disk(config(64, 128 << 10, true));
    let dev: Arc<dyn BlockDevice> = d.clone();
    let zo = ZonedOptions {
        zone_bytes: 1 << 20,
        conventional_zones: 2,
        log_zones: 3,
        staging_bytes: 4 << 20,
    };
    let a = ZonedAdapter::format(dev.clone(), &tracks(&d), zo, odd_options()).unwrap();
    assert_eq!(a.zoned_options(), zo);
    assert_eq!(ZonedOptions::of_format(&zo.format()), Some(zo));
    assert_eq!(
        ZonedOptions::of_format(&tegula_kvimr::FormatOptions::default()),
        None
    );
    let f = a
        .store()
        .create(5, NewFile::Data { level: Some(2) })
        .unwrap();
    a.store().append(f, &content(2, 4096)).unwrap();
    a.store().sync().unwrap();
    a.store().sync().unwrap();
    let life = a.store().lifetime_stats();
    drop(a);
    let a = ZonedAdapter::open_stored(dev, &tracks(&d)).unwrap();
    assert_eq!(a.store().options(), odd_options());
    assert_eq!(a.zoned_options(), zo);
    assert_eq!(
        a.store().lifetime_stats().syncs,
        life.syncs + 1,
        "and the copy's own"
    );
}
