//! Links the comparison engines' C libraries only when the `compare` feature is on, so the
//! default build needs neither librocksdb-dev nor libleveldb-dev. With it, also compiles
//! `csrc/{rocksdb,leveldb}_shim.cc` (gets into a reused value holder and iterators without the
//! C API's wrappers, as the libraries' db_bench tools read; `csrc/kv_shim.h`) with the system
//! C++ compiler (`$CXX`, default `c++`) against the -dev packages' headers.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for f in [
        "csrc/kv_shim.h",
        "csrc/rocksdb_shim.cc",
        "csrc/leveldb_shim.cc",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=CXX");
    if std::env::var_os("CARGO_FEATURE_COMPARE").is_none() {
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut objects = Vec::new();
    for name in ["rocksdb_shim", "leveldb_shim"] {
        let obj = out.join(format!("{name}.o"));
        let status = Command::new(&cxx)
            .args(["-std=c++17", "-O2", "-fPIC", "-c"])
            .arg(format!("csrc/{name}.cc"))
            .arg("-o")
            .arg(&obj)
            .status()
            .unwrap_or_else(|e| {
                panic!("running {cxx} (the `compare` feature needs a C++ compiler): {e}")
            });
        assert!(
            status.success(),
            "{cxx} failed on csrc/{name}.cc (are librocksdb-dev and libleveldb-dev installed?)"
        );
        objects.push(obj);
    }
    let lib = out.join("libtegula_kv_shim.a");
    let _ = std::fs::remove_file(&lib);
    let ar = std::env::var("AR").unwrap_or_else(|_| "ar".into());
    let status = Command::new(&ar)
        .arg("crs")
        .arg(&lib)
        .args(&objects)
        .status()
        .unwrap_or_else(|e| panic!("running {ar}: {e}"));
    assert!(status.success(), "{ar} failed");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=tegula_kv_shim");
    println!("cargo:rustc-link-lib=rocksdb");
    println!("cargo:rustc-link-lib=leveldb");
    println!("cargo:rustc-link-lib=stdc++");
}
