#!/usr/bin/env bash
# Builds the online learner for a Cortex-M4F, a Cortex-M3 and an RV32IMAC core (the last
# two without an FPU) and wasm32 + simd128, and the C firmware that calls it through
# capi/include/sgld_learner.h on both Arm cores; runs them (QEMU's mps2-an386, mps2-an385
# and virt; wasmtime) and prints what they measured (the M3's lines prefixed `m3_`, the
# RISC-V core's `rv32_`, the C firmware's `c_m4_` and `c_m3_`). Installs what it needs:
# Debian's Rust 1.96 with its library source (rustup cannot add targets here, so `core`
# is built from source with -Zbuild-std), LLVM 22's linkers, QEMU, binutils, GCC and
# newlib for Arm and binaryen (wasm-opt); wasmtime from PyPI into a throwaway virtual
# environment. Fails when a build warns or fails, a run fails, the accuracy drops below
# 0.89, a software f64 routine is reachable from the step, the header disagrees with the
# library or the C firmware on the M4F takes over 3% more instructions or flash than the
# Rust one. `run.sh --install-only` installs what is missing and stops there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

need=()
[ -x /usr/bin/rustc ] && /usr/bin/rustc --version | grep -q ' 1\.9[6-9]\| 1\.[1-9][0-9][0-9]' || need+=(rustc-web cargo-web)
[ -d /usr/lib/rustlib/src/rust/library/core ] || need+=(rust-web-src)
[ -x /usr/lib/llvm-22/bin/ld.lld ] && [ -x /usr/lib/llvm-22/bin/wasm-ld ] || need+=(lld-22)
command -v qemu-system-arm >/dev/null || need+=(qemu-system-arm)
command -v qemu-system-riscv32 >/dev/null || need+=(qemu-system-misc)
command -v arm-none-eabi-objdump >/dev/null || need+=(binutils-arm-none-eabi)
command -v arm-none-eabi-gcc >/dev/null || need+=(gcc-arm-none-eabi)
[ -f /usr/lib/arm-none-eabi/lib/libc_nano.a ] || need+=(libnewlib-arm-none-eabi)
command -v wasm-opt >/dev/null || need+=(binaryen)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    rustc-web cargo-web rust-web-src lld-22 qemu-system-arm qemu-system-misc binutils-arm-none-eabi binaryen \
    gcc-arm-none-eabi libnewlib-arm-none-eabi \
    >/dev/null
fi
mkdir -p target
if [ ! -x target/venv/bin/python ] || ! target/venv/bin/python -c 'import wasmtime' 2>/dev/null; then
  python3 -m venv target/venv
  target/venv/bin/pip install -q --disable-pip-version-check wasmtime==50.0.1
fi
[ "${1:-}" = --install-only ] && exit 0

# Debian's toolchain by full path (rustup's comes first on PATH), with its own cargo home.
export CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
export CARGO_HOME="$here/target/cargo-home"
export CARGO_TARGET_THUMBV7EM_NONE_EABIHF_LINKER=/usr/lib/llvm-22/bin/ld.lld
export CARGO_TARGET_THUMBV7M_NONE_EABI_LINKER=/usr/lib/llvm-22/bin/ld.lld
export CARGO_TARGET_RISCV32IMAC_UNKNOWN_NONE_ELF_LINKER=/usr/lib/llvm-22/bin/ld.lld
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/lib/llvm-22/bin/wasm-ld
unset RUSTFLAGS CARGO_TARGET_DIR CARGO_BUILD_TARGET RUSTUP_TOOLCHAIN

# build <name> <cargo's arguments…>: a cross build whose log must hold no warning but
# cargo's own notes that it retried a download (a slow network is not a defect).
build() {
  local name=$1 log="target/build-$1.log"
  shift
  if ! /usr/bin/cargo build --release --locked -Zbuild-std=core "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "embedded: the $name build failed" >&2
    exit 1
  fi
  if [ -n "$(grep '^warning' "$log" | grep -v '^warning: spurious network error' || true)" ]; then
    cat "$log" >&2
    echo "embedded: the $name build warns" >&2
    exit 1
  fi
}
# The C functions on the host: their refusals, and the Rust learner's posterior exactly;
# again with the fixed-point learner a core without an FPU gets (`sgld_soft_float`). In
# their own target directories, beside the cross builds: each of those ends in a
# single-threaded link-time optimisation that leaves a core free.
(
  CARGO_TARGET_DIR=target/host /usr/bin/cargo test --release --locked -p sgld-c &&
  RUSTFLAGS="--cfg sgld_soft_float" CARGO_TARGET_DIR=target/host-soft-float \
    /usr/bin/cargo test --release --locked -p sgld-c
) >target/test-sgld-c.log 2>&1 &
host_tests=$!
# Both Arm cores in one invocation, so that their builds overlap.
build arm --target thumbv7em-none-eabihf --target thumbv7m-none-eabi -p sgld-firmware -p sgld-c
build riscv32imac --target riscv32imac-unknown-none-elf -p sgld-firmware
build wasm32 --target wasm32-unknown-unknown -p sgld-wasm
if ! wait "$host_tests"; then
  cat target/test-sgld-c.log >&2
  echo "embedded: the C interface's tests failed" >&2
  exit 1
fi

# qemu <what> <output> <qemu-system-…> <its arguments…>: runs a firmware image under
# QEMU, counting one instruction a nanosecond, or shows what it printed and fails.
qemu() {
  local what=$1 out=$2 system=$3
  shift 3
  if ! timeout 900 "$system" -nographic -semihosting-config enable=on,target=native \
      -icount shift=0 "$@" >"$out"; then
    cat "$out"
    echo "embedded: the $what run failed (or its accuracy is below 0.89)" >&2
    exit 1
  fi
}
# Flash: code and read-only data above the baseline image (the same stream, counters and
# output without sgld). Static memory: everything in .data and .bss.
section() { arm-none-eabi-size -A "$1" | awk -v s="$2" '$1 == s { print $2 }'; }
flash() { echo $(( $(section "$1" .text) + $(section "$1" .rodata) + $(section "$1" .data) )); }
# prefixed <prefix> <output>: the output's figures with a prefix.
prefixed() {
  head -1 "$2"
  sed -n "s/^\(accuracy\|instructions_per_example\|stack_bytes\): /$1\1: /p" "$2"
}

m4=target/thumbv7em-none-eabihf/release
arm_m4=(qemu-system-arm -M mps2-an386 -cpu cortex-m4)
qemu "Cortex-M4F baseline" target/baseline.out "${arm_m4[@]}" -kernel "$m4/baseline"
qemu "Cortex-M4F" target/learner.out "${arm_m4[@]}" -kernel "$m4/learner"
cat target/learner.out
echo "flash_bytes: $(( $(flash $m4/learner) - $(flash $m4/baseline) ))"
echo "static_bytes: $(( $(section $m4/learner .data) + $(section $m4/learner .bss) ))"

# The same firmware on a Cortex-M3 (mps2-an385): f32 in software.
m3=target/thumbv7m-none-eabi/release
arm_m3=(qemu-system-arm -M mps2-an385 -cpu cortex-m3)
qemu "Cortex-M3" target/learner-m3.out "${arm_m3[@]}" -kernel "$m3/learner"
prefixed m3_ target/learner-m3.out
echo "m3_flash_bytes: $(( $(flash $m3/learner) - $(flash $m3/baseline) ))"

# The same firmware on an RV32IMAC core (QEMU's virt, machine mode): f32 in software,
# instructions counted by `minstret`.
rv32=target/riscv32imac-unknown-none-elf/release
qemu "RV32IMAC" target/learner-rv32.out qemu-system-riscv32 -M virt -bios none -kernel "$rv32/learner"
prefixed rv32_ target/learner-rv32.out
echo "rv32_flash_bytes: $(( $(flash $rv32/learner) - $(flash $rv32/baseline) ))"

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
qemu "C firmware's Cortex-M4F" target/c/learner-m4.out "${arm_m4[@]}" -kernel target/c/learner-m4
qemu "C firmware's Cortex-M3" target/c/learner-m3.out "${arm_m3[@]}" -kernel target/c/learner-m3
for core in m4 m3; do
  prefixed "c_${core}_" "target/c/learner-$core.out"
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

# binaryen's optimiser over the linked module, as wasm-pack runs it by default: fewer
# local moves than LLVM's output (the features are those the module uses).
wasm=target/wasm32-unknown-unknown/release/sgld_wasm.wasm
wasm-opt -O3 --enable-simd --enable-bulk-memory --enable-sign-ext \
  --enable-nontrapping-float-to-int --enable-mutable-globals --enable-multivalue \
  "$wasm" -o target/sgld_wasm.opt.wasm
target/venv/bin/python wasm/run.py target/sgld_wasm.opt.wasm
