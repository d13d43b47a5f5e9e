//! Log chunks, log tail slots and batch payloads: decoding arbitrary bytes never panics, a
//! decoded payload re-encodes to the same batches (and, cut anywhere in a continued chunk,
//! yields its whole records), and a decoded tail slot to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tegula_smrdb::log::{
    decode_chunk, decode_payload, encode_batch, frame, frame_continued, tail, whole_records_len,
};

fuzz_target!(|data: &[u8]| {
    let _ = decode_chunk(data, 512);
    let _ = decode_chunk(data, 4096);
    if let Ok(Some(t)) = tail::decode(data) {
        let _ = decode_payload(t.payload);
        if data.len() == 512 {
            let again = tail::encode(t.zone, t.sector, t.generation, t.payload, 512)
                .expect("a decoded slot's payload fits its sector");
            let len = tail::TAIL_HEADER + t.payload.len();
            assert_eq!(&again[..len], &data[..len]);
        }
    }
    if let Ok(batches) = decode_payload(data) {
        let mut p = Vec::new();
        for (seq, ops) in &batches {
            p.extend(encode_batch(*seq, ops));
        }
        assert_eq!(decode_payload(&p).ok().as_ref(), Some(&batches));
        let chunk = frame(&p, 512);
        let (again, _) = decode_chunk(&chunk, 512)
            .expect("a framed chunk decodes")
            .expect("a framed chunk is there");
        assert_eq!(again, batches);
        // Cut anywhere, the whole records before the cut are what a continued chunk yields.
        let cut = data.len() / 2;
        let whole = whole_records_len(&p[..cut.min(p.len())]);
        let (first, _) = decode_chunk(&frame_continued(&p[..cut.min(p.len())], 512), 512)
            .expect("a framed chunk decodes")
            .expect("a framed chunk is there");
        assert_eq!(decode_payload(&p[..whole]).ok(), Some(first));
    }
});
