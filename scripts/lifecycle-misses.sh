#!/bin/sh
# Counts the last-level cache misses a plugin costs in a context's build, dispose and
# one-at-a-time load of a chain of 100 and of 10,000 plugins, under callgrind's cache
# simulation: a count that does not move with the machine's neighbours, unlike the timed
# growth figures of `dsh-bench core` (`build_per_plugin_growth` and the rest), whose warm
# 10,000 chain lives in caches other virtual machines share. The simulated last level is
# LL_BYTES (default 4 MiB, this machine's second-level cache; a power of two), 16-way.
# Each figure covers a warm-up and REPS (default 2) more repetitions of each part (the
# hidden `dsh-bench lifecycle-work PLUGINS REPS`), divided by the plugins they processed:
# the first build meets cold caches, so the counts are a little above a warm run's.
# Needs valgrind; builds dsh-bench in release. Not part of .ci/run: it runs for minutes.
set -eu
cd "$(dirname "$0")/.."
reps="${REPS:-2}"
ll="${LL_BYTES:-4194304}"
command -v valgrind >/dev/null || { echo "lifecycle-misses: valgrind is not installed" >&2; exit 1; }
cargo build --quiet --release -p dsh-bench
bin=target/release/dsh-bench
echo "part     plugins  LL read misses  LL write misses  instructions (a plugin)"
for n in 100 10000; do
  for part in build:dsh_core::context::ContextBuilder::build \
              'dispose:dsh_core::context::lifecycle::*::dispose' \
              load:dsh_core::handle::PluginHandle::load; do
    name=${part%%:*}
    fn=${part#*:}
    summary=$(valgrind --tool=callgrind --cache-sim=yes --LL="$ll,16,64" \
      --toggle-collect="$fn" --callgrind-out-file=/dev/null \
      "$bin" lifecycle-work "$n" "$reps" 2>&1 | tr -d ,)
    echo "$summary" | awk -v name="$name" -v n="$n" -v runs="$((reps + 1))" '
      /I *refs:/ { ir = $NF }
      /LL misses:/ { rd = $(NF - 4); sub(/^\(/, "", rd); wr = $(NF - 1) }
      END {
        if (ir == "" || rd == "") { print name ": no callgrind summary" > "/dev/stderr"; exit 1 }
        plugins = n * runs
        printf "%-8s %7d  %14.1f  %15.1f  %12.0f\n", name, n, rd / plugins, wr / plugins, ir / plugins
      }'
  done
done
