//! A node's small allocations in one region of its own (issue 22: the step's data in one
//! small block per node).
//!
//! Why: a node of a ring of 64 takes its first step on data that 63 other processes have
//! pushed out of the caches and the TLB since it last ran, and glibc serves the step's small
//! blocks from free chunks spread over a heap the node still shares, page by page, with the
//! zygote it was forked from (each first write a copy-on-write fault). Here every small block
//! a node allocates once it runs comes from one region it alone owns, made and faulted in
//! before the go, handed out in order and reused last-freed first per size: the step's maps,
//! records and strings sit in a few pages.
//!
//! Only the thread that called [`activate`] uses the region (a node runs one); any other
//! thread, every process that never activates it (the launcher), and every binary whose
//! global allocator this is not (the library's tests) get the system allocator. So do blocks
//! larger than [`LARGEST`] or aligned beyond 16 bytes, and everything once the region is used
//! up.

use nix::libc;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The largest block served from the region; larger ones are rare and long-lived (tables).
pub const LARGEST: usize = 4096;
/// Address space reserved per node (not memory: pages are made as the bump pointer reaches
/// them).
const RESERVE: usize = 64 << 20;
/// Faulted in before the go in a launch under [`super::LARGE_LAUNCH`] nodes: what a node of a
/// ring of 64 uses (its leader about twice as much).
pub const PREFAULT: usize = 64 << 10;

/// Block sizes, each a multiple of 16 so that every block is 16-byte aligned.
const CLASSES: [usize; 28] = [
    16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792,
    2048, 2560, 3072, 3584, 4096,
];

/// The class of a request of `size` bytes, indexed by `size.div_ceil(16)`.
const CLASS_OF: [u8; LARGEST / 16 + 1] = {
    let mut t = [0u8; LARGEST / 16 + 1];
    let mut units = 0;
    let mut c = 0;
    while units <= LARGEST / 16 {
        while CLASSES[c] < units * 16 {
            c += 1;
        }
        t[units] = c as u8;
        units += 1;
    }
    t
};

struct Region {
    next: usize,
    free: [*mut u8; CLASSES.len()],
}

struct Shared(UnsafeCell<Region>);

// SAFETY: the region is touched only by the thread whose `OWNER` is set (one per process).
unsafe impl Sync for Shared {}

static REGION: Shared = Shared(UnsafeCell::new(Region {
    next: 0,
    free: [std::ptr::null_mut(); CLASSES.len()],
}));
/// The region's bounds, 0 and 0 until it is made.
static BASE: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static OWNER: Cell<bool> = const { Cell::new(false) };
}

/// The global allocator of the `coordlab` binary (see the module's comment).
pub struct NodeArena;

/// What a node faults in before its go: [`PREFAULT`], or nothing in a `large` launch (of
/// [`super::LARGE_LAUNCH`] nodes or more).
pub fn prefault(large: bool) -> usize {
    match large {
        true => 0,
        false => PREFAULT,
    }
}

/// Makes the region, faults in its first `prefault` bytes, and gives it to the calling thread.
/// Once per process; a second call, or a region the kernel refuses, changes nothing.
pub fn activate(prefault: usize) {
    if BASE.load(Ordering::Relaxed) != 0 {
        return;
    }
    // SAFETY: a fresh anonymous mapping, owned by the allocator for the process's life.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            RESERVE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return;
    }
    if prefault > 0 {
        // The faults taken now rather than in the first steps. A large launch takes none: its
        // thousands of nodes would each pay for pages most never use (a ring of 16,384 took
        // 16-21 s to elect with 64 KiB each, 12-14 without). A kernel older than 5.14 (no
        // MADV_POPULATE_WRITE) takes them later instead.
        // SAFETY: inside the mapping just made.
        unsafe { libc::madvise(base, prefault.min(RESERVE), libc::MADV_POPULATE_WRITE) };
    }
    // SAFETY: no thread uses the region before `OWNER` is set below.
    unsafe { (*REGION.0.get()).next = base as usize };
    END.store(base as usize + RESERVE, Ordering::Relaxed);
    BASE.store(base as usize, Ordering::Relaxed);
    OWNER.with(|o| o.set(true));
}

/// Whether `ptr` is in this process's region.
pub fn in_region(ptr: *mut u8) -> bool {
    let p = ptr as usize;
    p >= BASE.load(Ordering::Relaxed) && p < END.load(Ordering::Relaxed)
}

fn owner() -> bool {
    OWNER.with(|o| o.get())
}

fn class(layout: &Layout) -> Option<usize> {
    (layout.size() <= LARGEST && layout.align() <= 16).then(|| CLASS_OF[layout.size().div_ceil(16)] as usize)
}

/// A block of class `c` from the region, or null when it is used up.
///
/// SAFETY: on the owner thread only.
unsafe fn take(c: usize) -> *mut u8 {
    let r = &mut *REGION.0.get();
    let head = r.free[c];
    if !head.is_null() {
        r.free[c] = *(head as *mut *mut u8);
        return head;
    }
    let size = CLASSES[c];
    if r.next + size > END.load(Ordering::Relaxed) {
        return std::ptr::null_mut();
    }
    let p = r.next as *mut u8;
    r.next += size;
    p
}

/// SAFETY: `ptr` a block of class `c` from the region, on the owner thread.
unsafe fn give(ptr: *mut u8, c: usize) {
    let r = &mut *REGION.0.get();
    *(ptr as *mut *mut u8) = r.free[c];
    r.free[c] = ptr;
}

// SAFETY: a block from the region is never handed out twice (taken off its list or past the
// bump pointer), is at least the layout's size (its class) and 16-byte aligned (every class a
// multiple of 16 from a page-aligned base; larger alignments go to the system allocator).
unsafe impl GlobalAlloc for NodeArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let (Some(c), true) = (class(&layout), owner()) {
            let p = take(c);
            if !p.is_null() {
                return p;
            }
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let (Some(c), true) = (class(&layout), owner()) {
            let p = take(c);
            if !p.is_null() {
                std::ptr::write_bytes(p, 0, layout.size());
                return p;
            }
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !in_region(ptr) {
            return System.dealloc(ptr, layout);
        }
        // A block of the region freed by another thread (a node has none) is left unused
        // rather than raced for.
        if let (Some(c), true) = (class(&layout), owner()) {
            give(ptr, c);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !in_region(ptr) {
            return System.realloc(ptr, layout, new_size);
        }
        let new = Layout::from_size_align_unchecked(new_size, layout.align());
        if class(&layout).is_some() && class(&layout) == class(&new) {
            return ptr;
        }
        let p = self.alloc(new);
        if !p.is_null() {
            std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        p
    }
}
