#!/usr/bin/env bash
# The functions' release arm64 binaries, as `make build-lambdas` made them:
# each printed with its size, and a failure when one passes the limit
# (8 MB, 8,000,000 bytes: `ADTRAIL_MAX_BINARY_BYTES` sets another). A
# binary not built fails too: the check never passes by not looking.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
limit="${ADTRAIL_MAX_BINARY_BYTES:-8000000}"
status=0
for bin in adtrail-api adtrail-dispatcher adtrail-sync-worker adtrail-sweeper \
  adtrail-capi-sender adtrail-leadgen-worker adtrail-hello; do
  file="$target/lambda/$bin/bootstrap"
  if [ ! -f "$file" ]; then
    echo "binary size: $bin not built (make build-lambdas)" >&2
    status=1
    continue
  fi
  bytes=$(wc -c <"$file")
  mib=$(awk "BEGIN { printf \"%.2f\", $bytes / 1048576 }")
  if [ "$bytes" -gt "$limit" ]; then
    echo "binary size: $bin $bytes bytes ($mib MiB) is past the limit of $limit bytes" >&2
    status=1
  else
    echo "binary size: $bin $bytes bytes ($mib MiB), within $limit"
  fi
done
exit $status
