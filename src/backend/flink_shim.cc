// What RocksDB's C API cannot express but Flink 1.20's RocksDB state backend sets:
// the shared block cache's high-priority pool ratio (Flink builds its LRU cache with
// high-prio-pool-ratio 0.1; the C API's LRU cache always gets RocksDB's 0.5) and the
// block-based table's decouple_partitioned_filters (FRocksDB 6.20.3 predates it: its
// partitioned filters are coupled to the index partitions). And FRocksDB 6.20's choice of
// the column family a WriteBufferManager flush switches (see statebench_wbm620_before_write).
//
// Compiled by build.rs against the public headers of the RocksDB that librocksdb-sys builds,
// and linked into the same binary, so it shares that RocksDB's objects.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rocksdb/advanced_cache.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/listener.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/table.h"
#include "rocksdb/write_buffer_manager.h"

// The C API's wrapper around Options (rocksdb/db/c.cc defines it with this one member).
// rust-rocksdb hands out this pointer with its `raw-ptr` feature.
struct rocksdb_options_t {
  rocksdb::Options rep;
};
// The C API's database and column-family handles (also from db/c.cc).
struct rocksdb_t {
  rocksdb::DB* rep;
};
struct rocksdb_column_family_handle_t {
  rocksdb::ColumnFamilyHandle* rep;
  bool immortal;
};

namespace {

// Remembers the order in which column families' memtables were sealed: the column family
// sealed longest ago holds the oldest mutable memtable (smallest creation sequence), the one
// a WriteBufferManager flush picks. Never-sealed column families keep their opening order.
// And how many flushes the WriteBufferManager forced: RocksDB's statistics do not say why a
// memtable was flushed.
class SealOrder : public rocksdb::EventListener {
 public:
  const char* Name() const override { return "statebench.SealOrder"; }

  void OnMemTableSealed(const rocksdb::MemTableInfo& info) override {
    std::lock_guard<std::mutex> lock(mutex_);
    sealed_at_[info.cf_name] = ++seals_;
  }

  uint64_t SealedAt(const std::string& cf) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sealed_at_.find(cf);
    return it == sealed_at_.end() ? 0 : it->second;
  }

  // A column family statebench_wbm620_before_write switched for the WriteBufferManager:
  // RocksDB names that flush manual, but FRocksDB 6.20 makes it for the WriteBufferManager.
  // `by` is +1 for a switch asked for, -1 when RocksDB refused it.
  void SwitchedForWbm(const std::string& cf, int by) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t& n = switched_[cf];
    if (by > 0) {
      n += 1;
    } else if (n > 0) {
      n -= 1;
    }
  }

  // Counts the flushes the WriteBufferManager forced and the memtable data (keys and
  // values, as the flushed file's table properties count them) they wrote.
  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo& info) override {
    std::lock_guard<std::mutex> lock(mutex_);
    bool by_wbm = info.flush_reason == rocksdb::FlushReason::kWriteBufferManager;
    uint64_t& switched = switched_[info.cf_name];
    if (info.flush_reason == rocksdb::FlushReason::kManualFlush && switched > 0) {
      switched -= 1;
      by_wbm = true;
    }
    if (by_wbm) {
      wbm_flushes_ += 1;
      wbm_flush_bytes_ +=
          info.table_properties.raw_key_size + info.table_properties.raw_value_size;
    }
  }

  void WbmFlushes(uint64_t* flushes, uint64_t* bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    *flushes = wbm_flushes_;
    *bytes = wbm_flush_bytes_;
  }

 private:
  std::mutex mutex_;
  uint64_t seals_ = 0;
  std::unordered_map<std::string, uint64_t> sealed_at_;
  std::unordered_map<std::string, uint64_t> switched_;
  uint64_t wbm_flushes_ = 0;
  uint64_t wbm_flush_bytes_ = 0;
};

}  // namespace

// Flink's shared managed memory: one block cache and the WriteBufferManager charging it,
// shared by every RocksDB instance of a slot.
struct statebench_memory_t {
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> wbm;
};

// One database's part of FRocksDB 6.20's flush choice: the shared WriteBufferManager, the
// order this database sealed its memtables in, and its column families (set once the
// database is open; its handles outlive every call that reads them). FRocksDB checks the
// shared WriteBufferManager before each write of each database and flushes a column family of
// the database that writes (DBImpl::PreprocessWrite -> HandleWriteBufferManagerFlush), so
// every database sharing the memory has one of these.
struct statebench_instance_t {
  std::shared_ptr<rocksdb::WriteBufferManager> wbm;
  std::shared_ptr<SealOrder> seal_order = std::make_shared<SealOrder>();
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> column_families;
};

extern "C" {

// An LRU cache of `cache_capacity` bytes with `high_pri_pool_ratio` of it reserved for
// high-priority (index and filter) blocks, and a WriteBufferManager of `wbm_capacity` bytes
// that charges its memtables to that cache and never stalls writes (Flink's allow_stall=false).
// Returns null when RocksDB refuses the cache options.
statebench_memory_t* statebench_memory_create(size_t cache_capacity,
                                              double high_pri_pool_ratio,
                                              size_t wbm_capacity) try {
  rocksdb::LRUCacheOptions lru;
  lru.capacity = cache_capacity;
  lru.num_shard_bits = -1;
  lru.strict_capacity_limit = false;
  lru.high_pri_pool_ratio = high_pri_pool_ratio;
  lru.low_pri_pool_ratio = 0.0;
  std::shared_ptr<rocksdb::Cache> cache = lru.MakeSharedCache();
  if (!cache) {
    return nullptr;
  }
  auto* memory = new statebench_memory_t;
  memory->cache = cache;
  memory->wbm = std::make_shared<rocksdb::WriteBufferManager>(
      wbm_capacity, cache, /*allow_stall=*/false);
  return memory;
} catch (...) {
  // No C++ exception may cross into Rust: out of memory reads as a refused cache.
  return nullptr;
}

void statebench_memory_destroy(statebench_memory_t* memory) { delete memory; }

void statebench_memory_set_cache_capacity(statebench_memory_t* memory,
                                          size_t capacity) {
  memory->cache->SetCapacity(capacity);
}

void statebench_memory_set_wbm_capacity(statebench_memory_t* memory,
                                        size_t capacity) {
  memory->wbm->SetBufferSize(capacity);
}

size_t statebench_memory_wbm_usage(const statebench_memory_t* memory) {
  return memory->wbm->memory_usage();
}

size_t statebench_memory_wbm_capacity(const statebench_memory_t* memory) {
  return memory->wbm->buffer_size();
}

// DB options: memtables of every column family are charged to the shared WriteBufferManager.
void statebench_options_set_memory(rocksdb_options_t* options,
                                   const statebench_memory_t* memory) {
  options->rep.write_buffer_manager = memory->wbm;
}

}  // extern "C"

namespace {

// Rebuilds the block-based table factory of `options` with `cache` and
// `decouple_partitioned_filters`. Returns 0, or -1 without a block-based table factory.
int ReplaceTable(rocksdb_options_t* options, std::shared_ptr<rocksdb::Cache> cache,
                 unsigned char decouple_partitioned_filters) {
  if (!options->rep.table_factory || !cache) {
    return -1;
  }
  const auto* current =
      options->rep.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  if (current == nullptr) {
    return -1;
  }
  rocksdb::BlockBasedTableOptions table = *current;
  table.block_cache = std::move(cache);
  table.decouple_partitioned_filters = decouple_partitioned_filters != 0;
  options->rep.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return 0;
}

}  // namespace

extern "C" {

// Column-family options: rebuilds the block-based table factory `options` already has with
// the slot's shared cache and `decouple_partitioned_filters`. Returns 0, or -1 when the options
// have no block-based table factory (or RocksDB threw).
int statebench_options_set_table(rocksdb_options_t* options,
                                 const statebench_memory_t* memory,
                                 unsigned char decouple_partitioned_filters) try {
  return ReplaceTable(options, memory->cache, decouple_partitioned_filters);
} catch (...) {
  return -1;
}

// Flink without a shared budget (memory.managed: false, no fixed size): the column family's
// own LRU cache of `capacity` bytes, as RocksJava's BlockBasedTableConfig builds one from
// setBlockCacheSize (NewLRUCache with its defaults). Returns 0, or -1 without a block-based
// table factory or if RocksDB threw.
int statebench_options_set_own_table(rocksdb_options_t* options, size_t capacity,
                                     unsigned char decouple_partitioned_filters) try {
  rocksdb::LRUCacheOptions lru;
  lru.capacity = capacity;
  lru.num_shard_bits = -1;
  lru.strict_capacity_limit = false;
  lru.high_pri_pool_ratio = 0.5;
  lru.low_pri_pool_ratio = 0.0;
  return ReplaceTable(options, lru.MakeSharedCache(), decouple_partitioned_filters);
} catch (...) {
  return -1;
}

statebench_instance_t* statebench_instance_create(const statebench_memory_t* memory) try {
  auto* instance = new statebench_instance_t;
  instance->wbm = memory->wbm;
  return instance;
} catch (...) {
  return nullptr;
}

void statebench_instance_destroy(statebench_instance_t* instance) { delete instance; }

// DB options: RocksDB tells `instance` when it seals a memtable (for the 6.20 flush choice).
void statebench_options_track_seals(rocksdb_options_t* options,
                                    const statebench_instance_t* instance) {
  options->rep.listeners.push_back(instance->seal_order);
}

// The open database and its column families in creation order (the order RocksDB iterates
// them in when it picks a column family to flush). Returns 0, or -1 if RocksDB threw.
int statebench_instance_attach(statebench_instance_t* memory, rocksdb_t* db,
                               rocksdb_column_family_handle_t* const* cfs,
                               size_t n) try {
  memory->db = db->rep;
  memory->column_families.clear();
  for (size_t i = 0; i < n; ++i) {
    memory->column_families.push_back(cfs[i]->rep);
  }
  return 0;
} catch (...) {
  return -1;
}

// FRocksDB 6.20.3 (Flink 1.20) and RocksDB 11 agree on when the WriteBufferManager asks for a
// flush (ShouldFlush, checked before every write) and on which column family it flushes: the
// non-empty one with the oldest mutable memtable, but RocksDB 7+ skips column families with
// immutable memtables still unflushed, while 6.20 switches them too. Under memory pressure,
// 6.20 thus cuts a column family whose flush is pending into ever smaller memtables, and
// stops writes when it holds max_write_buffer_number of them, which is what Flink jobs see.
// Called before each write: when 6.20 would switch such a column family, switch it now (a
// flush without waiting; RocksDB counts it as manual). Returns 1 when it switched one, 0 when
// RocksDB 11 will do what 6.20 does, -1 when the flush failed (writes stopped: 6.20 would
// also just wait), -2 before statebench_instance_attach. `memory` is the writing database's.
int statebench_wbm620_before_write(statebench_instance_t* memory) try {
  if (!memory->wbm->ShouldFlush()) {
    return 0;
  }
  if (memory->db == nullptr) {
    return -2;
  }
  rocksdb::ColumnFamilyHandle* picked = nullptr;
  uint64_t picked_at = 0;
  for (rocksdb::ColumnFamilyHandle* cf : memory->column_families) {
    uint64_t entries = 0;
    if (!memory->db->GetIntProperty(cf, "rocksdb.num-entries-active-mem-table",
                                    &entries) ||
        entries == 0) {
      continue;
    }
    uint64_t sealed_at = memory->seal_order->SealedAt(cf->GetName());
    if (picked == nullptr || sealed_at < picked_at) {
      picked = cf;
      picked_at = sealed_at;
    }
  }
  uint64_t unflushed = 0;
  if (picked == nullptr ||
      !memory->db->GetIntProperty(picked, "rocksdb.num-immutable-mem-table",
                                  &unflushed) ||
      unflushed == 0) {
    return 0;
  }
  rocksdb::FlushOptions flush;
  flush.wait = false;
  flush.allow_write_stall = true;
  // Noted before the flush is asked for: it may complete before Flush returns.
  memory->seal_order->SwitchedForWbm(picked->GetName(), 1);
  if (!memory->db->Flush(flush, picked).ok()) {
    memory->seal_order->SwitchedForWbm(picked->GetName(), -1);
    return -1;
  }
  return 1;
} catch (...) {
  return -1;
}

// The flushes the WriteBufferManager forced in this database (FRocksDB 6.20's switches
// included) and the memtable data they wrote, since it opened.
void statebench_instance_wbm_flushes(statebench_instance_t* memory, uint64_t* flushes,
                                     uint64_t* bytes) {
  memory->seal_order->WbmFlushes(flushes, bytes);
}

}  // extern "C"

extern "C" {

// Reads every entry of the SST file at `path` in key order, deletions included (the C API's
// readers show only the live keys): `entry(ctx, key, key_len, value, value_len, is_delete)`
// for each, stopping early when it returns nonzero. Returns 0, 1 when `entry` stopped it, or
// -1 with `*error` (malloc'd, freed with statebench_free) on a file that cannot be read or an
// entry other than a put or a deletion.
int statebench_sst_read(const char* path, void* ctx,
                        int (*entry)(void*, const char*, size_t, const char*, size_t, int),
                        char** error) try {
  auto fail = [error](const std::string& why) {
    *error = strdup(why.c_str());
    return -1;
  };
  rocksdb::Options options;
  rocksdb::SstFileReader reader(options);
  rocksdb::Status status = reader.Open(path);
  if (!status.ok()) {
    return fail(status.ToString());
  }
  std::unique_ptr<rocksdb::Iterator> it = reader.NewTableIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::ParsedEntryInfo parsed;
    status = reader.ParseTableIteratorKey(it->key(), &parsed);
    if (!status.ok()) {
      return fail(status.ToString());
    }
    int is_delete = 0;
    switch (parsed.type) {
      case rocksdb::kEntryPut:
        break;
      case rocksdb::kEntryDelete:
        is_delete = 1;
        break;
      default:
        return fail("an entry that is neither a put nor a deletion (type " +
                    std::to_string(static_cast<int>(parsed.type)) + ")");
    }
    rocksdb::Slice value = it->value();
    if (entry(ctx, parsed.user_key.data(), parsed.user_key.size(), value.data(), value.size(),
              is_delete) != 0) {
      return 1;
    }
  }
  if (!it->status().ok()) {
    return fail(it->status().ToString());
  }
  return 0;
} catch (const std::exception& e) {
  *error = strdup(e.what());
  return -1;
} catch (...) {
  *error = strdup("RocksDB threw");
  return -1;
}

void statebench_free(char* p) { free(p); }

}  // extern "C"
