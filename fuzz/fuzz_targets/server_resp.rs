//! The RESP decoder on arbitrary bytes: parsing requests and values never panics; a request
//! parsed in two pieces (resumed) equals the request parsed whole; a parsed request
//! re-encoded parses back to the same arguments; split inline arguments never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_server::resp::{
    encode_command, parse_command, parse_command_resume, parse_value, split_args, Limits, Parse,
};

fuzz_target!(|data: &[u8]| {
    let lim = Limits {
        max_bulk: 1 << 16,
        max_args: 1 << 10,
        max_inline: 1 << 12,
    };
    let _ = parse_value(data, 1 << 16, 1 << 10);
    let _ = split_args(data);
    let whole = parse_command(data, &lim);
    if let Ok(Parse::Done(args, n)) = &whole {
        assert!(*n <= data.len());
        if data.first() == Some(&b'*') && !args.is_empty() {
            let again = encode_command(args);
            assert_eq!(
                parse_command(&again, &lim),
                Ok(Parse::Done(args.clone(), again.len()))
            );
        }
    }
    // Resuming after any prefix gives the same outcome as parsing whole.
    let cut = data.first().map_or(0, |&b| b as usize % (data.len() + 1));
    let mut partial = None;
    match parse_command_resume(&data[..cut], &lim, &mut partial) {
        Ok(Parse::Incomplete(_)) => {
            let resumed = parse_command_resume(data, &lim, &mut partial);
            assert_eq!(resumed.is_ok(), whole.is_ok());
            if let (Ok(a), Ok(b)) = (&resumed, &whole) {
                assert_eq!(a, b);
            }
        }
        _ => {}
    }
});
