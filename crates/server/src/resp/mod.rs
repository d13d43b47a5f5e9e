//! RESP, the Redis serialization protocol: the request and value decoder ([`decode`]) and the
//! reply encoder ([`encode`]) for RESP2 and RESP3 (chosen per connection by `HELLO`).

pub mod batch;
pub mod decode;
pub mod encode;

pub use batch::Batch;
pub use decode::{
    parse_command, parse_command_resume, parse_request, parse_request_unauthenticated, parse_value,
    split_args, Args, Limits, Parse, Partial, Request, Value,
};
pub use encode::{encode_command, Proto, Reply};

/// Why bytes are not a valid RESP message. The `Display` text is what Redis replies (after
/// `ERR `) before it closes the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// `*` followed by something other than a count within the limits.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// `$` followed by something other than a length within the limits.
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// A request array of more arguments than a client that has not authenticated may send.
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// An argument longer than a client that has not authenticated may send.
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
    /// An element of a request array that is not a bulk string.
    #[error("Protocol error: expected '$', got '{}'", char::from(*.0))]
    ExpectedDollar(u8),
    /// An inline command longer than the limit.
    #[error("Protocol error: too big inline request")]
    InlineTooLong,
    /// A header line longer than any valid one.
    #[error("Protocol error: too big line")]
    LineTooLong,
    /// A quote that is not closed (or not followed by a blank) in an inline command.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    /// A line or bulk string not ended by `\r\n`.
    #[error("Protocol error: expected CRLF")]
    BadLineEnding,
    /// An integer that does not parse.
    #[error("Protocol error: invalid integer")]
    InvalidInteger,
    /// A type byte RESP does not define.
    #[error("Protocol error: unexpected byte {0:#04x}")]
    UnexpectedByte(u8),
    /// Aggregates nested deeper than [`decode::MAX_DEPTH`].
    #[error("Protocol error: nesting too deep")]
    TooDeep,
}
