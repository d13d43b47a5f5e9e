//! The log of writes to the virtual conventional area: replay at open, appending a record at
//! the head, moving the head to an empty log zone, and cleaning the log zone with the least
//! live data.

use super::*;

impl ConvZones {
    /// Rebuilds the map from the records of every log zone.
    pub(super) fn replay(&self) -> Result<()> {
        let mut st = self.st.lock();
        let mut newest: Option<(u64, u32)> = None;
        for z in 0..self.layout.log_zones {
            let zone = self.inner.zone(z)?;
            if zone.condition == ZoneCondition::Empty {
                continue;
            }
            if !zone.zone_type.is_sequential()
                || matches!(
                    zone.condition,
                    ZoneCondition::ReadOnly | ZoneCondition::Offline
                )
            {
                return Err(corrupt(
                    zone.start_lba,
                    format!(
                        "log zone {z} is {} {}",
                        zone.zone_type.name(),
                        zone.condition
                    ),
                ));
            }
            let end = zone.start_lba + zone.written_sectors();
            let mut pos = zone.start_lba;
            while pos < end {
                let mut hb = vec![0u8; self.ss()];
                self.inner.read(pos, &mut hb)?;
                let h = Header::decode(&hb).map_err(|why| {
                    undecodable(
                        pos,
                        &format!("a header below the write pointer ({end}) does not decode"),
                        why,
                    )
                })?;
                record::check(&h, &self.layout, self.conv_sectors, pos)?;
                let data_end = pos + 1 + u64::from(h.count);
                if data_end > end {
                    // Torn: its write never completed.
                    st.torn.push(z);
                    break;
                }
                for i in 0..u64::from(h.count) {
                    let v = (h.vlba + i) as usize;
                    if h.seq > st.map_seq[v] {
                        st.map_seq[v] = h.seq;
                        st.map[v] = pos + 1 + i;
                    }
                }
                st.seq = st.seq.max(h.seq + 1);
                if newest.is_none_or(|(s, _)| h.seq > s) {
                    newest = Some((h.seq, z));
                }
                pos = data_end;
            }
        }
        let mut live = vec![0u64; self.layout.log_zones as usize];
        for &p in st.map.iter().filter(|&&p| p != NONE) {
            live[self.log_zone_of(p)] += 1;
        }
        st.live = live;
        // Appends continue in the zone of the newest record, if it has room and is whole.
        if let Some((_, z)) = newest {
            let zone = self.inner.zone(z)?;
            if zone.remaining_sectors() >= 2 && !st.torn.contains(&z) {
                st.head = Some(z);
            }
        }
        Ok(())
    }

    /// Appends one record of `data` (whole sectors) for virtual sector `vlba` at the head,
    /// which has room for it.
    pub(super) fn append(
        &self,
        st: &mut State,
        vlba: u64,
        data: &[u8],
        flags: WriteFlags,
    ) -> Result<IoDone> {
        let head = st
            .head
            .ok_or_else(|| corrupt(0, "no head zone to append to"))?;
        let zone = self.inner.zone(head)?;
        let at = zone.write_pointer_lba;
        let count = (data.len() / self.ss()) as u32;
        let h = Header {
            kind: record::KIND_WRITE,
            seq: st.seq,
            layout: self.layout,
            vlba,
            count,
            data_crc: tegula_codec::checksum::crc32c(data),
        };
        let mut buf = h.encode();
        buf.extend_from_slice(data);
        let done = self.inner.write_with(at, &buf, flags)?;
        st.seq += 1;
        for i in 0..u64::from(count) {
            let v = (vlba + i) as usize;
            let old = st.map[v];
            if old != NONE {
                let oz = self.log_zone_of(old);
                st.live[oz] = st.live[oz].saturating_sub(1);
            }
            st.map[v] = at + 1 + i;
            st.map_seq[v] = h.seq;
            st.live[head as usize] += 1;
        }
        Ok(done)
    }

    pub(super) fn empty_log_zones(&self, st: &State) -> Result<Vec<u32>> {
        let mut v = Vec::new();
        for z in 0..self.layout.log_zones {
            if Some(z) != st.head && self.inner.zone(z)?.condition == ZoneCondition::Empty {
                v.push(z);
            }
        }
        Ok(v)
    }

    /// Makes sure the head has room for a record of at least one data sector, moving to an
    /// empty log zone (and cleaning one when it is the last) as needed.
    pub(super) fn ensure_head(&self, st: &mut State) -> Result<()> {
        if let Some(h) = st.head {
            let z = self.inner.zone(h)?;
            if z.remaining_sectors() >= 2 {
                return Ok(());
            }
            if z.remaining_sectors() == 1 {
                // Too little room for a record: a pad header fills it (the zone becomes full
                // and frees its active resource; a finish would leave a sector unwritten below
                // the write pointer, which reads as a damaged header).
                let pad = Header {
                    kind: record::KIND_PAD,
                    seq: st.seq,
                    layout: self.layout,
                    vlba: 0,
                    count: 0,
                    data_crc: 0,
                };
                self.inner.write(z.write_pointer_lba, &pad.encode())?;
                st.seq += 1;
            }
            st.head = None;
        }
        let empty = self.empty_log_zones(st)?;
        let Some(&next) = empty.first() else {
            return Err(DeviceError::NoSpace(
                "the conventional-zone log has no empty zone left".into(),
            ));
        };
        st.head = Some(next);
        if empty.len() == 1 {
            // The last empty zone became the head: clean one zone into it.
            self.clean_one(st)?;
        }
        Ok(())
    }

    /// Cleans the log zone with the least live data (torn zones first): copies its live
    /// sectors to the head and resets it.
    pub(super) fn clean_one(&self, st: &mut State) -> Result<()> {
        let victim = if let Some(t) = st.torn.first().copied() {
            t
        } else {
            let mut best: Option<(u64, u32)> = None;
            for z in 0..self.layout.log_zones {
                if Some(z) == st.head || self.inner.zone(z)?.condition == ZoneCondition::Empty {
                    continue;
                }
                let l = st.live[z as usize];
                if best.is_none_or(|(b, _)| l < b) {
                    best = Some((l, z));
                }
            }
            match best {
                Some((_, z)) => z,
                None => return Ok(()),
            }
        };
        self.copy_out(st, victim)?;
        self.inner.reset_zone(victim)?;
        st.torn.retain(|&t| t != victim);
        st.live[victim as usize] = 0;
        Ok(())
    }

    /// Copies the live sectors of log zone `victim` to the head, as runs of consecutive
    /// virtual sectors whose copies are consecutive.
    pub(super) fn copy_out(&self, st: &mut State, victim: u32) -> Result<()> {
        let zs = self.layout.zone_sectors;
        let lo = u64::from(victim) * zs;
        let mut live: Vec<(u64, u64)> = st
            .map
            .iter()
            .enumerate()
            .filter(|(_, &p)| p != NONE && p >= lo && p < lo + zs)
            .map(|(v, &p)| (v as u64, p))
            .collect();
        live.sort_unstable();
        let mut i = 0;
        while i < live.len() {
            let (v0, p0) = live[i];
            let mut n = 1;
            while i + (n as usize) < live.len()
                && n < MAX_RECORD_SECTORS
                && live[i + n as usize] == (v0 + n, p0 + n)
            {
                n += 1;
            }
            let head = st
                .head
                .ok_or_else(|| corrupt(lo, "no head zone to clean into"))?;
            let room = self.inner.zone(head)?.remaining_sectors().saturating_sub(1);
            if room == 0 {
                return Err(DeviceError::NoSpace(
                    "the conventional-zone log's head filled while cleaning".into(),
                ));
            }
            let n = n.min(room);
            let mut data = vec![0u8; n as usize * self.ss()];
            self.inner.read(p0, &mut data)?;
            self.append(st, v0, &data, WriteFlags::default())?;
            i += n as usize;
        }
        Ok(())
    }
}
