// RocksDB's part of kv_shim.h: gets into a reused PinnableSlice, as db_bench's readrandom.
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/status.h>

#include "kv_shim.h"

KV_SHIM(rocksdb, tegula_rocksdb_, rocksdb::PinnableSlice,
        (v->Reset(), d->Get(ro, d->DefaultColumnFamily(), k, v)), v->Reset())
