//! The typed error of a format's decoder: its frame, one of its fields, its image header, or a
//! value that decodes but the format rules out. Every decoder of an on-disk structure in the
//! stack returns it (or a crate error that wraps it), so that a caller can tell a torn or
//! foreign frame from a malformed payload without parsing text.

use crate::frame::FrameError;
use crate::text_header::HeaderError;
use crate::DecodeError;

/// Why an on-disk structure did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The frame around the structure failed a check (magic, version, kind, length, checksum).
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A field of the structure could not be read (the bytes ran out, a malformed varint).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The header of an image failed a check.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// A part of the structure did not decode, with what was being decoded (`corrupt zone
    /// state`, `media state`).
    #[error("{context}: {source}")]
    In {
        /// What was being decoded.
        context: &'static str,
        /// Why it did not decode.
        #[source]
        source: Box<FormatError>,
    },
    /// A value that decodes but the format rules out (a count that does not fit, an unknown
    /// code, a range outside the device), worded for a person with where it is.
    #[error("{0}")]
    Invalid(String),
}

impl FormatError {
    /// A [`FormatError::Invalid`].
    pub fn invalid(what: impl Into<String>) -> Self {
        FormatError::Invalid(what.into())
    }

    /// This error as the failure of decoding `context`.
    pub fn within(self, context: &'static str) -> Self {
        FormatError::In {
            context,
            source: Box::new(self),
        }
    }

    /// A function for `map_err` that names what a failed read was decoding.
    pub fn field(context: &'static str) -> impl Fn(DecodeError) -> FormatError + Copy {
        move |e| FormatError::from(e).within(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dec;

    #[test]
    fn messages_keep_the_codec_text_and_the_context() {
        let e = Dec::new(&[1])
            .u32()
            .map_err(FormatError::field("corrupt zone state"));
        assert_eq!(
            e.unwrap_err().to_string(),
            "corrupt zone state: truncated at offset 0: need 4 bytes, 1 left"
        );
        let e: FormatError = Dec::new(&[]).u8().unwrap_err().into();
        assert!(matches!(e, FormatError::Decode(_)));
        assert_eq!(FormatError::invalid("bad").to_string(), "bad");
    }
}
