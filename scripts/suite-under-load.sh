#!/usr/bin/env bash
# The default suite under load (issue 34): `npm test` three times in a row on a fresh clone while
# two other suites load the machine, the embedded pass of .ci/run and the fault suite, each in a
# loop on a clone of its own until the three runs are done (or one failed: it stops there).
#
#   bash scripts/suite-under-load.sh [COMMIT] [WORKDIR]     COMMIT defaults to HEAD, WORKDIR to /tmp/suite-under-load
#
# Needs what .ci/run needs (PostgreSQL on 127.0.0.1:5432, Chromium, poppler-utils, qpdf, …) and
# about 75 minutes on the 2-core machine. Results: WORKDIR/summary (one line per run) and each
# run's log beside it (a-N: the default suite, b-N: the embedded pass, c-N: the fault suite).
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$repo" rev-parse "${1:-HEAD}")
root=${2:-/tmp/suite-under-load}
rm -rf "$root"; mkdir -p "$root"
for clone in a b c; do
  git clone -q "$repo" "$root/$clone" && git -C "$root/$clone" checkout -q "$commit"
done
(cd "$root/a" && npm ci --no-audit --no-fund > "$root/a-npm-ci.log" 2>&1) || { echo "npm ci failed" > "$root/summary"; exit 1; }
ln -s "$root/a/node_modules" "$root/b/node_modules"
ln -s "$root/a/node_modules" "$root/c/node_modules"
# The embedded pass's file list, as .ci/run names it.
embedded=$(sed -n '/^TEST_DATABASE=embedded npm test -- /,/[^\\]$/p' "$root/a/.ci/run" | sed 's/TEST_DATABASE=embedded npm test -- //; s/\\//g' | tr '\n' ' ')
{ echo "commit $commit"; echo "start $(date -u +%FT%TZ)"; } > "$root/summary"
loop() {
  local name=$1; shift
  local i=0
  while [ ! -f "$root/stop" ]; do
    i=$((i + 1)); local started; started=$(date +%s)
    "$@" > "$root/$name-$i.log" 2>&1; local rc=$?
    echo "load $name run $i rc=$rc $(($(date +%s) - started))s" >> "$root/summary"
  done
}
(cd "$root/b" && loop b env TEST_DATABASE=embedded npm test -- $embedded) &
embedded_pid=$!
(cd "$root/c" && loop c env FAULTS_SLOW_CLIENTS=250 npm run test:faults) &
faults_pid=$!
sleep 30
status=0
cd "$root/a"
for i in 1 2 3; do
  started=$(date +%s)
  npm test > "$root/a-$i.log" 2>&1; rc=$?
  echo "DEFAULT run $i rc=$rc $(($(date +%s) - started))s load=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$root/summary"
  if [ $rc -ne 0 ]; then status=1; break; fi
done
touch "$root/stop"
wait $embedded_pid $faults_pid
echo "end $(date -u +%FT%TZ)" >> "$root/summary"
cat "$root/summary"
exit $status
