"""Fails when a software f64 routine is reachable from the learner's step.

Reads `objdump -d` of the Cortex-M4F firmware, builds the graph of direct calls and
branches between functions (`bl`, `b`, `b.w` and conditional branches to another
function's symbol), walks it from `Device::learn` (one arriving example: the window,
the batch, the step, the noise and the estimate), and looks for the compiler's
double-precision routines: `__adddf3`, `__muldf3`, `__divdf3`, the conversions and the
comparisons, under their GNU or ARM EABI names. An indirect call (`blx rN`) cannot be
followed and is reported as a failure too, so nothing escapes the check.

Usage: python softfloat.py DISASSEMBLY.txt
"""

import re
import sys

SOFT_F64 = re.compile(
    r"^(__aeabi_(dadd|dsub|drsub|dmul|ddiv|dneg|dcmp\w*|cdcmp\w*|cdrcmp\w*|d2\w+|f2d|i2d|ui2d|l2d|ul2d)"
    r"|__\w*df\d?|__\w*df\w*2)$"
)
ENTRY = re.compile(r"Device5learn")


def main(path: str) -> int:
    calls: dict[str, set[str]] = {}
    current = None
    indirect: set[str] = set()
    for line in open(path, encoding="utf-8", errors="replace"):
        head = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if head:
            current = head.group(1)
            calls.setdefault(current, set())
            continue
        if current is None:
            continue
        op = re.search(r"\t(bl|blx|b|b\.w|b\.n|b[a-z]{2}(\.w|\.n)?)\t(\S+)(?: <([^>+]+))?", line)
        if not op:
            continue
        if op.group(1) in ("blx", "bl") and op.group(4) is None and op.group(3).startswith("r"):
            indirect.add(current)
        elif op.group(4) and op.group(4) != current:
            calls[current].add(op.group(4))
    roots = [f for f in calls if ENTRY.search(f)]
    if not roots:
        print("softfloat: Device::learn not found in the disassembly", file=sys.stderr)
        return 1
    seen, stack = set(roots), list(roots)
    while stack:
        for g in calls.get(stack.pop(), ()):
            if g not in seen:
                seen.add(g)
                stack.append(g)
    soft = sorted(f for f in seen if SOFT_F64.match(f))
    blind = sorted(seen & indirect)
    print(f"softfloat: {len(seen)} functions reachable from the step; "
          f"software f64 routines among them: {', '.join(soft) or 'none'}")
    if blind:
        print(f"softfloat: indirect calls in {blind}", file=sys.stderr)
    return 1 if soft or blind else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
