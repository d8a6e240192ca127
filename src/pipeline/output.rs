//! Where an operator's results go: an interface the pipeline owns. The durability layer's
//! delivery (the serving store behind the job's sink guarantee) implements it, so an operator
//! never names what keeps its results safe. Also the ids of what an operator emits: a write's
//! origin and its record's id, the same whoever replays it.

/// The serving store as an operator sees it.
pub trait Output {
    /// One result: `value` for (`key`, `slot`), the slot in the job's numbering.
    fn write(&mut self, key: u64, slot: usize, value: i64) -> Result<(), OutputError>;

    /// True when records are tracked by their origin (checkpointing on): origins matter.
    fn is_tracked(&self) -> bool;

    /// The origin of the records written from now on (see [`record_id`]).
    fn set_origin(&mut self, origin: u64);

    /// Makes everything written so far durable and visible (the store's flush).
    fn flush(&mut self) -> Result<(), OutputError>;

    /// Every result the store holds, as (key, slot, value).
    fn read_all(&mut self) -> Result<Vec<(u64, usize, i64)>, OutputError>;
}

/// What went wrong below an [`Output`]: its implementation's own error.
pub type OutputError = Box<dyn std::error::Error + Send + Sync>;

/// The id of a record emitted for `slot` while processing `origin`.
#[inline]
pub fn record_id(origin: u64, slot: usize) -> u64 {
    mix(0x243f_6a88_85a3_08d3, slot as u64, origin)
}

/// An origin from a source position: e.g. (partition, offset), or (a timer's key, its time).
pub fn origin(stream: u64, position: u64) -> u64 {
    mix(0x1319_8a2e_0370_7344, stream, position)
}

/// `a` and `b` into 64 bits: distinct pairs collide with a chance of about 2^-64.
#[inline]
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    fmix64(fmix64(a ^ seed) ^ b)
}

/// MurmurHash3's finalizer: a bijection that spreads every input bit over the output.
#[inline]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}
