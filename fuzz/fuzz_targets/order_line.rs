//! The replay tool's command-line parser: any input line either parses or
//! is refused with a reason, never panics; a parsed line prints back to a
//! line that parses to the same command.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trading_engine::text::{parse_line, write_command};
use trading_engine::Market;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if line.contains('\n') {
        return;
    }
    if let Ok(Some(parsed)) = parse_line(line) {
        let mut market = Market::new();
        let command = parsed.resolve(&mut market);
        let mut printed = String::new();
        write_command(&command, &market, &mut printed);
        let again = parse_line(printed.trim_end())
            .expect("a printed command parses")
            .expect("a printed command is not blank");
        assert_eq!(again.resolve(&mut market), command, "{line:?} -> {printed:?}");
    }
});
