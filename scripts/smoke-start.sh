#!/usr/bin/env bash
# Starts the service exactly as the README's quick start does (`npm start`, embedded database,
# fresh data directory), waits for health, and makes one REST and one GraphQL call with the key
# the first start prints. Stops the service with SIGTERM and checks it shut down cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

data_dir=$(mktemp -d)
log_file="$data_dir/start.log"
port=${SMOKE_PORT:-4517}
unset DATABASE_URL
# setsid: npm, its shell and node form one process group that cleanup can stop as a whole.
DATA_DIR="$data_dir/data" PORT=$port setsid npm start >"$log_file" 2>&1 &
npm_pid=$!
cleanup() {
  kill -KILL -- "-$npm_pid" 2>/dev/null || true
  [ -n "${KEEP_SMOKE:-}" ] || rm -rf "$data_dir"
}
trap cleanup EXIT

for _ in $(seq 1 60); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  if ! kill -0 "$npm_pid" 2>/dev/null; then cat "$log_file"; echo "smoke: the service exited"; exit 1; fi
  sleep 1
done
curl -fsS "http://127.0.0.1:$port/readyz"; echo

key=$(grep -o 'esk_[A-Za-z0-9_-]*' "$log_file" | head -n 1)
[ -n "$key" ] || { cat "$log_file"; echo "smoke: no API key printed"; exit 1; }

rest=$(curl -fsS -H "X-Service-Api-Key: $key" "http://127.0.0.1:$port/api/v1/key/me")
echo "$rest"
echo "$rest" | grep -q '"success":true' || { echo "smoke: REST call failed"; exit 1; }

graphql=$(curl -fsS -H "X-Service-Api-Key: $key" -H 'content-type: application/json' \
  -d '{"query":"{ viewer { id name } }"}' "http://127.0.0.1:$port/graphql")
echo "$graphql"
echo "$graphql" | grep -q '"viewer"' || { echo "smoke: GraphQL call failed"; exit 1; }

# Graceful shutdown: SIGTERM to the node process, which must log "stopped" and exit.
node_pid=$(pgrep -g "$npm_pid" -f '^node .*src/main\.ts$' | head -n 1)
kill -TERM "$node_pid"
for _ in $(seq 1 20); do
  kill -0 "$node_pid" 2>/dev/null || break
  sleep 0.5
done
if kill -0 "$node_pid" 2>/dev/null; then echo "smoke: no clean shutdown"; exit 1; fi
grep -q '"msg":"stopped"' "$log_file" || { cat "$log_file"; echo "smoke: shutdown not logged"; exit 1; }
echo "smoke: ok"
