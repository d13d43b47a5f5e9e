//! File data: reads through the extent map, the data in flight and the write buffer;
//! buffered writes; and writing buffered data as ZEA extents.
//!
//! Buffered data is written by a *flush job*: [`Fs::take_flush`] moves a file's buffer into
//! the job (reads still see it, as data in flight), and the job is written chunk by chunk:
//! [`Fs::flush_begin`] picks a zone and holds it for the chunk, [`Pool::put`] writes the
//! extent (the only slow part, which a mount runs without the file system's lock), and
//! [`Fs::flush_end`] maps what was written. [`Fs::flush_file`] runs a job in place; a mount
//! with a writer thread ([`crate::FsOptions::write_behind`]) queues jobs to it instead, which
//! is ShingledFS's asynchronous close (§5.3.2): `release` returns at once, and only an
//! `fsync` of the same file waits for the file's jobs.

use crate::error::{FsError, Result};
use crate::fs::zones::Stream;
use crate::fs::{now_ns, Fs, OpenFile};
use crate::pool::Pool;
use crate::state::{Kind, Op, Piece};
use std::sync::Arc;

/// A file's buffered data taken out of its write buffer to be written as extents.
#[derive(Debug)]
pub struct FlushJob {
    /// The file.
    pub ino: u64,
    /// Segments (file offset, bytes), in offset order; shared with the file's data in
    /// flight, which reads see until the job ends.
    segs: Vec<(u64, Arc<Vec<u8>>)>,
    /// Next segment to write.
    seg: usize,
    /// Bytes of that segment already written.
    done: usize,
    /// Bytes not yet written (counted in the file system's dirty bytes until written).
    total: usize,
}

impl FlushJob {
    /// Whether every byte was written.
    pub fn is_done(&self) -> bool {
        self.seg >= self.segs.len()
    }

    /// Bytes not yet written.
    pub fn remaining(&self) -> u64 {
        self.segs
            .iter()
            .skip(self.seg)
            .map(|(_, d)| d.len() as u64)
            .sum::<u64>()
            - self.done as u64
    }

    /// The next chunk: file offset and bytes (at most `max` of them).
    fn next_chunk(&self, max: u64) -> Option<(u64, &[u8])> {
        let (off, d) = self.segs.get(self.seg)?;
        let rest = &d[self.done..];
        let n = rest.len().min(max as usize);
        Some((off + self.done as u64, &rest[..n]))
    }

    fn advance(&mut self, n: usize) {
        self.done += n;
        if let Some((_, d)) = self.segs.get(self.seg) {
            if self.done >= d.len() {
                self.seg += 1;
                self.done = 0;
            }
        }
    }
}

/// Where one chunk of a flush job goes: a zone held for it, and how many bytes fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkTarget {
    /// The zone (held until [`Fs::flush_end`]).
    pub zone: u32,
    /// File offset of the chunk.
    pub off: u64,
    /// Bytes of the chunk.
    pub len: u64,
    stream: Stream,
}

impl ChunkTarget {
    /// Writes the chunk of `job` to its zone (no file-system lock needed).
    pub fn write(&self, pool: &Pool, job: &FlushJob) -> Result<Piece> {
        let data = job
            .next_chunk(self.len)
            .map(|(_, d)| d)
            .filter(|d| d.len() as u64 == self.len)
            .ok_or_else(|| FsError::Invalid("flush chunk out of step with its job".into()))?;
        let placed = pool.put(self.zone, self.off, job.ino, data)?;
        Ok(Piece {
            len: self.len,
            zone: self.zone,
            ext_lba: placed.lba,
            ext_len: self.len,
            ext_off: 0,
        })
    }
}

impl Fs {
    fn file(&self, ino: u64) -> Result<()> {
        match self.state.get(ino) {
            None => Err(FsError::NotFound),
            Some(n) if n.kind == Kind::Dir => Err(FsError::IsDir),
            Some(n) if n.kind != Kind::File => Err(FsError::Invalid("not a regular file".into())),
            Some(_) => Ok(()),
        }
    }

    /// The pool of zones (for writers and readers working outside the file system's lock).
    pub fn pool(&self) -> Arc<Pool> {
        self.pool.clone()
    }

    /// Reads up to `len` bytes at `off` (fewer at the end of the file).
    pub fn read(&self, ino: u64, off: u64, len: usize) -> Result<Vec<u8>> {
        self.file(ino)?;
        let size = self.cur_size(ino);
        if off >= size || len == 0 {
            return Ok(Vec::new());
        }
        let end = size.min(off + len as u64);
        let mut out = vec![0u8; (end - off) as usize];
        let pieces: Vec<(u64, Piece)> = {
            let map = &self.state.get(ino).ok_or(FsError::NotFound)?.map;
            let first = map.range(..=off).next_back().map_or(off, |(&s, _)| s);
            map.range(first..end).map(|(&s, &p)| (s, p)).collect()
        };
        for (s, p) in pieces {
            let a = s.max(off);
            let b = (s + p.len).min(end);
            if a >= b {
                continue;
            }
            let data = self.pool.read(&p, a - s, b - a)?;
            out[(a - off) as usize..(b - off) as usize].copy_from_slice(&data);
        }
        if let Some(f) = self.files.get(&ino) {
            f.inflight.overlay(off, &mut out);
            f.buf.overlay(off, &mut out);
        }
        Ok(out)
    }

    /// Buffers a write at `off` (at the end of the file when `append`); returns the offset
    /// written at. Full buffers are written out as extents (or queued for the writer). A
    /// write refused because the drive cannot hold it changes nothing; one whose buffer
    /// could then not be written out (no zone with room, nothing to clean) returns `NoSpace`
    /// with part of its data possibly stored, as a short write would.
    pub fn write(&mut self, ino: u64, off: u64, data: &[u8], append: bool) -> Result<u64> {
        self.writable()?;
        self.file(ino)?;
        if data.is_empty() {
            return Ok(off);
        }
        let free = self.free_estimate();
        if data.len() as u64 > free {
            self.out_of_space.insert(ino);
            return Err(FsError::NoSpace(format!(
                "{free} bytes free for {} bytes",
                data.len()
            )));
        }
        let size = self.state.get(ino).map_or(0, |n| n.size);
        let f = self.files.entry(ino).or_insert_with(|| OpenFile {
            size,
            ..OpenFile::default()
        });
        let off = if append { f.size } else { off };
        f.write_mtime = Some(now_ns());
        let before = f.buf.bytes();
        f.buf.write_from(off, data, &mut self.spares);
        f.size = f.size.max(off + data.len() as u64);
        let after = f.buf.bytes();
        self.dirty = self.dirty + after - before;
        if after >= self.opts.buffer_bytes {
            self.flush_or_queue(ino)?;
        }
        if self.dirty > self.opts.dirty_limit {
            let biggest = self
                .files
                .iter()
                .filter(|(_, f)| f.buf.bytes() > 0)
                .max_by_key(|(_, f)| f.buf.bytes())
                .map(|(&i, _)| i);
            if let Some(i) = biggest {
                self.flush_or_queue(i)?;
            }
        }
        self.maybe_commit()?;
        Ok(off)
    }

    /// Writes a file's buffer now, or queues it for the writer thread.
    pub(crate) fn flush_or_queue(&mut self, ino: u64) -> Result<()> {
        if self.opts.write_behind {
            if !self.flush_queue.contains(&ino) {
                self.flush_queue.push(ino);
            }
            Ok(())
        } else {
            self.flush_file(ino)
        }
    }

    /// Files whose buffers the writer thread should write (write-behind mode), oldest first.
    pub fn take_flush_queue(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.flush_queue)
    }

    /// Bytes buffered or in flight.
    pub fn dirty_bytes(&self) -> usize {
        self.dirty
    }

    /// Moves a file's buffered data into a flush job; `None` when nothing is buffered. Reads
    /// see the data as in flight until [`Fs::flush_finish`].
    pub fn take_flush(&mut self, ino: u64) -> Option<FlushJob> {
        let f = self.files.get_mut(&ino)?;
        let mut segs = Vec::new();
        while let Some((off, data)) = f.buf.pop_first() {
            let data = Arc::new(data);
            f.inflight.push(off, data.clone());
            segs.push((off, data));
        }
        if segs.is_empty() {
            return None;
        }
        f.jobs += 1;
        let total = segs.iter().map(|(_, d)| d.len()).sum();
        Some(FlushJob {
            ino,
            segs,
            seg: 0,
            done: 0,
            total,
        })
    }

    /// Picks the zone for the next chunk of `job` and holds it; `None` when the job is done.
    pub fn flush_begin(&mut self, job: &FlushJob) -> Result<Option<ChunkTarget>> {
        self.writable()?;
        let Some((off, data)) = job.next_chunk(self.opts.max_extent) else {
            return Ok(None);
        };
        // A file deleted while its data waited (no name, no handle): nothing can read the rest,
        // so it is not written. (A writer waiting for room for it would wait for the space the
        // file itself holds.)
        let named = self.state.get(job.ino).is_some_and(|n| n.nlink > 0);
        let open = self.files.get(&job.ino).is_some_and(|f| f.opens > 0);
        if !named && !open {
            return Ok(None);
        }
        let stream = self.stream_of(job.ino, false);
        let zone = self.zone_for_new_data(stream, data.len() as u64)?;
        let len = (data.len() as u64).min(self.pool.max_put(zone));
        if len == 0 {
            return Err(FsError::NoSpace(format!("zone {zone} has no room")));
        }
        self.leased.insert(zone);
        Ok(Some(ChunkTarget {
            zone,
            off,
            len,
            stream,
        }))
    }

    /// Maps a chunk written by [`ChunkTarget::write`] (or, on failure, releases its zone and
    /// leaves the job where it was). Bytes at or past a size the file was truncated to while
    /// the chunk was in flight are not mapped.
    pub fn flush_end(
        &mut self,
        job: &mut FlushJob,
        t: ChunkTarget,
        written: Result<Piece>,
    ) -> Result<()> {
        self.leased.remove(&t.zone);
        let piece = match written {
            Ok(p) => p,
            Err(e) => {
                if !matches!(e, FsError::NoSpace(_)) {
                    self.broken = Some(e.to_string());
                }
                return Err(e);
            }
        };
        self.used_zone(t.stream, t.zone);
        self.user_bytes += t.len;
        job.advance(t.len as usize);
        // The chunk's bytes are mapped (live) now: they stop counting as dirty at once, not
        // when the whole job ends, or a job larger than the buffer (a writer that ran ahead of
        // the writer thread) would count its written chunks twice in the free space.
        let n = (t.len as usize).min(job.total);
        job.total -= n;
        self.dirty = self.dirty.saturating_sub(n);
        let cut = self.files.get(&job.ino).and_then(|f| f.cut);
        let len = match cut {
            Some(c) if c <= t.off => 0,
            Some(c) => piece.len.min(c - t.off),
            None => piece.len,
        };
        if len > 0 && self.state.get(job.ino).is_some() {
            // The time of the write, not of its flush (or the one a setattr set since).
            let mtime = Some(
                self.files
                    .get(&job.ino)
                    .and_then(|f| f.write_mtime)
                    .unwrap_or_else(now_ns),
            );
            self.log(Op::Map {
                ino: job.ino,
                off: t.off,
                piece: Piece { len, ..piece },
                mtime,
            })?;
        }
        Ok(())
    }

    /// Ends a flush job: what it did not write (after a failure) goes back to the buffer
    /// unless newer data covers it, and the data in flight is dropped.
    pub fn flush_finish(&mut self, job: FlushJob) -> Result<()> {
        let ino = job.ino;
        let written_all = job.is_done();
        if !self.files.contains_key(&ino) {
            self.dirty = self.dirty.saturating_sub(job.total);
        }
        let Some(f) = self.files.get_mut(&ino) else {
            return Ok(());
        };
        f.jobs = f.jobs.saturating_sub(1);
        let mut rest = Vec::new();
        let mut written = Vec::new();
        if written_all {
            written = job.segs;
        } else {
            for (i, (off, d)) in job.segs.into_iter().enumerate().skip(job.seg) {
                let skip = if i == job.seg { job.done } else { 0 };
                rest.push((off + skip as u64, d[skip..].to_vec()));
            }
        }
        if f.jobs == 0 {
            f.inflight = Default::default();
            f.cut = None;
        }
        // Once the file's data in flight is gone no reader holds the written segments: their
        // buffers go to the next segments (while another job of the file runs, they are shared
        // still and dropped).
        for (_, d) in written {
            if let Ok(v) = Arc::try_unwrap(d) {
                self.spares.give(v);
            }
        }
        self.dirty = self.dirty.saturating_sub(job.total);
        let limit = f.size;
        for (off, d) in rest {
            // Put back under newer buffered data: only the bytes the buffer does not hold.
            let mut merged = d;
            f.buf.overlay(off, &mut merged);
            let keep = (limit.saturating_sub(off) as usize).min(merged.len());
            let before = f.buf.bytes();
            f.buf.write_from(off, &merged[..keep], &mut self.spares);
            self.dirty += f.buf.bytes() - before;
        }
        if f.opens == 0 && f.jobs == 0 && f.buf.bytes() == 0 {
            self.files.remove(&ino);
        }
        if self.state.get(ino).is_some_and(|n| n.nlink == 0) {
            self.maybe_free(ino)?;
        }
        self.maybe_commit()
    }

    /// Writes a file's buffer as extents and maps them (not yet committed). On failure the
    /// unwritten bytes stay buffered.
    pub(crate) fn flush_file(&mut self, ino: u64) -> Result<()> {
        let Some(mut job) = self.take_flush(ino) else {
            if let Some(f) = self.files.get(&ino) {
                if f.opens == 0 && f.jobs == 0 && f.buf.bytes() == 0 {
                    self.files.remove(&ino);
                }
            }
            return Ok(());
        };
        let res = self.run_flush(&mut job);
        let fin = self.flush_finish(job);
        res.and(fin)
    }

    /// Runs a flush job to its end in place.
    pub(crate) fn run_flush(&mut self, job: &mut FlushJob) -> Result<()> {
        while let Some(t) = self.flush_begin(job)? {
            let written = t.write(&self.pool, job);
            self.flush_end(job, t, written)?;
        }
        Ok(())
    }
}
