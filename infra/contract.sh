#!/usr/bin/env bash
# The API contract: runs schemathesis (all its checks, at least 50 examples
# an operation) against the local stack seeded with the demo's data, with
# api/openapi.yaml as the contract and infra/schemathesis/hooks.py adding a
# check that no answer carries a Meta token, the Meta app's secret or a
# login code. Arguments go to schemathesis; ADTRAIL_PLANTED_SECRET adds a
# string to look for (a control: `ADTRAIL_PLANTED_SECRET=loja-x` must fail).
# Needs moto at AWS_ENDPOINT_URL (run through infra/run-tests.sh
# or `make contract`).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV_BIN="$(dirname "${ADTRAIL_PYTHON:-$PWD/.venv/bin/python}")"
log="${TMPDIR:-/tmp}/adtrail-contract-$$.log"
fifo="${TMPDIR:-/tmp}/adtrail-contract-$$.in"
mkfifo "$fifo"
cargo build --quiet -p adtrail-local
target="${CARGO_TARGET_DIR:-target}"
# The stack lives while the fifo stays open for writing.
"$target/debug/adtrail-local" contract <"$fifo" >"$log" 2>&1 &
stack=$!
exec 3>"$fifo"
trap 'exec 3>&-; kill $stack 2>/dev/null || true; rm -f "$fifo"' EXIT
for _ in $(seq 1 600); do
  grep -q '^READY ' "$log" && break
  kill -0 $stack 2>/dev/null || { cat "$log"; echo "the contract stack did not start"; exit 1; }
  sleep 0.5
done
read -r _ url token < <(grep '^READY ' "$log")
echo "contract: schemathesis against $url"
SCHEMATHESIS_HOOKS=infra.schemathesis.hooks \
ADTRAIL_SECRETS="EAAB-sample-agency-token-0001 sample-agency-token fake-app-secret-0123456789abcdef fake-verify-token-5f1c2a EAAP- EAAS- EAAU- EAAL- ${ADTRAIL_PLANTED_SECRET:-}" \
  "$VENV_BIN/schemathesis" --config-file infra/schemathesis/schemathesis.toml run api/openapi.yaml \
  --url "$url" \
  --header "Authorization: Bearer $token" \
  --checks all \
  --max-examples "${ADTRAIL_CONTRACT_EXAMPLES:-50}" \
  --seed 20261130 \
  --no-color \
  "$@"
