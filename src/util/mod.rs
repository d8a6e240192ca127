//! Small building blocks with no knowledge of the job: a fast hasher for integer-keyed maps, a
//! bit set, a value owned by a thread of its own, files written atomically, a plain HTTP GET, the
//! process's memory and CPU time, the error of a command line that cannot be carried out.

pub mod bits;
pub mod fs;
pub mod hash;
pub mod http;
pub mod prefetch;
pub mod process_cpu;
pub mod process_memory;
pub mod stats;
pub mod usage;
pub mod varint;
pub mod worker;
