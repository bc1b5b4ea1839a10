#!/usr/bin/env bash
# Builds the online learner for a Cortex-M4F, a Cortex-M3 (no FPU) and wasm32 + simd128,
# runs them (QEMU's mps2-an386 and mps2-an385, wasmtime) and prints what they measured
# (the M3's lines prefixed `m3_`). Installs what it needs:
# Debian's Rust 1.96 with its library source (rustup cannot add targets here, so `core`
# is built from source with -Zbuild-std), LLVM 22's linkers, QEMU, binutils for ARM and
# binaryen (wasm-opt);
# wasmtime from PyPI into a throwaway virtual environment. Fails when a build warns or
# fails, a run fails, the accuracy drops below 0.89 or a software f64 routine is
# reachable from the step.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

need=()
[ -x /usr/bin/rustc ] && /usr/bin/rustc --version | grep -q ' 1\.9[6-9]\| 1\.[1-9][0-9][0-9]' || need+=(rustc-web cargo-web)
[ -d /usr/lib/rustlib/src/rust/library/core ] || need+=(rust-web-src)
[ -x /usr/lib/llvm-22/bin/ld.lld ] && [ -x /usr/lib/llvm-22/bin/wasm-ld ] || need+=(lld-22)
command -v qemu-system-arm >/dev/null || need+=(qemu-system-arm)
command -v arm-none-eabi-objdump >/dev/null || need+=(binutils-arm-none-eabi)
command -v wasm-opt >/dev/null || need+=(binaryen)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    rustc-web cargo-web rust-web-src lld-22 qemu-system-arm binutils-arm-none-eabi binaryen \
    >/dev/null
fi

# Debian's toolchain by full path (rustup's comes first on PATH), with its own cargo home.
export CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
export CARGO_HOME="$here/target/cargo-home"
export CARGO_TARGET_THUMBV7EM_NONE_EABIHF_LINKER=/usr/lib/llvm-22/bin/ld.lld
export CARGO_TARGET_THUMBV7M_NONE_EABI_LINKER=/usr/lib/llvm-22/bin/ld.lld
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/lib/llvm-22/bin/wasm-ld
unset RUSTFLAGS CARGO_TARGET_DIR CARGO_BUILD_TARGET RUSTUP_TOOLCHAIN
mkdir -p target

build() {
  local log="target/build-$1.log"
  if ! /usr/bin/cargo build --release --locked -Zbuild-std=core --target "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "embedded: the $1 build failed" >&2
    exit 1
  fi
  if grep -q '^warning' "$log"; then
    cat "$log" >&2
    echo "embedded: the $1 build warns" >&2
    exit 1
  fi
}
build thumbv7em-none-eabihf -p sgld-cortex-m4
build thumbv7m-none-eabi -p sgld-cortex-m4
build wasm32-unknown-unknown -p sgld-wasm

m4=target/thumbv7em-none-eabihf/release
run_m4() {
  timeout 600 qemu-system-arm -M mps2-an386 -cpu cortex-m4 -nographic \
    -semihosting-config enable=on,target=native -icount shift=0 -kernel "$m4/$1"
}
run_m4 baseline >target/baseline.out || { cat target/baseline.out; echo "embedded: the baseline run failed" >&2; exit 1; }
if ! run_m4 learner >target/learner.out; then
  cat target/learner.out
  echo "embedded: the Cortex-M4F run failed (or its accuracy is below 0.89)" >&2
  exit 1
fi
cat target/learner.out

# Flash: code and read-only data above the baseline image (the same stream, counters and
# output without sgld). Static memory: everything in .data and .bss.
section() { arm-none-eabi-size -A "$1" | awk -v s="$2" '$1 == s { print $2 }'; }
flash() { echo $(( $(section "$1" .text) + $(section "$1" .rodata) + $(section "$1" .data) )); }
echo "flash_bytes: $(( $(flash $m4/learner) - $(flash $m4/baseline) ))"
echo "static_bytes: $(( $(section $m4/learner .data) + $(section $m4/learner .bss) ))"

# The same firmware on a Cortex-M3 (mps2-an385): f32 in software.
m3=target/thumbv7m-none-eabi/release
if ! timeout 900 qemu-system-arm -M mps2-an385 -cpu cortex-m3 -nographic \
    -semihosting-config enable=on,target=native -icount shift=0 -kernel "$m3/learner" \
    >target/learner-m3.out; then
  cat target/learner-m3.out
  echo "embedded: the Cortex-M3 run failed (or its accuracy is below 0.89)" >&2
  exit 1
fi
head -1 target/learner-m3.out
sed -n 's/^\(accuracy\|instructions_per_example\|stack_bytes\): /m3_\1: /p' target/learner-m3.out
echo "m3_flash_bytes: $(( $(flash $m3/learner) - $(flash $m3/baseline) ))"

arm-none-eabi-objdump -d --no-show-raw-insn "$m4/learner" >target/learner.dis
python3 softfloat.py target/learner.dis

if [ ! -x target/venv/bin/python ] || ! target/venv/bin/python -c 'import wasmtime' 2>/dev/null; then
  python3 -m venv target/venv
  target/venv/bin/pip install -q --disable-pip-version-check wasmtime==50.0.1
fi
# binaryen's optimiser over the linked module, as wasm-pack runs it by default: fewer
# local moves than LLVM's output (the features are those the module uses).
wasm=target/wasm32-unknown-unknown/release/sgld_wasm.wasm
wasm-opt -O3 --enable-simd --enable-bulk-memory --enable-sign-ext \
  --enable-nontrapping-float-to-int --enable-mutable-globals --enable-multivalue \
  "$wasm" -o target/sgld_wasm.opt.wasm
target/venv/bin/python wasm/run.py target/sgld_wasm.opt.wasm
