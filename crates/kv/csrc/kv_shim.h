// The part of the adapters to RocksDB and LevelDB (crates/bench/src/engines/) that goes
// through the libraries' C++ API instead of their C API, so that the harness reads as the
// libraries' own db_bench tools read:
//
// * a Get into a value holder the calling thread keeps and reuses (RocksDB: a PinnableSlice,
//   LevelDB: a std::string), where the C API allocates a new value (and, in RocksDB, a new
//   pinnable slice) on every call;
// * iterators without the C API's heap-allocated wrapper around each one, stepped with one
//   call per pair (next, valid, key and value) instead of four.
//
// The C API hands out `rocksdb_t*` / `leveldb_t*` and `*_readoptions_t*`; in both libraries'
// c.cc these are structs whose first member is the C++ object (`DB* rep`, `ReadOptions rep`),
// which is all this relies on (RocksDB 7.8.3's db/c.cc, LevelDB 1.23's db/c.cc: the versions
// the harness links, Debian's). KV_SHIM(ns, prefix, Holder, hold_value) defines the functions
// for one library; each .cc file includes its library's headers and expands it once.
//
// A holder must not outlive its database while it holds something: a RocksDB PinnableSlice
// may pin a block of the database's block cache, and releasing that pin after the database
// (and its cache) is gone calls into freed memory ("pure virtual method called"). So the
// caller releases a holder (`holder_release`) as soon as it has read the value.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

// The current pair of an iterator, as the seek and next functions hand it out (the Rust side
// declares the same struct: `KvShimEntry` in src/engines/capi/engine.rs).
struct KvShimEntry {
  const char* key;
  size_t keylen;
  const char* val;
  size_t vallen;
};

#define KV_SHIM_CONCAT(a, b) a##b
#define KV_SHIM_NAME(prefix, name) KV_SHIM_CONCAT(prefix, name)

#define KV_SHIM(ns, prefix, Holder, GET_CALL, RELEASE_CALL)                            \
  namespace {                                                                          \
  struct CDb {                                                                         \
    ns::DB* rep;                                                                       \
  };                                                                                   \
  struct CReadOptions {                                                                \
    ns::ReadOptions rep;                                                               \
  };                                                                                   \
  char* kv_shim_error(const ns::Status& s) { return strdup(s.ToString().c_str()); }    \
  int kv_shim_entry(const ns::Iterator* i, KvShimEntry* e) {                           \
    if (!i->Valid()) return 0;                                                         \
    ns::Slice k = i->key();                                                            \
    ns::Slice v = i->value();                                                          \
    e->key = k.data();                                                                 \
    e->keylen = k.size();                                                              \
    e->val = v.data();                                                                 \
    e->vallen = v.size();                                                              \
    return 1;                                                                          \
  }                                                                                    \
  }                                                                                    \
  extern "C" {                                                                         \
  /* A value holder for the get below; NULL if out of memory. */                       \
  void* KV_SHIM_NAME(prefix, holder_create)() { return new (std::nothrow) Holder(); }  \
  void KV_SHIM_NAME(prefix, holder_destroy)(void* h) { delete static_cast<Holder*>(h); } \
  /* Lets go of what holder `h` holds (a pinned block), once its value has been read. */ \
  void KV_SHIM_NAME(prefix, holder_release)(void* h) {                                 \
    Holder* v = static_cast<Holder*>(h);                                               \
    RELEASE_CALL;                                                                      \
  }                                                                                    \
  /* Reads `key` into holder `h`: 1 and the value in *val, *vlen (valid until the next  \
     call with `h`) if found, 0 if not, -1 with a malloc'ed message in *errptr. */     \
  int KV_SHIM_NAME(prefix, get)(void* db, const void* options, const char* key,        \
                                size_t keylen, void* h, const char** val,              \
                                size_t* vlen, char** errptr) {                         \
    ns::DB* d = static_cast<CDb*>(db)->rep;                                            \
    const ns::ReadOptions& ro = static_cast<const CReadOptions*>(options)->rep;        \
    Holder* v = static_cast<Holder*>(h);                                               \
    ns::Slice k(key, keylen);                                                          \
    ns::Status s = GET_CALL;                                                           \
    if (s.ok()) {                                                                      \
      *val = v->data();                                                                \
      *vlen = v->size();                                                               \
      return 1;                                                                        \
    }                                                                                  \
    if (s.IsNotFound()) return 0;                                                      \
    *errptr = kv_shim_error(s);                                                        \
    return -1;                                                                         \
  }                                                                                    \
  /* A new iterator over the database (the C++ object itself). */                     \
  void* KV_SHIM_NAME(prefix, iter_create)(void* db, const void* options) {             \
    return static_cast<CDb*>(db)->rep->NewIterator(                                    \
        static_cast<const CReadOptions*>(options)->rep);                               \
  }                                                                                    \
  void KV_SHIM_NAME(prefix, iter_destroy)(void* it) {                                  \
    delete static_cast<ns::Iterator*>(it);                                             \
  }                                                                                    \
  /* Seeks to the first key >= `key`; whether the iterator is valid, and then its pair in  \
     `*e` (valid until the iterator moves). */                                         \
  int KV_SHIM_NAME(prefix, iter_seek)(void* it, const char* key, size_t keylen,        \
                                      KvShimEntry* e) {                                \
    ns::Iterator* i = static_cast<ns::Iterator*>(it);                                  \
    i->Seek(ns::Slice(key, keylen));                                                   \
    return kv_shim_entry(i, e);                                                        \
  }                                                                                    \
  /* Steps to the next pair; like the seek. */                                         \
  int KV_SHIM_NAME(prefix, iter_next)(void* it, KvShimEntry* e) {                      \
    ns::Iterator* i = static_cast<ns::Iterator*>(it);                                  \
    i->Next();                                                                         \
    return kv_shim_entry(i, e);                                                        \
  }                                                                                    \
  /* The iterator's error, if any, as a malloc'ed message in *errptr. */               \
  void KV_SHIM_NAME(prefix, iter_error)(const void* it, char** errptr) {               \
    ns::Status s = static_cast<const ns::Iterator*>(it)->status();                     \
    if (!s.ok()) *errptr = kv_shim_error(s);                                           \
  }                                                                                    \
  }
