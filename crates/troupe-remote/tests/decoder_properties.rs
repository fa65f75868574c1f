//! The frame decoder against random input (proptest): arbitrary bytes and
//! random mutations of valid frames are refused with a reason or decoded,
//! never a panic, and a valid frame always decodes to what was encoded.
//! (A cargo-fuzz target for the same decoder is still to be written.)

use proptest::prelude::*;
use troupe_remote::testing::echo::EchoMsg;
use troupe_remote::wire::{self, Frame};

/// Decodes like a node does: header, then the payload as the echo type
/// (whose reply handles cannot be rebuilt outside a node: an error too).
fn decode_like_a_node(bytes: &[u8]) {
    if let Ok(Frame::Tell { payload, .. }) = wire::decode_frame(bytes, 1 << 16) {
        let _ = wire::decode_payload::<EchoMsg>(payload);
    }
    if let Ok(Frame::Reply { payload, .. }) = wire::decode_frame(bytes, 1 << 16) {
        let _ = wire::decode_payload::<Vec<String>>(payload);
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        decode_like_a_node(&bytes);
        // With a valid header in front, the payload decoder is reached too.
        let mut framed = wire::encode_tell(0, "echo", &EchoMsg::Say(String::new())).unwrap();
        framed.truncate(framed.len() - 2);
        framed.extend_from_slice(&bytes);
        decode_like_a_node(&framed);
    }

    #[test]
    fn mutated_frames_never_panic(
        text in ".{0,40}",
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
    ) {
        let mut frame = wire::encode_tell(0, "echo", &EchoMsg::Say(text)).unwrap();
        for (at, byte) in flips {
            let at = at % frame.len();
            frame[at] = byte;
        }
        decode_like_a_node(&frame);
    }

    #[test]
    fn valid_frames_round_trip(text in ".{0,200}", name in "[a-z0-9_-]{1,40}") {
        let frame = wire::encode_tell(0, &name, &EchoMsg::Say(text.clone())).unwrap();
        let Ok(Frame::Tell { name: got, payload, .. }) = wire::decode_frame(&frame, 1 << 16) else {
            panic!("a valid frame was refused");
        };
        prop_assert_eq!(got, name.as_str());
        match wire::decode_payload::<EchoMsg>(payload) {
            Ok(EchoMsg::Say(got)) => prop_assert_eq!(got, text),
            other => panic!("{other:?}"),
        }
    }
}
