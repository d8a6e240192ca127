//! TEMPORARY stand-in for the lead's operators/mod.rs (replaced at the merge of main).
#![allow(dead_code, unused)]
pub mod aggregate;
pub mod dedup;
pub mod process;
pub mod process_truth;
pub mod ttl;
pub mod valgen;

use crate::backend::{BackendError, StateAccess};
use crate::pipeline::PipelineError;
use crate::pipeline::delivery::Delivery;
use crate::pipeline::operator::JobCounters;
use crate::pipeline::source::Event;
use crate::pipeline::timers::{Timer, TimerService};

pub fn mix(a: i64, b: i64, c: i64, d: i64) -> i64 {
    let mut h = a;
    h = h.wrapping_mul(1_000_003) ^ b;
    h = h.wrapping_mul(1_000_003) ^ c;
    h = h.wrapping_mul(1_000_003) ^ d;
    valgen::splitmix64(h)
}

pub struct Context<'a> {
    pub state: StateAccess<'a>,
    pub timers: Option<TimerService<'a>>,
    pub now: i64,
    pub watermark: i64,
    pub sink: Delivery,
}

pub trait KeyedOperator<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a>) -> Result<(), PipelineError>;
    fn on_timer(&mut self, _t: &Timer, _ctx: &mut Context<'a>) -> Result<(), PipelineError> {
        Ok(())
    }
    fn on_watermark(&mut self, _wm: i64, _ctx: &mut Context<'a>) -> Result<(), PipelineError> {
        Ok(())
    }
    fn counters(&self) -> JobCounters;
    fn restore_counters(&mut self, c: JobCounters);
}

pub fn key_string(e: &Event, out: &mut String) {
    crate::pipeline::source::Generator::user_key(e.user, out)
}

pub fn key_id(key: &str) -> Result<u64, PipelineError> {
    key.strip_prefix("user-")
        .and_then(|k| k.parse().ok())
        .ok_or_else(|| PipelineError::CorruptTimer(key.to_string()))
}

pub trait TruthModel: Send {
    fn on_event(&mut self, e: &Event, now: i64, t: &mut Truths);
    fn on_watermark(&mut self, wm: i64, now: i64, t: &mut Truths);
    fn boxed_clone(&self) -> Box<dyn TruthModel>;
}

#[derive(Default)]
pub struct Truths(std::collections::HashMap<(u64, usize), i64>);
impl Truths {
    pub fn set(&mut self, k: u64, s: usize, v: i64) {
        self.0.insert((k, s), v);
    }
    pub fn add(&mut self, k: u64, s: usize, d: i64) {
        *self.0.entry((k, s)).or_default() += d;
    }
    pub fn get(&self, k: u64, s: usize) -> i64 {
        self.0.get(&(k, s)).copied().unwrap_or(0)
    }
}
