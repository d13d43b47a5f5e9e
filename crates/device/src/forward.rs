//! [`forward!`]: the methods a wrapping device leaves alone, passed to the device it wraps.
//! A wrapper (a test's fault injector, a counting layer, a translation layer) writes only the
//! methods it changes and names the rest:
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use tegula_device::{forward, BlockDevice, Disk, IoDone, Result, WriteFlags};
//!
//! /// Counts the writes that reach `disk`.
//! struct Counting {
//!     disk: Arc<Disk>,
//!     writes: AtomicU64,
//! }
//!
//! impl BlockDevice for Counting {
//!     fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
//!         self.writes.fetch_add(1, Ordering::Relaxed);
//!         self.disk.write_with(lba, data, flags)
//!     }
//!     forward!(disk: info, read, flush, discard, submit, now, idle);
//! }
//! ```

/// Implements the named `BlockDevice` or `ZonedDevice` methods of a wrapper by calling the
/// same method of `self.$inner`: `forward!(inner: info, read, flush)` inside the `impl`.
/// Methods: `info`, `read`, `read_bytes`, `write_with`, `flush`, `discard`, `submit`, `now`, `idle`,
/// `report_zones`, `zone`, `zone_action`, `zone_space`, `can_rewind`, `rewind_write_pointer`,
/// `flush_zones`, `durable_only_when_flushed`, `hint_zone`, `read_beyond_write_pointer`, `host_page_cache`.
#[macro_export]
macro_rules! forward {
    ($inner:ident: $($method:ident),+ $(,)?) => {
        $( $crate::forward!(@one $inner $method); )+
    };
    (@one $inner:ident info) => {
        fn info(&self) -> $crate::DeviceInfo {
            self.$inner.info()
        }
    };
    (@one $inner:ident read) => {
        fn read(&self, lba: u64, buf: &mut [u8]) -> $crate::Result<$crate::IoDone> {
            self.$inner.read(lba, buf)
        }
    };
    (@one $inner:ident read_bytes) => {
        fn read_bytes(&self, offset: u64, buf: &mut [u8]) -> $crate::Result<$crate::IoDone> {
            self.$inner.read_bytes(offset, buf)
        }
    };
    (@one $inner:ident write_with) => {
        fn write_with(
            &self,
            lba: u64,
            data: &[u8],
            flags: $crate::WriteFlags,
        ) -> $crate::Result<$crate::IoDone> {
            self.$inner.write_with(lba, data, flags)
        }
    };
    (@one $inner:ident flush) => {
        fn flush(&self) -> $crate::Result<$crate::IoDone> {
            self.$inner.flush()
        }
    };
    (@one $inner:ident discard) => {
        fn discard(&self, lba: u64, sectors: u64) -> $crate::Result<$crate::IoDone> {
            self.$inner.discard(lba, sectors)
        }
    };
    (@one $inner:ident submit) => {
        fn submit(
            &self,
            reqs: Vec<$crate::Request>,
        ) -> Vec<$crate::Result<$crate::Completion>> {
            self.$inner.submit(reqs)
        }
    };
    (@one $inner:ident now) => {
        fn now(&self) -> $crate::Nanos {
            self.$inner.now()
        }
    };
    (@one $inner:ident idle) => {
        fn idle(&self, d: $crate::Nanos) {
            self.$inner.idle(d)
        }
    };
    (@one $inner:ident report_zones) => {
        fn report_zones(&self, filter: $crate::zone::ZoneFilter) -> Vec<$crate::zone::Zone> {
            self.$inner.report_zones(filter)
        }
    };
    (@one $inner:ident zone) => {
        fn zone(&self, index: u32) -> $crate::Result<$crate::zone::Zone> {
            self.$inner.zone(index)
        }
    };
    (@one $inner:ident zone_action) => {
        fn zone_action(
            &self,
            action: $crate::zone::ZoneAction,
            target: $crate::ZoneTarget,
        ) -> $crate::Result<$crate::IoDone> {
            self.$inner.zone_action(action, target)
        }
    };
    (@one $inner:ident zone_space) => {
        fn zone_space(&self) -> Option<$crate::ZoneSpace> {
            self.$inner.zone_space()
        }
    };
    (@one $inner:ident can_rewind) => {
        fn can_rewind(&self) -> bool {
            self.$inner.can_rewind()
        }
    };
    (@one $inner:ident rewind_write_pointer) => {
        fn rewind_write_pointer(&self, index: u32, lba: u64) -> $crate::Result<$crate::IoDone> {
            self.$inner.rewind_write_pointer(index, lba)
        }
    };
    (@one $inner:ident flush_zones) => {
        fn flush_zones(&self, zones: &[u32]) -> $crate::Result<$crate::IoDone> {
            self.$inner.flush_zones(zones)
        }
    };
    (@one $inner:ident host_page_cache) => {
        fn host_page_cache(&self) -> bool {
            self.$inner.host_page_cache()
        }
    };
    (@one $inner:ident read_beyond_write_pointer) => {
        fn read_beyond_write_pointer(
            &self,
            lba: u64,
            buf: &mut [u8],
        ) -> $crate::Result<Option<$crate::IoDone>> {
            self.$inner.read_beyond_write_pointer(lba, buf)
        }
    };
    (@one $inner:ident durable_only_when_flushed) => {
        fn durable_only_when_flushed(&self) -> bool {
            self.$inner.durable_only_when_flushed()
        }
    };
    (@one $inner:ident hint_zone) => {
        fn hint_zone(&self, index: u32, hint: $crate::ZoneHint) {
            self.$inner.hint_zone(index, hint)
        }
    };
}
