//! troupe-remote's frame decoder (single frames and batches), which reads
//! whatever anyone publishes on a node's subjects: arbitrary bytes are
//! refused with a reason or decode, never panic; a decoded message re-encodes to a frame that decodes to the
//! same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::{Deserialize, Serialize};
use troupe_remote::wire::{self, Frame, RemoteMessage};

/// A message type with the shapes postcard has to parse: strings,
/// sequences, options, enums, tuples, integers of several widths.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Sample {
    Text(String),
    Numbers(Vec<u64>),
    Nested {
        a: Option<u32>,
        b: (i16, bool),
        c: Vec<String>,
    },
    Unit,
}

impl RemoteMessage for Sample {
    const TAG: &'static str = "fuzz.sample.v1";
}

const MAX: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // A message is one frame or a batch of them: each one is checked.
    for frame in wire::frames(data, MAX) {
        check(frame);
    }
});

fn check(frame: Result<Frame<'_>, troupe_remote::DeadLetterReason>) {
    match frame {
        Ok(Frame::Tell {
            incarnation,
            name,
            payload,
            ..
        }) => {
            if let Ok(msg) = wire::decode_payload::<Sample>(payload) {
                let again = wire::encode_tell(incarnation, name, &msg)
                    .expect("a decoded message encodes");
                match wire::decode_frame(&again, MAX) {
                    Ok(Frame::Tell {
                        incarnation: back,
                        payload,
                        ..
                    }) => {
                        assert_eq!(back, incarnation);
                        assert_eq!(wire::decode_payload::<Sample>(payload), Ok(msg));
                    }
                    other => panic!("a re-encoded frame decodes as {other:?}"),
                }
            }
        }
        Ok(Frame::Reply { payload, .. }) => {
            let _ = wire::decode_payload::<Sample>(payload);
        }
        Ok(Frame::Refused { id, reason }) => {
            // A reason that came in reads back the same once re-encoded
            // (if it is within the limit a sender keeps to).
            if reason.len() <= wire::MAX_REASON_BYTES {
                let again = wire::encode_refused(id, reason);
                assert_eq!(
                    wire::decode_frame(&again, usize::MAX),
                    Ok(Frame::Refused { id, reason })
                );
            }
        }
        Ok(Frame::NoReply { .. }) | Err(_) => {}
    }
}
