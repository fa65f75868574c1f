//! The binary command codec read back from transaction logs: arbitrary
//! bytes decode or fail cleanly; a decoded command encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trading_engine::codec::{decode, encode};
use trading_engine::Market;

fuzz_target!(|data: &[u8]| {
    let mut market = Market::new();
    if let Ok(command) = decode(data, &mut market) {
        let mut bytes = Vec::new();
        encode(&command, &market, &mut bytes);
        assert_eq!(bytes, data);
    }
});
