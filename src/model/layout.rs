//! Column-family layouts: which column families an operator creates, in Flink's creation order,
//! and what each holds (keyed state with its TTL, or a timer service's queue).

/// One column family the operator creates, in Flink's creation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfDecl {
    pub name: String,
    pub role: CfRole,
}

/// What a column family holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CfRole {
    /// A keyed state (Value, List, Map, Reducing, Aggregating). `ttl`: its `StateTtlConfig`,
    /// whose compaction filter RocksDB runs on this column family when cleanup is on; `merge`:
    /// the state appends with RocksDB's merge operator (Flink's ListState).
    State { ttl: Option<TtlDecl>, merge: bool },
    /// A timer service's event-time queue (`_timer_state/event_<service>`).
    EventTimers,
    /// Its processing-time queue (`_timer_state/processing_<service>`).
    ProcessingTimers,
}

/// A state's TTL as Flink's `StateTtlConfig` gives it to RocksDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlDecl {
    /// Time to live, processing-time ms.
    pub ttl_ms: i64,
    /// `cleanupInRocksdbCompactFilter`: expired entries are dropped in compactions.
    pub compaction_filter: bool,
    /// The filter asks for the current time after this many entries.
    pub query_time_after: u64,
    /// Where the state's values keep their TTL timestamp (value or map state).
    pub layout: TtlLayout,
}

/// The column families of one operator, in creation order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    pub cfs: Vec<CfDecl>,
}

impl Layout {
    /// A keyed state's column family.
    pub fn state(mut self, name: &str, ttl: Option<TtlDecl>, merge: bool) -> Layout {
        self.cfs.push(CfDecl {
            name: name.to_string(),
            role: CfRole::State { ttl, merge },
        });
        self
    }

    /// A timer service named `service`: its processing-time queue, then its event-time one, the
    /// order Flink 1.20.1 creates them in (`InternalTimeServiceManagerImpl.registerOrGetTimerService`
    /// passes `createTimerPriorityQueue("_timer_state/processing_" + name)` before
    /// `createTimerPriorityQueue("_timer_state/event_" + name)` to `InternalTimerServiceImpl`'s
    /// constructor; `RocksDBPriorityQueueSetFactory.create` creates each column family at once).
    pub fn timer_service(mut self, service: &str) -> Layout {
        self.cfs.push(CfDecl {
            name: format!("_timer_state/processing_{service}"),
            role: CfRole::ProcessingTimers,
        });
        self.cfs.push(CfDecl {
            name: format!("_timer_state/event_{service}"),
            role: CfRole::EventTimers,
        });
        self
    }

    /// Every column family's name, in creation order.
    pub fn names(&self) -> Vec<String> {
        self.cfs.iter().map(|c| c.name.clone()).collect()
    }

    /// The column families that hold data (states and event-time timers): what shares the
    /// WriteBufferManager in practice (a processing-time queue nothing registers stays empty).
    pub fn data_cfs(&self) -> Vec<String> {
        self.cfs
            .iter()
            .filter(|c| c.role != CfRole::ProcessingTimers)
            .map(|c| c.name.clone())
            .collect()
    }

    /// The event-time timer queue's column family, if the operator has a timer service.
    pub fn event_timers(&self) -> Option<&str> {
        self.cfs
            .iter()
            .find(|c| c.role == CfRole::EventTimers)
            .map(|c| c.name.as_str())
    }

    /// The processing-time timer queue's column family, if the operator has a timer service.
    pub fn processing_timers(&self) -> Option<&str> {
        self.cfs
            .iter()
            .find(|c| c.role == CfRole::ProcessingTimers)
            .map(|c| c.name.as_str())
    }

    /// This layout without its timer services' column families: what RocksDB holds when the
    /// timers live on the heap (`state.backend.rocksdb.timer-service.factory: HEAP`).
    pub fn states_only(&self) -> Layout {
        Layout {
            cfs: self
                .cfs
                .iter()
                .filter(|c| matches!(c.role, CfRole::State { .. }))
                .cloned()
                .collect(),
        }
    }
}

/// Where the TTL timestamp sits in a state's RocksDB value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlLayout {
    /// ValueState (and Reducing/Aggregating): `[timestamp][value]` (`Config.createForValue`).
    Value,
    /// MapState: `[null flag][timestamp][value]` (`Config.createForMap`).
    Map,
}

impl TtlLayout {
    pub fn timestamp_offset(self) -> usize {
        match self {
            TtlLayout::Value => 0,
            TtlLayout::Map => 1,
        }
    }
}

/// `MapState<String window, Stats>` of the reference job (the frequency counter).
pub const CF_WINDOW_STATS: &str = "window-stats";
/// `MapState<Long timer, Decrement>`: what each of its timers must decrement.
pub const CF_TIMER_STATE: &str = "timer-state";
/// Flink's RocksDB timer service column family for its KeyedProcessFunction's event-time timers.
pub const CF_TIMERS: &str = "_timer_state/event_user-timers";
/// Its processing-time timers: Flink creates the column family and scans its key-group heads
/// when the timer service starts, though the reference job registers none.
pub const CF_PROCESSING_TIMERS: &str = "_timer_state/processing_user-timers";
/// The frequency counter's column families that hold state and share the WriteBufferManager.
pub const STATE_COLUMN_FAMILIES: [&str; 3] = [CF_WINDOW_STATS, CF_TIMER_STATE, CF_TIMERS];
/// Every column family the frequency counter creates besides RocksDB's default one.
pub const ALL_COLUMN_FAMILIES: [&str; 4] = [
    CF_WINDOW_STATS,
    CF_TIMER_STATE,
    CF_TIMERS,
    CF_PROCESSING_TIMERS,
];

/// How many of the frequency counter's column families hold data and share the
/// WriteBufferManager: the count Flink's memory math divides by when no job is at hand (a
/// profile shown or exported alone, a report written before operator kinds).
pub fn frequency_data_column_families() -> usize {
    frequency(None).data_cfs().len()
}

/// The frequency counter's column families in the order its job creates them: the window
/// stats, the timerState (with the TTL filter when `timer_state_ttl_ms` is set), then the timer
/// service's queues.
pub fn frequency(timer_state_ttl_ms: Option<i64>) -> Layout {
    let ttl = timer_state_ttl_ms.map(|ttl_ms| TtlDecl {
        ttl_ms,
        compaction_filter: true,
        query_time_after: 1000,
        layout: TtlLayout::Map,
    });
    Layout::default()
        .state(CF_WINDOW_STATS, None, false)
        .state(CF_TIMER_STATE, ttl, false)
        .timer_service("user-timers")
}
