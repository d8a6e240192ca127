//! The plain data every layer shares: column-family layouts, a trace's key strings, and (as
//! they move here) offsets, counters and the metric values the UI and the advisor read. It
//! imports nothing of statebench's own: any layer may name it, and it names none.

pub mod layout;
pub mod trace_keys;
