//! `render_json` is on every request's path: it must make one allocation
//! (its output) however many primes it writes, not one per number. Its own
//! test binary, because counting needs a global allocator of its own.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use primes::sieve::{render_json, PrimeCache};

/// The system allocator, counting the allocations made on each thread (so
/// that tests running in parallel do not count each other's).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed unchanged to the system allocator, which
// upholds `GlobalAlloc`'s contract; the counter is a const-initialised
// thread-local without a destructor, so touching it never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // `ptr` came from `System` (every allocation here does)
        // with this `layout`, as the caller guarantees.
        // SAFETY: by the argument just above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // as for `dealloc`, and `new_size` is the caller's, valid
        // by `realloc`'s contract.
        // SAFETY: by the argument just above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_of(f: impl FnOnce() -> String) -> (usize, String) {
    let before = ALLOCATIONS.with(Cell::get);
    let out = f();
    (ALLOCATIONS.with(Cell::get) - before, out)
}

#[test]
fn render_json_allocates_its_output_once() {
    let primes = PrimeCache::new().first(100_000);
    for n in [1, 20, 1_000, 100_000] {
        let (allocations, json) = allocations_of(|| render_json(&primes[..n]));
        assert_eq!(allocations, 1, "n = {n}");
        // The output is still right: parse it back.
        let parsed: Vec<u32> = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed, primes[..n], "n = {n}");
    }
    // Numbers of every width up to u32::MAX.
    let wide = [0, 9, 10, 99_999, 1_000_000, 4_294_967_295];
    let (allocations, json) = allocations_of(|| render_json(&wide));
    assert_eq!(allocations, 1);
    assert_eq!(json, "[0,9,10,99999,1000000,4294967295]");
    assert_eq!(allocations_of(|| render_json(&[])), (1, "[]".to_string()));
}
