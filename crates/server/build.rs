//! Builds the long double shim (`csrc/longdouble.c`) that INCRBYFLOAT computes with.

fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .opt_level(2)
        .compile("densekv_longdouble");
}
