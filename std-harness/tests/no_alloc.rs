//! The step loop of every `sgld bench` workload makes no heap allocation: a counting
//! global allocator counts the allocations of this thread while a workload runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use sgld_harness::bench::{self, WorkloadKind};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

fn note() {
    if ARMED.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// the contract of `GlobalAlloc` is `System`'s; the counter only reads a thread-local flag
// (const-initialised, so reading it never allocates) and bumps an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    ARMED.with(|a| a.set(true));
    f();
    ARMED.with(|a| a.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn the_counter_sees_an_allocation() {
    let n = allocations(|| {
        std::hint::black_box(vec![1u8; 64]);
    });
    assert_eq!(n, 1);
}

#[test]
fn no_workload_allocates_in_its_step_loop() {
    let dir = std::env::var_os("SGLD_DATA_DIR").map(std::path::PathBuf::from);
    for kind in WorkloadKind::All.expand() {
        let mut w = bench::workload(kind, dir.as_deref()).unwrap();
        w.run(100).unwrap(); // warm up (first-touch of every buffer)
        let mut result = Ok(Default::default());
        let n = allocations(|| result = w.run(20_000));
        result.unwrap();
        assert_eq!(n, 0, "{} allocated {n} times in 20,000 steps", w.name());
    }
}
