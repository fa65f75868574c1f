//! Resident memory of this process, read from `/proc/self/status` (Linux):
//! the current resident set (`VmRSS`) and its high-water mark (`VmHWM`), in
//! bytes.
//!
//! Reading procfs keeps the crate free of `unsafe` (no `getrusage` call) and
//! gives both numbers from one file. On systems without procfs the functions
//! return an error, and callers treat the figure as unknown.

use std::fs;
use std::io;

/// The current resident set size of this process, in bytes.
pub fn current_rss_bytes() -> io::Result<u64> {
    status_field_bytes("VmRSS")
}

/// The peak resident set size of this process so far, in bytes.
pub fn peak_rss_bytes() -> io::Result<u64> {
    status_field_bytes("VmHWM")
}

fn status_field_bytes(key: &str) -> io::Result<u64> {
    let status = fs::read_to_string("/proc/self/status")?;
    parse_kib_field(&status, key).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("no {key} line in /proc/self/status"),
        )
    })
}

/// Finds a line `key:   <n> kB` in `/proc/<pid>/status` text and returns `n`
/// in bytes.
///
/// The kernel writes these sizes in KiB and labels them "kB"; the unit is
/// checked so that a format change is noticed instead of misread.
fn parse_kib_field(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(key)?.strip_prefix(':')?;
        let mut words = value.split_whitespace();
        let kib: u64 = words.next()?.parse().ok()?;
        match words.next() {
            Some("kB") => kib.checked_mul(1024),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\ttroupe-bench\n\
        VmPeak:\t  123456 kB\n\
        VmHWM:\t    8192 kB\n\
        VmRSS:\t    4096 kB\n\
        Threads:\t1\n";

    #[test]
    fn parses_the_named_field_in_bytes() {
        assert_eq!(parse_kib_field(STATUS, "VmRSS"), Some(4096 * 1024));
        assert_eq!(parse_kib_field(STATUS, "VmHWM"), Some(8192 * 1024));
    }

    #[test]
    fn a_missing_field_or_unit_is_none() {
        assert_eq!(parse_kib_field(STATUS, "VmSwap"), None);
        assert_eq!(parse_kib_field(STATUS, "Threads"), None);
    }

    #[test]
    fn a_prefix_of_another_key_does_not_match() {
        assert_eq!(parse_kib_field("VmRSSX:\t1 kB\n", "VmRSS"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_resident_set_within_its_peak() {
        let rss = current_rss_bytes().unwrap();
        let peak = peak_rss_bytes().unwrap();
        assert!(rss > 0);
        assert!(peak >= rss, "peak {peak} < current {rss}");
    }
}
