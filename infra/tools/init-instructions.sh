#!/usr/bin/env bash
# Instructions each function runs from exec to its first call to the Lambda
# runtime API, as a ratio to the hello world's: nearly the same count run
# after run, whatever else the machine is doing (within about 1%, as the
# runtime's threads start and park a little differently each time), so it
# backs `make bench`'s init-time medians on a noisy machine. A stand-in runtime API accepts the
# call and hangs up; the few instructions of the exit that follows are
# counted too, alike for every binary. Two passes, each where its tool is
# installed:
#
# - the machine's own (`uname -m`): the release binaries built for it
#   (`cargo build --release -p <function>`), counted by valgrind's callgrind;
# - arm64: the binaries Lambda runs (`make build-lambdas`:
#   `$CARGO_TARGET_DIR/lambda/<function>/bootstrap`), run by qemu-user
#   (`qemu-aarch64`, with an arm64 C library under `ADTRAIL_ARM64_SYSROOT`,
#   by default Debian's `libc6-arm64-cross` at /usr/aarch64-linux-gnu) one
#   instruction a translated block (`-one-insn-per-tb`), each block's execution
#   logged (`-d nochain,exec`) and the lines counted. An emulator counts the
#   instructions, not the time: it says how much work init does on arm64,
#   not how long Lambda's hardware takes to do it.
#
# Usage: infra/tools/init-instructions.sh (after `make bench`).
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
sysroot="${ADTRAIL_ARM64_SYSROOT:-/usr/aarch64-linux-gnu}"
host=$(uname -m)
bins="adtrail-hello adtrail-api adtrail-dispatcher adtrail-sync-worker adtrail-sweeper
  adtrail-capi-sender adtrail-leadgen-worker"
have_valgrind=$(command -v valgrind || true)
have_qemu=$(command -v qemu-aarch64 || true)
[ -d "$sysroot" ] || have_qemu=""
if [ -z "$have_valgrind$have_qemu" ]; then
  echo "init instructions: not counted (neither valgrind nor qemu-aarch64 with an arm64 C library is installed)"
  exit 0
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(8)
while True:
    c, _ = s.accept(); c.close()
" &
runtime=$!
out=$(mktemp -d)
trap 'kill $runtime 2>/dev/null || true; rm -rf "$out"' EXIT

# Runs "$@" (the counting tool and the binary) in the environment Lambda
# gives a function, with the function's own variables.
as_lambda() {
  local bin=$1
  shift
  env -i AWS_LAMBDA_RUNTIME_API="127.0.0.1:$port" AWS_LAMBDA_FUNCTION_NAME="$bin" \
    AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing TABLE_NAME=t \
    SYNC_QUEUE_URL=http://127.0.0.1:9/q SEND_QUEUE_URL=http://127.0.0.1:9/s \
    LEADGEN_QUEUE_URL=http://127.0.0.1:9/l BUS_NAME=b KEY_ID=k THUMBNAIL_BUCKET=b RUST_LOG=error \
    "$@"
}

# Prints one binary's count and its ratio to the pass's hello world (the
# first binary of each pass; no ratio when the hello world was not counted).
hello=""
report() {
  local arch=$1 bin=$2 n=$3
  [ "$bin" = adtrail-hello ] && hello=$n
  ratio=$(awk "BEGIN { if (\"$hello\" != \"\") printf \"%.2fx the hello world\", $n / $hello }")
  printf 'init instructions %-7s %-24s %12s  %s\n' "$arch" "$bin" "$n" "$ratio"
}

if [ -n "$have_valgrind" ]; then
  hello=""
  for bin in $bins; do
    file="$target/release/$bin"
    if [ ! -x "$file" ]; then
      echo "init instructions $host: $bin not built (cargo build --release -p $bin)"
      continue
    fi
    as_lambda "$bin" valgrind --tool=callgrind --callgrind-out-file="$out/$bin.cg" "$file" \
      >/dev/null 2>"$out/$bin.log" || true
    n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/$bin.log")
    if [ -z "$n" ]; then
      echo "init instructions $host: $bin not counted (valgrind: $(tail -1 "$out/$bin.log"))"
      continue
    fi
    report "$host" "$bin" "$n"
  done
else
  echo "init instructions $host: valgrind is not installed, not counted"
fi

if [ -n "$have_qemu" ]; then
  hello=""
  # One instruction a translated block: `-one-insn-per-tb` since QEMU 8.1,
  # `-singlestep` before it (removed in 9.0).
  one_insn=-singlestep
  case "$(qemu-aarch64 -h 2>&1 || true)" in *one-insn-per-tb*) one_insn=-one-insn-per-tb ;; esac
  for bin in $bins; do
    file="$target/lambda/$bin/bootstrap"
    if [ ! -x "$file" ]; then
      echo "init instructions arm64: $bin not built (make build-lambdas)"
      continue
    fi
    # The log goes through a pipe: a file would hold a line an instruction.
    rm -f "$out/exec"
    mkfifo "$out/exec"
    grep -c '^Trace ' <"$out/exec" >"$out/$bin.count" &
    counter=$!
    # A writer of the script's own, so the count ends when qemu does even
    # if qemu stops before it opens the log.
    exec 4>"$out/exec"
    as_lambda "$bin" qemu-aarch64 -L "$sysroot" "$one_insn" -d nochain,exec -D "$out/exec" "$file" \
      >/dev/null 2>"$out/$bin.log" || true
    exec 4>&-
    wait "$counter" || true
    n=$(cat "$out/$bin.count")
    if [ -z "$n" ] || [ "$n" = 0 ]; then
      echo "init instructions arm64: $bin not counted (qemu: $(tail -1 "$out/$bin.log"))"
      continue
    fi
    report arm64 "$bin" "$n"
  done
else
  echo "init instructions arm64: qemu-aarch64 or the arm64 C library ($sysroot) is not installed, not counted"
fi
