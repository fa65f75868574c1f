//! The disk's own durability cost, probed next to the group-commit rows: a
//! 64-byte append and `fdatasync` on a file in the directory the logs go
//! to, timed one at a time. A group-commit order waits for at least one
//! such flush on the primary and one on the standby, so the probe is the
//! physical bound the row's latency is read against.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use crate::runner::summarize;

/// Flushes per probe.
const FLUSHES: usize = 50;

/// Median microseconds of an append + `fdatasync` in `dir`.
pub fn fdatasync_us(dir: &Path) -> Result<f64, String> {
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| format!("fdatasync probe in {}: {e}", dir.display()))?;
    let record = [0x5a_u8; 64];
    let mut times = Vec::with_capacity(FLUSHES);
    for _ in 0..FLUSHES {
        let start = Instant::now();
        file.write_all(&record)
            .and_then(|()| file.as_file().sync_data())
            .map_err(|e| format!("fdatasync probe: {e}"))?;
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
    Ok(summarize(&times).expect("FLUSHES > 0").median)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flush_takes_some_time() {
        let dir = tempfile::tempdir().unwrap();
        let us = super::fdatasync_us(dir.path()).unwrap();
        assert!(us > 0.0, "{us}");
    }
}
