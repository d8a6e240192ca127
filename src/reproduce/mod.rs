//! `statebench reproduce NAME`: the field reports' cases in miniature. Traps (`traps`) run a
//! broken and a fixed configuration side by side; proofs (`proofs`) run a case study's "before"
//! profile, ask the advisor, apply its recommendation and show the metric move; some of them
//! also at the seed's own size (`production`), from a preloaded steady state.

mod checks;
mod heap_timers;
pub mod production;
mod proof_render;
pub mod proofs;
pub mod recovery;
mod runs;
mod traps;
mod uploads;

pub use traps::{Row, SCENARIOS, Scenario, find, render, run};
