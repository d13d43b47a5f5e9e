//! The metadata log of a translation layer (specified in `docs/formats/dm-smr-image.md`): two
//! slots, each a checkpoint frame followed by record frames of the same generation. Records
//! are appended as they commit; when the records outgrow the checkpoint, a new checkpoint of
//! the next generation goes to the other slot (so a torn checkpoint leaves the old slot whole).
//! Every frame carries magic, version, kind, generation, length and a CRC-32C. Loading stops
//! at the first frame that fails a check; that frame is a torn tail only when no valid frame
//! of its generation follows it — otherwise it is corruption, reported with its offset and
//! never written over. Decoding never panics on bad bytes.

use crate::check::{Finding, Severity};
use crate::error::{Result, StlError};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use tegula_codec::frame::{Format, FrameError, Header, CHECKSUM_LEN};

mod backend;
mod frame;
mod log;

pub(crate) use backend::*;
pub use frame::*;
pub use log::*;
