"""Runs the learner's WebAssembly module under wasmtime and measures it.

Drives the exported step the way a host would: for each of the 30,000 examples of the
module's built-in stream, `stream_next` writes the example into the index buffer and
`push` takes it. wasmtime's fuel (one unit per executed operation, give or take) is
read around each `push` alone, so the figure is the learner's cost per example.

Usage: python run.py MODULE.wasm
"""

import sys

import wasmtime

STREAM = 30_000
HELD_OUT = 5_000


def main(path: str) -> int:
    config = wasmtime.Config()
    config.consume_fuel = True
    engine = wasmtime.Engine(config)
    store = wasmtime.Store(engine)
    store.set_fuel(2**62)
    module = wasmtime.Module.from_file(engine, path)
    if module.imports:
        print(f"error: the module imports {[i.name for i in module.imports]}", file=sys.stderr)
        return 1
    ex = wasmtime.Instance(store, module, []).exports(store)
    init, push, stream_next, label = ex["init"], ex["push"], ex["stream_next"], ex["label"]
    if init(store, 2011) != 0:
        print("error: init failed", file=sys.stderr)
        return 1
    fuel = 0
    for _ in range(STREAM):
        n = stream_next(store)
        y = label(store)
        before = store.get_fuel()
        code = push(store, n, y)
        fuel += before - store.get_fuel()
        if code != 0:
            print(f"error: push returned {code}", file=sys.stderr)
            return 1
    # A bad example is refused (index 200 is past the 124 parameters).
    ex["memory"].write(store, bytes([200]), ex["indices"](store))
    if push(store, 1, 1.0) != -3:
        print("error: a bad example was accepted", file=sys.stderr)
        return 1
    correct = ex["held_out_correct"](store, HELD_OUT)
    permille = correct * 1000 // HELD_OUT
    print(f"wasm32 + simd128: {STREAM} examples, held-out accuracy 0.{permille:03}")
    print(f"fuel_per_example: {fuel // STREAM}")
    return 0 if permille >= 890 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
