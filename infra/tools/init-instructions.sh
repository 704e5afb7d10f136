#!/usr/bin/env bash
# Instructions each function's x86_64 release binary runs from exec to its
# first call to the Lambda runtime API, counted by valgrind's callgrind: the
# same count run after run, whatever else the machine is doing, so it backs
# `make bench`'s init-time medians on a noisy machine. A stand-in runtime
# API accepts the call and hangs up; the few instructions of the exit that
# follows are counted too, alike for every binary.
#
# Usage: infra/tools/init-instructions.sh (after `make bench`, or
# `cargo build --release -p <function>` for each). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}/release"
command -v valgrind >/dev/null || { echo "init instructions: valgrind is not installed" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(8)
while True:
    c, _ = s.accept(); c.close()
" &
runtime=$!
trap 'kill $runtime 2>/dev/null || true' EXIT
out=$(mktemp -d)
hello=""
for bin in adtrail-hello adtrail-api adtrail-dispatcher adtrail-sync-worker adtrail-sweeper \
  adtrail-capi-sender adtrail-leadgen-worker; do
  if [ ! -x "$target/$bin" ]; then
    echo "init instructions: $bin not built (cargo build --release -p $bin)"
    continue
  fi
  env -i AWS_LAMBDA_RUNTIME_API="127.0.0.1:$port" AWS_LAMBDA_FUNCTION_NAME="$bin" \
    AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing TABLE_NAME=t \
    SYNC_QUEUE_URL=http://127.0.0.1:9/q SEND_QUEUE_URL=http://127.0.0.1:9/s \
    LEADGEN_QUEUE_URL=http://127.0.0.1:9/l BUS_NAME=b KEY_ID=k THUMBNAIL_BUCKET=b RUST_LOG=error \
    valgrind --tool=callgrind --callgrind-out-file="$out/$bin.cg" "$target/$bin" \
    >/dev/null 2>"$out/$bin.log" || true
  n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/$bin.log")
  if [ -z "$n" ]; then
    echo "init instructions: $bin not counted (valgrind: $(tail -1 "$out/$bin.log"))"
    continue
  fi
  [ "$bin" = adtrail-hello ] && hello=$n
  ratio=$(awk "BEGIN { if (\"$hello\" != \"\") printf \"%.2fx the hello world\", $n / $hello }")
  printf 'init instructions %-24s %12s  %s\n' "$bin" "$n" "$ratio"
done
rm -rf "$out"
