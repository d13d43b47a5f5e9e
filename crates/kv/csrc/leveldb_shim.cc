// LevelDB's part of kv_shim.h: gets into a reused std::string, as LevelDB's db_bench reads.
#include <leveldb/db.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include "kv_shim.h"

// A std::string holds no reference into the database: nothing to release.
KV_SHIM(leveldb, tegula_leveldb_, std::string, d->Get(ro, k, v), (void)v)
