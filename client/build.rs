//! Links the `tool-cli` binary as a position-dependent executable (no PIE) on Linux, in every
//! build, so that the client `cargo build --release` and `cargo install --path client` make is
//! the fast one (issue 26, P1).
//!
//! A `tool-cli` call is a whole process of about a millisecond, and a PIE spends part of it
//! before `main`: the dynamic loader applies ~6,600 relative relocations to the binary itself,
//! each page of `.data.rel.ro` they touch a copy-on-write fault. Linked without PIE, the static
//! linker resolves them once and the loader has nothing to do for them. Only the final link of
//! this one binary is affected (`rustc-link-arg-bin`); its objects are compiled as usual (PIC
//! code links fine into a position-dependent executable), so nothing else in the workspace is
//! rebuilt. `cargo build-cli` goes further (static, LTO; `.cargo/config.toml`).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // glibc targets only: the C compiler driver rustc links with takes `-no-pie` there. musl
    // targets link statically (PIE or not) by their own rules, and other platforms (macOS's
    // ld64, MSVC) have their own defaults: all are left alone.
    if os == "linux" && env == "gnu" {
        println!("cargo::rustc-link-arg-bin=tool-cli=-no-pie");
    }
}
