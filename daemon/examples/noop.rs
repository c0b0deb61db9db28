//! A program that does nothing: the call-latency bench's floor for starting a process (P1 of
//! issue 13 compares a whole `tool-cli` call with spawning this).

fn main() {}
