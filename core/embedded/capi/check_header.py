#!/usr/bin/env python3
"""Checks include/sgld_learner.h against the library: the functions the header declares
are those libsgld_c.a exports, with the C types of their Rust signatures, and its
constants are the Rust ones.

    check_header.py HEADER LIB_RS NM_OUTPUT...

NM_OUTPUT: files of `nm` lines of the built static libraries. Prints what differs and
exits 1, or prints one line and exits 0."""

import re
import sys

# The C type of each Rust type the functions use.
C_TYPES = {
    "*mut SgldLearner": "sgld_learner *",
    "*const SgldLearner": "const sgld_learner *",
    "*const u8": "const uint8_t *",
    "*mut f32": "float *",
    "*const c_char": "const char *",
    "usize": "size_t",
    "u64": "uint64_t",
    "i32": "int",
    "f32": "float",
    "!": "void",
}
# The header's macro for each Rust constant.
CONSTANTS = {
    "DIM": "SGLD_LEARNER_DIM",
    "MAX_ACTIVE": "SGLD_LEARNER_MAX_ACTIVE",
}


def c_type(rust):
    rust = " ".join(rust.split())
    if rust not in C_TYPES:
        sys.exit(f"check_header: no C type for the Rust type {rust!r}")
    return C_TYPES[rust]


def norm(c):
    """A C type with one space before each `*` and none after."""
    c = re.sub(r"\s*\*\s*", " *", " ".join(c.split()))
    return c.strip()


def rust_functions(src):
    out = {}
    for m in re.finditer(r'extern "C" fn (sgld_\w+)\(([^)]*)\)(?:\s*->\s*([^{]+))?\{', src):
        name, args, ret = m.group(1), m.group(2), (m.group(3) or "()").strip()
        params = [a.split(":", 1)[1] for a in args.split(",") if ":" in a]
        out[name] = (norm(c_type(ret)), [norm(c_type(p)) for p in params])
    # The hook the firmware provides.
    m = re.search(r"fn (sgld_panic)\(\) -> !;", src)
    if m:
        out[m.group(1)] = ("void", [])
    return out


def header_functions(h):
    out = {}
    for m in re.finditer(r"^(?:SGLD_NORETURN\s+)?([\w\s\*]+?)\b(sgld_\w+)\(([^)]*)\);", h, re.M):
        ret, name, args = m.group(1), m.group(2), m.group(3)
        params = []
        for a in args.split(","):
            a = " ".join(a.split())
            if a in ("", "void"):
                continue
            params.append(norm(re.sub(r"\w+$", "", a)))
        out[name] = (norm(ret), params)
    return out


def main():
    header_path, lib_rs, *nm_files = sys.argv[1:]
    h = open(header_path).read()
    src = open(lib_rs).read()
    problems = []

    rust = rust_functions(src)
    declared = header_functions(h)
    if rust != declared:
        for name in sorted(set(rust) | set(declared)):
            if rust.get(name) != declared.get(name):
                problems.append(f"{name}: Rust {rust.get(name)}, header {declared.get(name)}")

    exported_fns = {n for n in rust if n != "sgld_panic"}
    for path in nm_files:
        syms = set(re.findall(r"^\S*\s*T (sgld_\w+)$", open(path).read(), re.M))
        if syms != exported_fns:
            problems.append(f"{path}: exports {sorted(syms)}, the header declares {sorted(exported_fns)}")

    defines = dict(re.findall(r"^#define (SGLD_\w+) \(?(-?\d+)\)?", h, re.M))
    for name, macro in CONSTANTS.items():
        m = re.search(rf"pub const {name}: usize = (\w+);", src)
        value = {"D": "124"}.get(m.group(1), m.group(1)) if m else None
        if defines.get(macro) != value:
            problems.append(f"{macro}: header {defines.get(macro)}, Rust {value}")
    for name, value in re.findall(r"pub const (SGLD_\w+): i32 = (-?\d+);", src):
        if defines.get(name) != value:
            problems.append(f"{name}: header {defines.get(name)}, Rust {value}")
    m = re.search(r"LEARNER_BYTES: usize = if cfg!\(target_pointer_width = \"32\"\) \{\s*(\d+)\s*\} else \{\s*(\d+)", src)
    sizes = re.findall(r"#define SGLD_LEARNER_BYTES (\d+)", h)
    if not m or sizes != [m.group(1), m.group(2)]:
        problems.append(f"SGLD_LEARNER_BYTES: header {sizes}, Rust {m.groups() if m else None}")
    if "D: usize = 124" not in open(lib_rs.replace("capi/src/lib.rs", "learner/src/lib.rs")).read():
        problems.append("the learner's D is no longer 124: update SGLD_LEARNER_DIM and this check")

    if problems:
        print("the header disagrees with the library:", *problems, sep="\n  ", file=sys.stderr)
        sys.exit(1)
    print(f"header: {len(declared)} functions and {len(defines)} constants match the library")


if __name__ == "__main__":
    main()
