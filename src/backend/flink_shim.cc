// What RocksDB's C API cannot express but Flink 1.20's RocksDB state backend sets:
// the shared block cache's high-priority pool ratio (Flink builds its LRU cache with
// high-prio-pool-ratio 0.1; the C API's LRU cache always gets RocksDB's 0.5) and the
// block-based table's decouple_partitioned_filters (FRocksDB 6.20.3 predates it: its
// partitioned filters are coupled to the index partitions).
//
// Compiled by build.rs against the public headers of the RocksDB that librocksdb-sys builds,
// and linked into the same binary, so it shares that RocksDB's objects.

#include <cstddef>
#include <memory>

#include "rocksdb/advanced_cache.h"
#include "rocksdb/cache.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/write_buffer_manager.h"

// The C API's wrapper around Options (rocksdb/db/c.cc defines it with this one member).
// rust-rocksdb hands out this pointer with its `raw-ptr` feature.
struct rocksdb_options_t {
  rocksdb::Options rep;
};

// Flink's shared managed memory: one block cache and the WriteBufferManager charging it.
struct statebench_memory_t {
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> wbm;
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

// Column-family options: rebuilds the block-based table factory `options` already has with
// the shared cache and `decouple_partitioned_filters`. Returns 0, or -1 when the options have
// no block-based table factory (or RocksDB threw).
int statebench_options_set_table(rocksdb_options_t* options,
                                 const statebench_memory_t* memory,
                                 unsigned char decouple_partitioned_filters) try {
  if (!options->rep.table_factory) {
    return -1;
  }
  const auto* current =
      options->rep.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  if (current == nullptr) {
    return -1;
  }
  rocksdb::BlockBasedTableOptions table = *current;
  table.block_cache = memory->cache;
  table.decouple_partitioned_filters = decouple_partitioned_filters != 0;
  options->rep.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return 0;
} catch (...) {
  return -1;
}

}  // extern "C"
