#!/usr/bin/env bash
# Runs every test against moto servers started for the run (from the
# project virtualenv, through infra/moto/server.py; one a core) and stopped
# after it.
# The fake Meta needs no start: each test runs its own in process. Then the
# API contract (infra/contract.sh: schemathesis against api/openapi.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${ADTRAIL_PYTHON:-$PWD/.venv/bin/python}"
# One moto server is one Python thread: the tests' stacks are spread over
# one server a core (each stack lives whole on one), so the run is not
# bound to a single core.
# (`getconf` answers on Linux and on a Mac, which has no `nproc`.)
servers="${ADTRAIL_MOTO_SERVERS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"
motos=()
urls=()
trap 'kill "${motos[@]}" 2>/dev/null || true' EXIT
for _ in $(seq 1 "$servers"); do
  port=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  ADTRAIL_MOTO_PARENT=$$ "$PYTHON" infra/moto/server.py -H 127.0.0.1 -p "$port" >"${TMPDIR:-/tmp}/adtrail-moto-$port.log" 2>&1 &
  pid=$!
  motos+=("$pid")
  urls+=("http://127.0.0.1:$port")
  for _ in $(seq 1 100); do
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    # A server that ended (e.g. the launcher refusing an unchecked moto
    # version) says why, and the run stops here rather than in every test.
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "moto did not start on port $port:" >&2
      tail -n 5 "${TMPDIR:-/tmp}/adtrail-moto-$port.log" >&2
      exit 1
    fi
    sleep 0.2
  done
done
export ADTRAIL_MOTO_URLS="${urls[*]}"
export AWS_ENDPOINT_URL="${urls[0]}"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export ADTRAIL_PYTHON="$PYTHON"
# The fault run's size here; `make fault-run` runs the full 10,000.
export ADTRAIL_FAULT_RUN="${ADTRAIL_FAULT_RUN:-2000}"
# The posted events' fault run (three destinations each): 600 here.
export ADTRAIL_FAULT_EVENTS="${ADTRAIL_FAULT_EVENTS:-600}"
# Every function's DynamoDB requests fail at this share with the errors the
# real service returns under load (infra/local/src/cloud/faults.rs): each
# test keeps its assertions through the store's retries. `make bench`
# and `make demo` run without.
export ADTRAIL_DDB_FAULTS="${ADTRAIL_DDB_FAULTS:-0.05}"
# And SQS's and EventBridge's batches (SendMessageBatch, PutEvents) are
# answered, at this share, with every entry failed on the service's side:
# the store puts them again.
export ADTRAIL_BATCH_FAULTS="${ADTRAIL_BATCH_FAULTS:-0.05}"
# Each test's stack logs its functions' AWS calls here for the IAM report.
export ADTRAIL_IAM_LOG_DIR="${TMPDIR:-/tmp}/adtrail-iam-$port"
rm -rf "$ADTRAIL_IAM_LOG_DIR"
trap 'kill "${motos[@]}" 2>/dev/null || true; rm -rf "$ADTRAIL_IAM_LOG_DIR"' EXIT
# The functions' real mains, which the runtime test starts behind a
# stand-in Runtime API.
cargo build -q -p adtrail-api -p adtrail-dispatcher -p adtrail-sync-worker -p adtrail-capi-sender -p adtrail-leadgen-worker --bins
# With arguments, they are cargo test's (e.g. `-p adtrail-tests --test e2e capi::`).
if [ "${1:-}" = "--contract-only" ]; then
  shift
  infra/contract.sh "$@"
elif [ "$#" -gt 0 ]; then
  cargo test "$@"
else
  cargo test --workspace --all-targets
  # Every call each function made, against its role in template.yaml.
  cargo run -q -p adtrail-local --bin adtrail-iam-report -- "$ADTRAIL_IAM_LOG_DIR"
  # The API contract: schemathesis against the local stack (same moto).
  infra/contract.sh
fi
