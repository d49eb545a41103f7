//! A node's allocator (`node::arena`), as the `coordlab` binary installs it: a region of its
//! own for the thread that activates it, the system allocator for everything else.
//!
//! One test function: the region is made once per process, for the thread that asks first.

use coordlab::node::arena::{self, NodeArena, LARGEST, PREFAULT};
use std::alloc::{GlobalAlloc, Layout};

#[global_allocator]
static ALLOC: NodeArena = NodeArena;

fn addr<T: ?Sized>(b: &T) -> *mut u8 {
    b as *const T as *const u8 as *mut u8
}

/// A small deterministic generator (the allocator under test must not depend on the one it
/// is tested with).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn the_activating_thread_allocates_in_its_region_and_nothing_is_lost() {
    let before = Box::new(7u64);
    assert!(
        !arena::in_region(addr(&*before)),
        "nothing is in the region before it is made"
    );
    arena::activate(PREFAULT);

    // Small blocks: in the region, reused last freed first, contents kept.
    let a = Box::new([1u8; 100]);
    assert!(arena::in_region(addr(&*a)));
    let at = addr(&*a);
    drop(a);
    let b = Box::new([2u8; 112]);
    assert_eq!(addr(&*b), at, "a block of the same class is the one freed last");
    assert_eq!(
        *before, 7,
        "a block from before the region is still the system's, and intact"
    );
    drop(before);

    // Larger than LARGEST, or aligned beyond 16 bytes: the system's.
    let big = vec![0u8; LARGEST + 1];
    assert!(!arena::in_region(big.as_ptr() as *mut u8));
    #[repr(align(64))]
    struct Wide([u8; 64]);
    let wide = Box::new(Wide([3; 64]));
    assert!(!arena::in_region(addr(&*wide)));
    assert_eq!(addr(&*wide) as usize % 64, 0);
    assert_eq!(wide.0, [3; 64]);

    // Another thread: the system's.
    let other = std::thread::spawn(|| {
        let v = Box::new([9u8; 32]);
        (addr(&*v) as usize, arena::in_region(addr(&*v)))
    })
    .join()
    .unwrap();
    assert!(!other.1, "another thread's block at {:x} is in the region", other.0);

    // Growth out of the region keeps the contents.
    let mut v: Vec<u32> = Vec::new();
    for i in 0..10_000u32 {
        v.push(i);
        if i == 10 {
            assert!(arena::in_region(v.as_ptr() as *mut u8));
        }
    }
    assert!(!arena::in_region(v.as_ptr() as *mut u8));
    assert!(v.iter().enumerate().all(|(i, &x)| i as u32 == x));

    // A zeroed block is zero even when the block was used before.
    let dirty = Box::new([0xffu8; 64]);
    let dirty_at = addr(&*dirty);
    drop(dirty);
    // SAFETY: a valid layout, freed below.
    unsafe {
        let layout = Layout::from_size_align(64, 8).unwrap();
        let z = ALLOC.alloc_zeroed(layout);
        assert_eq!(z, dirty_at);
        assert!(std::slice::from_raw_parts(z, 64).iter().all(|&x| x == 0));
        ALLOC.dealloc(z, layout);
    }

    // Random allocations, reallocations and frees of every size and alignment: every block
    // keeps what was written into it, none overlaps another live one.
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
    let aligns = [1usize, 2, 8, 16, 32];
    for step in 0..40_000u32 {
        let tag = (step % 251) as u8;
        match rng.below(10) {
            0..=4 => {
                let most = if rng.below(8) == 0 { 3 * LARGEST as u64 } else { 600 };
                let size = 1 + rng.below(most) as usize;
                let align = aligns[rng.below(aligns.len() as u64) as usize];
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; freed below or at the end.
                let p = unsafe { ALLOC.alloc(layout) };
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0);
                // SAFETY: `size` bytes just allocated.
                unsafe { std::ptr::write_bytes(p, tag, size) };
                live.push((p, layout, tag));
            }
            5..=7 if !live.is_empty() => {
                let (p, layout, t) = live.swap_remove(rng.below(live.len() as u64) as usize);
                // SAFETY: a live block of this layout, filled with `t`.
                unsafe {
                    assert!(std::slice::from_raw_parts(p, layout.size()).iter().all(|&x| x == t));
                    ALLOC.dealloc(p, layout);
                }
            }
            _ if !live.is_empty() => {
                let i = rng.below(live.len() as u64) as usize;
                let (p, layout, t) = live[i];
                let new_size = 1 + rng.below(2 * LARGEST as u64) as usize;
                // SAFETY: a live block of this layout; the new size is non-zero.
                unsafe {
                    let q = ALLOC.realloc(p, layout, new_size);
                    assert!(!q.is_null());
                    let kept = layout.size().min(new_size);
                    assert!(std::slice::from_raw_parts(q, kept).iter().all(|&x| x == t));
                    std::ptr::write_bytes(q, tag, new_size);
                    live[i] = (q, Layout::from_size_align(new_size, layout.align()).unwrap(), tag);
                }
            }
            _ => {}
        }
    }
    let mut spans: Vec<(usize, usize)> = live.iter().map(|(p, l, _)| (*p as usize, l.size())).collect();
    spans.sort_unstable();
    assert!(
        spans.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0),
        "two live blocks overlap"
    );
    assert!(
        live.iter().any(|(p, _, _)| arena::in_region(*p)),
        "the region served some"
    );
    for (p, layout, t) in live {
        // SAFETY: each live block once, with its layout.
        unsafe {
            assert!(std::slice::from_raw_parts(p, layout.size()).iter().all(|&x| x == t));
            ALLOC.dealloc(p, layout);
        }
    }
}
