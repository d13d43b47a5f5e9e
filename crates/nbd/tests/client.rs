//! The crate's own NBD client against its server: negotiation, data round trip, FUA, flush,
//! trim, errors past the end, and a polite disconnect.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk};
use tegula_nbd::{ClientError, Listener, NbdClient, ServerOptions};

#[test]
fn client_round_trips_data_through_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = profile("cmr-7200").unwrap();
    cfg.capacity = 256 << 20;
    let dev: Arc<dyn BlockDevice> = Arc::new(Disk::in_memory(cfg).unwrap());
    let sock = dir.path().join("d.sock");
    let l = Listener::unix(&sock).unwrap();
    std::thread::spawn(move || {
        let _ = l.serve(
            dev,
            ServerOptions {
                readonly: false,
                name: String::new(),
                ..ServerOptions::default()
            },
        );
    });
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let mut c = NbdClient::connect(&uri).unwrap();
    assert_eq!(c.size(), 256 << 20);
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    c.write(4096, &data, false).unwrap();
    c.write(1 << 20, &data, true).unwrap();
    c.flush().unwrap();
    let mut back = vec![0u8; 8192];
    c.read(4096, &mut back).unwrap();
    assert_eq!(back, data);
    c.read(1 << 20, &mut back).unwrap();
    assert_eq!(back, data);
    c.trim(4096, 4096).unwrap();
    // Past the end: an error reply, and the connection stays usable.
    let err = c.write(256 << 20, &data, false).unwrap_err();
    assert!(matches!(err, ClientError::Command(_)), "{err}");
    c.read(1 << 20, &mut back).unwrap();
    assert_eq!(back, data);
    c.disconnect().unwrap();
}
