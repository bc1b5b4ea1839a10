#!/usr/bin/env bash
# Builds the online learner for a Cortex-M4F, a Cortex-M3 (no FPU) and wasm32 + simd128,
# and the C firmware that calls it through capi/include/sgld_learner.h on both cores;
# runs them (QEMU's mps2-an386 and mps2-an385, wasmtime) and prints what they measured
# (the M3's lines prefixed `m3_`, the C firmware's `c_m4_` and `c_m3_`). Installs what it
# needs: Debian's Rust 1.96 with its library source (rustup cannot add targets here, so
# `core` is built from source with -Zbuild-std), LLVM 22's linkers, QEMU, binutils, GCC
# and newlib for ARM and binaryen (wasm-opt);
# wasmtime from PyPI into a throwaway virtual environment. Fails when a build warns or
# fails, a run fails, the accuracy drops below 0.89, a software f64 routine is reachable
# from the step, the header disagrees with the library or the C firmware on the M4F takes
# over 3% more instructions or flash than the Rust one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

need=()
[ -x /usr/bin/rustc ] && /usr/bin/rustc --version | grep -q ' 1\.9[6-9]\| 1\.[1-9][0-9][0-9]' || need+=(rustc-web cargo-web)
[ -d /usr/lib/rustlib/src/rust/library/core ] || need+=(rust-web-src)
[ -x /usr/lib/llvm-22/bin/ld.lld ] && [ -x /usr/lib/llvm-22/bin/wasm-ld ] || need+=(lld-22)
command -v qemu-system-arm >/dev/null || need+=(qemu-system-arm)
command -v arm-none-eabi-objdump >/dev/null || need+=(binutils-arm-none-eabi)
command -v arm-none-eabi-gcc >/dev/null || need+=(gcc-arm-none-eabi)
[ -f /usr/lib/arm-none-eabi/lib/libc_nano.a ] || need+=(libnewlib-arm-none-eabi)
command -v wasm-opt >/dev/null || need+=(binaryen)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    rustc-web cargo-web rust-web-src lld-22 qemu-system-arm binutils-arm-none-eabi binaryen \
    gcc-arm-none-eabi libnewlib-arm-none-eabi \
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
build thumbv7em-none-eabihf -p sgld-cortex-m4 -p sgld-c
build thumbv7m-none-eabi -p sgld-cortex-m4 -p sgld-c
build wasm32-unknown-unknown -p sgld-wasm
# The C functions on the host: their refusals, and the Rust learner's posterior exactly.
if ! /usr/bin/cargo test --release --locked -p sgld-c >target/test-sgld-c.log 2>&1; then
  cat target/test-sgld-c.log >&2
  echo "embedded: the C interface's tests failed" >&2
  exit 1
fi

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

# The C firmware (c/), linked against libsgld_c.a, on both cores; and the header checked
# against what the libraries export and the Rust constants.
cc_flags=(-O2 -std=c11 -Wall -Wextra -Werror -ffunction-sections -fdata-sections
  -ffp-contract=off -Icapi/include -nostartfiles --specs=nano.specs -T c/link.ld
  -Wl,--gc-sections -Wl,-z,noexecstack)
mkdir -p target/c
c_firmware() { # name, Rust target, gcc's CPU flags
  local name=$1 lib="target/$2/release/libsgld_c.a" log="target/c/build-$1.log"
  shift 2
  arm-none-eabi-nm -g --defined-only "$lib" >"target/c/nm-$name.txt" 2>/dev/null
  if ! arm-none-eabi-gcc "$@" "${cc_flags[@]}" c/startup.c c/stream.c c/learner.c "$lib" \
        -o "target/c/learner-$name" >"$log" 2>&1 ||
     ! arm-none-eabi-gcc "$@" "${cc_flags[@]}" c/startup.c c/stream.c c/baseline.c \
        -o "target/c/baseline-$name" >>"$log" 2>&1 || [ -s "$log" ]; then
    cat "$log" >&2
    echo "embedded: the C firmware for $name fails to build or warns" >&2
    exit 1
  fi
}
c_firmware m4 thumbv7em-none-eabihf -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16
c_firmware m3 thumbv7m-none-eabi -mcpu=cortex-m3 -mthumb -mfloat-abi=soft
python3 capi/check_header.py capi/include/sgld_learner.h capi/src/lib.rs target/c/nm-m4.txt target/c/nm-m3.txt
c_run() { # core, QEMU machine, QEMU CPU
  if ! timeout 900 qemu-system-arm -M "$2" -cpu "$3" -nographic \
      -semihosting-config enable=on,target=native -icount shift=0 -kernel "target/c/learner-$1" \
      >"target/c/learner-$1.out"; then
    cat "target/c/learner-$1.out"
    echo "embedded: the C firmware's $3 run failed (or its accuracy is below 0.89)" >&2
    exit 1
  fi
}
c_run m4 mps2-an386 cortex-m4
c_run m3 mps2-an385 cortex-m3
for core in m4 m3; do
  head -1 "target/c/learner-$core.out"
  sed -n "s/^\(accuracy\|instructions_per_example\|stack_bytes\): /c_${core}_\1: /p" \
    "target/c/learner-$core.out"
  echo "c_${core}_flash_bytes: $(( $(flash target/c/learner-$core) - $(flash target/c/baseline-$core) ))"
done
# The C way costs at most 3% over the Rust firmware on the M4F, in instructions and flash.
value() { sed -n "s/^$1: //p" "$2"; }
rust_i=$(value instructions_per_example target/learner.out)
c_i=$(value instructions_per_example target/c/learner-m4.out)
rust_f=$(( $(flash $m4/learner) - $(flash $m4/baseline) ))
c_f=$(( $(flash target/c/learner-m4) - $(flash target/c/baseline-m4) ))
if [ $(( c_i * 100 )) -gt $(( rust_i * 103 )) ] || [ $(( c_f * 100 )) -gt $(( rust_f * 103 )) ]; then
  echo "embedded: the C firmware takes over 3% more than the Rust one on the M4F" \
    "($c_i against $rust_i instructions, $c_f against $rust_f bytes of flash)" >&2
  exit 1
fi

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
