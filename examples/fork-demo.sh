#!/usr/bin/env bash
# The main job of dsh-rs in one go: import the session file this project ships into the
# embedded default store (no set-up needed; --store DIR or DSH_STORE point elsewhere),
# show it, fork it at its last turn boundary, show the child and its derived model history
# (the parent's, inherited), list the stored sessions and print the source's fork tree
# (lineage). Arguments are passed to every dsh call (e.g. --json, --store DIR).
# Progress goes to stderr, what dsh prints to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*" >&2; }
step "building dsh (release; a few minutes the first time on 2 cores)"
cargo build --release -p dsh-host
dsh="${CARGO_TARGET_DIR:-target}/release/dsh"
source_id=0193f3a0-6c1e-7d2a-9b4f-5e8d1c2a3b4c
child_id="$(uuidgen 2>/dev/null || cat /proc/sys/kernel/random/uuid)"
child_id="$(printf '%s' "$child_id" | tr '[:upper:]' '[:lower:]')"
step "importing examples/session.jsonl (a two-turn dsh session)"
"$dsh" "$@" import examples/session.jsonl
step "the source session $source_id"
"$dsh" "$@" show "$source_id"
step "forking it at its last turn/end into $child_id"
"$dsh" "$@" fork "$source_id" --id "$child_id"
step "the child: its header names the parent and the seed length"
"$dsh" "$@" show "$child_id"
step "the child's model history (inherited from the parent)"
"$dsh" "$@" history "$child_id"
step "the stored sessions"
"$dsh" "$@" sessions
step "the fork tree of the source"
"$dsh" "$@" lineage "$source_id"
