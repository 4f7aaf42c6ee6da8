#!/usr/bin/env bash
# The main job of dsh-rs in one go: import the session file this project ships into the
# embedded default store (no set-up needed; --store DIR or DSH_STORE point elsewhere),
# show it, fork it at its last turn boundary, list the stored sessions, and print the
# source's fork tree (lineage) and its derived model history.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "building dsh (release; a few minutes the first time)..." >&2
cargo build --quiet --release -p dsh-host
dsh="${CARGO_TARGET_DIR:-target}/release/dsh"
source_id=0193f3a0-6c1e-7d2a-9b4f-5e8d1c2a3b4c
"$dsh" "$@" import examples/session.jsonl
"$dsh" "$@" show "$source_id"
"$dsh" "$@" fork "$source_id"
"$dsh" "$@" sessions
"$dsh" "$@" lineage "$source_id"
"$dsh" "$@" history "$source_id"
