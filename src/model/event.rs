//! One record of a job's input, as the source delivers it and an operator emits it.

/// One record of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub user: u64,
    pub event_time: i64,
    pub partition: u32,
    pub offset: u64,
    /// When the record was written to the log (never goes back; Kafka's LogAppendTime).
    pub append_time: i64,
    /// Bytes of the record's value (0: the record carries none).
    pub value_size: u32,
    /// Which of the job's inputs the record belongs to: 0 (the first, or a join's left), 1 (a
    /// join's right).
    pub input: u8,
}
