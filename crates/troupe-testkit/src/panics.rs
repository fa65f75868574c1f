//! [`quiet_panics`]: keeps the panics a test provokes on purpose out of the
//! test output, and every other panic in it.

use std::sync::{Mutex, Once};

/// Markers of expected panics, from every caller in the process.
static MARKERS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
static HOOK: Once = Once::new();

/// Keeps expected panics quiet: a panic whose message (or location) contains
/// one of the `markers` is not printed; every other panic goes to the panic
/// hook that was installed before the first call, as before.
///
/// The markers of every caller add up and the hook is installed once, so
/// tests that share a process (a test binary runs its tests on several
/// threads) cannot undo one another's filters. Choose markers no unexpected
/// panic would contain, such as the test's own panic text.
///
/// ```
/// troupe_testkit::quiet_panics(&["doc-example: expected crash"]);
/// let caught = std::panic::catch_unwind(|| panic!("doc-example: expected crash"));
/// assert!(caught.is_err()); // and nothing was printed
/// ```
pub fn quiet_panics(markers: &[&'static str]) {
    MARKERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend_from_slice(markers);
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = info.to_string();
            let expected = MARKERS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .any(|m| text.contains(m));
            if !expected {
                previous(info);
            }
        }));
    });
}
