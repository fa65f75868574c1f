//! The primes service's request routing: any method and path get a route or
//! a 4xx with a JSON body, never a panic; a route is only ever granted to GET
//! and to an n within the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use primes::route::{route, Route};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (method, path) = text.split_once(' ').unwrap_or(("GET", &text));
    match route(method, path, 10_000) {
        Ok(found) => {
            assert_eq!(method, "GET");
            if let Route::Primes(n) = found {
                assert!((1..=10_000).contains(&n));
            }
        }
        Err(e) => {
            assert!((400..500).contains(&e.status), "{e}");
            let body: serde_json::Value = serde_json::from_str(&e.body()).unwrap();
            assert!(body.get("error").is_some());
        }
    }
});
