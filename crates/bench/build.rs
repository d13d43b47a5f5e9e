//! Links the comparison engines' C libraries only when the `compare` feature is on, so the
//! default build needs neither librocksdb-dev nor libleveldb-dev.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_COMPARE").is_some() {
        println!("cargo:rustc-link-lib=rocksdb");
        println!("cargo:rustc-link-lib=leveldb");
    }
}
