pub mod aggregate;
pub mod dedup;
pub mod process;
