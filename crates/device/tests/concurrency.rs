//! One drive shared by several threads: commands are serialized as on one actuator, and every
//! thread's data and write pointers come out right.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use std::sync::Arc;
use tegula_device::{BlockDevice, Request, ZoneFilter, ZonedDevice};

#[test]
fn threads_writing_their_own_zones_and_reading_concurrently_see_their_data() {
    let d = Arc::new(tiny_hm(32, 16));
    let threads = 6u32;
    let per_zone_writes = 40u64;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                let z = 2 + t;
                let start = d.zone(z).unwrap().start_lba;
                let mut wp = start;
                for i in 0..per_zone_writes {
                    let n = 1 + (i + t as u64) % 5;
                    if i % 7 == 3 {
                        // A queued pair, to mix batched commands in.
                        let reqs = vec![
                            Request::Write {
                                lba: wp,
                                data: pattern(wp, 1, t),
                                fua: false,
                            },
                            Request::Write {
                                lba: wp + 1,
                                data: pattern(wp + 1, n, t),
                                fua: i % 2 == 0,
                            },
                        ];
                        for r in d.submit(reqs) {
                            r.unwrap();
                        }
                        wp += 1 + n;
                    } else {
                        let (lba, _) = d.append(z, &pattern(wp, n, t)).unwrap();
                        assert_eq!(lba, wp);
                        wp += n;
                    }
                    // Read back everything written so far in this zone.
                    let mut buf = vec![0u8; (wp - start) as usize * SS];
                    d.read(start, &mut buf).unwrap();
                    for (k, s) in buf.chunks(SS).enumerate() {
                        assert_eq!(tag_of(start + k as u64, s), Some(t));
                    }
                    // And someone else's conventional sectors.
                    let mut c = vec![0u8; SS];
                    d.read(t as u64, &mut c).unwrap();
                    if i % 10 == 0 {
                        d.flush().unwrap();
                    }
                }
                wp
            })
        })
        .collect();
    let wps: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    d.flush().unwrap();
    for (t, wp) in wps.into_iter().enumerate() {
        let z = d.zone(2 + t as u32).unwrap();
        assert_eq!(z.write_pointer_lba, wp);
        let mut buf = vec![0u8; (wp - z.start_lba) as usize * SS];
        d.read(z.start_lba, &mut buf).unwrap();
        for (k, s) in buf.chunks(SS).enumerate() {
            assert_eq!(tag_of(z.start_lba + k as u64, s), Some(t as u32));
        }
    }
    assert_eq!(d.report_zones(ZoneFilter::Open).len(), threads as usize);
    let s = d.stats();
    assert!(s.writes >= threads as u64 * per_zone_writes);
    assert_eq!(d.with_media(|m| m.dirty_sectors()), 0);
    assert_eq!(s.bytes_written, s.zone_bytes_written.iter().sum::<u64>());
}
