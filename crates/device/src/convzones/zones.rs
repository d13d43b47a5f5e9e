//! The zones as presented: writes and reads of the virtual conventional zones, their zone
//! reports, and the passed-through sequential zones renumbered after them.

use super::*;

impl ConvZones {
    /// Writes whole sectors at virtual sector `vlba` of the conventional area.
    pub(super) fn write_conv(&self, vlba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let mut st = self.st.lock();
        let ss = self.ss();
        let mut done: Option<IoDone> = None;
        if !st.torn.is_empty() {
            if st.head.is_none() {
                self.ensure_head(&mut st)?;
            }
            while !st.torn.is_empty() {
                self.clean_one(&mut st)?;
            }
        }
        let mut off = 0;
        while off < data.len() {
            self.ensure_head(&mut st)?;
            let head = st.head.ok_or_else(|| corrupt(0, "no head zone"))?;
            let room = self.inner.zone(head)?.remaining_sectors() - 1;
            let n = ((data.len() - off) / ss)
                .min(room as usize)
                .min(MAX_RECORD_SECTORS as usize);
            let v = vlba + (off / ss) as u64;
            let d = self.append(&mut st, v, &data[off..off + n * ss], flags)?;
            done = Some(match done {
                None => d,
                Some(p) => IoDone {
                    start: p.start,
                    end: d.end,
                },
            });
            off += n * ss;
        }
        done.ok_or(DeviceError::BadLength {
            len: 0,
            sector_size: self.layout.sector_size,
        })
    }

    /// Reads whole sectors at virtual sector `vlba` of the conventional area.
    pub(super) fn read_conv(&self, vlba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let st = self.st.lock();
        let ss = self.ss();
        let n = buf.len() / ss;
        let now = self.inner.now();
        let mut done = IoDone {
            start: now,
            end: now,
        };
        let mut i = 0;
        while i < n {
            let p0 = st.map[vlba as usize + i];
            let mut k = 1;
            while i + k < n
                && ((p0 == NONE && st.map[vlba as usize + i + k] == NONE)
                    || (p0 != NONE && st.map[vlba as usize + i + k] == p0 + k as u64))
            {
                k += 1;
            }
            let out = &mut buf[i * ss..(i + k) * ss];
            if p0 == NONE {
                out.fill(0);
            } else {
                let d = self.inner.read(p0, out)?;
                done.end = done.end.max(d.end);
            }
            i += k;
        }
        Ok(done)
    }

    /// The virtual zone `v` of the conventional area.
    pub(super) fn conv_zone(&self, v: u32) -> Zone {
        let zs = self.layout.zone_sectors;
        let start = u64::from(v) * zs;
        Zone {
            index: v,
            zone_type: ZoneType::Conventional,
            condition: ZoneCondition::NotWritePointer,
            start_lba: start,
            len_lba: zs,
            capacity_lba: zs,
            write_pointer_lba: start + zs,
            non_seq: false,
        }
    }

    /// A device zone past the log as the virtual zone it is.
    pub(super) fn to_virtual(&self, mut z: Zone) -> Zone {
        let d = self.delta();
        z.index = z.index - self.layout.log_zones + self.layout.conv_zones;
        z.start_lba -= d;
        z.write_pointer_lba -= d;
        z
    }

    /// Applies this device's open and active limits (the device's less the log's head) before
    /// inner zone `i` is opened, implicitly by a write or explicitly: the device's own limits
    /// would let the host use the log's resource.
    pub(super) fn make_room(&self, i: u32) -> Result<()> {
        let z = self.inner.zone(i)?;
        if z.condition.is_open() || !z.zone_type.is_sequential() {
            return Ok(());
        }
        let (max_open, max_active) = (self.info.max_open_zones, self.info.max_active_zones);
        if max_open == 0 && max_active == 0 {
            return Ok(());
        }
        let k = self.layout.log_zones;
        let zones: Vec<Zone> = self
            .inner
            .report_zones(ZoneFilter::All)
            .into_iter()
            .filter(|z| z.index >= k)
            .collect();
        let vzone = i - k + self.layout.conv_zones;
        let active = zones.iter().filter(|z| z.is_active()).count() as u32;
        if z.condition == ZoneCondition::Empty && max_active > 0 && active >= max_active {
            return Err(DeviceError::TooManyActiveZones {
                zone: vzone,
                active,
                max_active,
            });
        }
        let open = zones.iter().filter(|z| z.condition.is_open()).count() as u32;
        if max_open > 0 && open >= max_open {
            match zones
                .iter()
                .find(|z| z.condition == ZoneCondition::ImplicitOpen)
            {
                Some(victim) => {
                    self.inner.close_zone(victim.index)?;
                }
                None => {
                    return Err(DeviceError::TooManyOpenZones {
                        zone: vzone,
                        open,
                        max_open,
                    })
                }
            }
        }
        Ok(())
    }

    /// The device zone of virtual sequential zone `v`.
    pub(super) fn inner_zone(&self, v: u32) -> Result<u32> {
        if v >= self.info.zones {
            return Err(DeviceError::NoSuchZone {
                zone: u64::from(v),
                zones: self.info.zones,
            });
        }
        Ok(v - self.layout.conv_zones + self.layout.log_zones)
    }

    /// Maps an error of the device about its zone/LBA back to virtual numbers.
    pub(super) fn virtual_err(&self, e: DeviceError) -> DeviceError {
        let k = self.layout.log_zones;
        let c = self.layout.conv_zones;
        let d = self.delta();
        let z = |i: u32| i.saturating_sub(k) + c;
        match e {
            DeviceError::UnalignedWrite {
                zone,
                write_pointer,
                lba,
            } => DeviceError::UnalignedWrite {
                zone: z(zone),
                write_pointer: write_pointer - d,
                lba: lba - d,
            },
            DeviceError::ZoneBoundary {
                zone,
                lba,
                sectors,
                zone_end,
                write_pointer,
            } => DeviceError::ZoneBoundary {
                zone: z(zone),
                lba: lba - d,
                sectors,
                zone_end: zone_end - d,
                write_pointer: write_pointer - d,
            },
            DeviceError::ZoneFull {
                zone,
                write_pointer,
                lba,
            } => DeviceError::ZoneFull {
                zone: z(zone),
                write_pointer: write_pointer - d,
                lba: lba - d,
            },
            DeviceError::ReadPastWritePointer {
                zone,
                write_pointer,
                lba,
                sectors,
            } => DeviceError::ReadPastWritePointer {
                zone: z(zone),
                write_pointer: write_pointer - d,
                lba: lba - d,
                sectors,
            },
            DeviceError::ZoneReadOnly { zone } => DeviceError::ZoneReadOnly { zone: z(zone) },
            DeviceError::ZoneOffline { zone } => DeviceError::ZoneOffline { zone: z(zone) },
            DeviceError::TooManyOpenZones {
                zone,
                open,
                max_open,
            } => DeviceError::TooManyOpenZones {
                zone: z(zone),
                open: open.saturating_sub(1),
                max_open: max_open.saturating_sub(1),
            },
            DeviceError::TooManyActiveZones {
                zone,
                active,
                max_active,
            } => DeviceError::TooManyActiveZones {
                zone: z(zone),
                active: active.saturating_sub(1),
                max_active: max_active.saturating_sub(1),
            },
            DeviceError::InvalidZoneOp {
                zone,
                op,
                condition,
            } => DeviceError::InvalidZoneOp {
                zone: z(zone),
                op,
                condition,
            },
            DeviceError::OutOfRange { lba, sectors, .. } => DeviceError::OutOfRange {
                lba: lba.saturating_sub(d),
                sectors,
                capacity: self.info.capacity_sectors,
            },
            other => other,
        }
    }
}
