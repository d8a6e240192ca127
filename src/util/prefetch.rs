//! A hint to the CPU to fetch a cache line before it is read: for walks over millions of
//! records in an order that is not their order in memory (a sorted index into a batch's
//! state), where each record is otherwise a cache miss waited for one at a time.

/// Asks for the cache line holding `p` to be fetched; reads nothing and never faults.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is a hint: it reads no byte the program sees, and an address that
        // is not mapped is ignored rather than faulting.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
