#!/bin/sh
# Fuzzes the JSONL session file decoder and seed validation for SECONDS per target (default
# 60), on the stable toolchain: `dsh-fuzz`, a plain loop over mutated generated sessions.
# Built in release with overflow checks and debug assertions on, so arithmetic overflow is a
# failure too. Extra arguments go to dsh-fuzz (e.g. --seed 42, --target seed).
# Failing inputs land in target/fuzz-failures; rerun one with
#   cargo run -p dsh-fuzz --release -- --replay FILE
# Not part of .ci/run: it runs for minutes, with a new seed each time.
set -eu
cd "$(dirname "$0")/.."
seconds="${1:-60}"
[ "$#" -gt 0 ] && shift
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
exec cargo run --quiet --release -p dsh-fuzz -- --seconds "$seconds" "$@"
