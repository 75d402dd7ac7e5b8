#!/usr/bin/env python3
"""The layering of src/ as a checked fact (ARCHITECTURE.md, "Layers").

The layers and what each may use are read from CMakeLists.txt: every
`orch_layer(NAME DEPS ...)` call, whose orch_* dependencies are the layers right
below NAME (the build refuses a dependency on a layer declared after it, so the
graph has no cycle). A layer may include its own headers, those of the layers
below it (transitively), the public API ("orch/...") and, in its tests, the
test support ("testing/...").

Checked here:
  1. every `#include "LAYER/..."` of every file under src/ and include/orch/
     names a layer the file's layer may use (include/orch/ may name none): a
     header that only layers above include still may not reach above its own;
  2. with a build folder (second argument, configured with
     CMAKE_EXPORT_COMPILE_COMMANDS), that the compiler sees exactly that: a
     probe preprocessed with each layer library's own flags finds the headers of
     the layers below it and of itself, and of no other layer. Each layer
     exposes its headers only to the targets that link it (CMakeLists.txt), so
     an include that points up does not compile.

Usage: layering_test.py SOURCE_DIR [BUILD_DIR]   (exit 0: the layering holds)
"""

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"', re.M)
LAYER_RE = re.compile(r"^\s*orch_layer\(\s*(\w+)((?:[^()]|\([^()]*\))*)\)", re.M)
# Folders of "LAYER/..." includes that are not layers of src/.
NOT_LAYERS = {"orch", "testing"}


def read_layers(source_dir):
    """{layer: [the orch layers it names in DEPS]}, in the order of CMakeLists.txt."""
    with open(os.path.join(source_dir, "CMakeLists.txt"), encoding="utf-8") as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    layers = {}
    for m in LAYER_RE.finditer(text):
        name, args = m.group(1), m.group(2).split()
        deps = args[args.index("DEPS") + 1:] if "DEPS" in args else []
        layers[name] = [d[len("orch_"):] for d in deps if d.startswith("orch_")]
    return layers


def closure(layers):
    """{layer: the set of layers it may use, itself included}; problems for unknown or upward deps."""
    allowed, problems = {}, []
    for name, deps in layers.items():  # declaration order: every dep is already known
        seen = {name}
        for dep in deps:
            if dep not in allowed:
                problems.append(f"CMakeLists.txt: layer {name} depends on orch_{dep}, "
                                f"which is not a layer declared before it")
                continue
            seen |= allowed[dep]
        allowed[name] = seen
    return allowed, problems


def check_sources(source_dir, layers, allowed):
    problems = []
    src = os.path.join(source_dir, "src")
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for folder in folders:
        if folder not in layers:
            problems.append(f"src/{folder}/ is not a layer of CMakeLists.txt (orch_layer)")
    targets = [(f"src/{f}", f, allowed.get(f, {f})) for f in folders]
    targets.append(("include/orch", None, set()))
    for rel, layer, may_use in targets:
        top = os.path.join(source_dir, rel)
        for root, _, files in os.walk(top):
            for file in sorted(files):
                if not file.endswith((".h", ".cc")):
                    continue
                path = os.path.join(root, file)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE_RE.finditer(text):
                    target = m.group(1)
                    if target in NOT_LAYERS or target not in layers:
                        continue
                    if target in may_use:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    where = os.path.relpath(path, source_dir)
                    if layer is None:
                        problems.append(f"{where}:{line}: the public API includes {target}/, a layer's "
                                        f"private header")
                    else:
                        problems.append(f"{where}:{line}: layer {layer} includes {target}/, which is not "
                                        f"below it (it may use: {', '.join(sorted(may_use))})")
    return problems


def probe_header(source_dir, layer):
    folder = os.path.join(source_dir, "src", layer)
    headers = sorted(f for f in os.listdir(folder) if f.endswith(".h"))
    return f"{layer}/{headers[0]}" if headers else None


def check_build(source_dir, build_dir, layers, allowed):
    """Preprocesses a probe with each layer's compile flags: which layers' headers it finds."""
    path = os.path.join(build_dir, "compile_commands.json")
    if not os.path.exists(path):
        return [f"{path}: missing (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)"]
    with open(path, encoding="utf-8") as f:
        commands = json.load(f)
    probes = {layer: probe_header(source_dir, layer) for layer in layers}
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.cc")
        with open(probe, "w", encoding="utf-8") as f:
            for layer, header in probes.items():
                if header:
                    f.write(f'#if __has_include("{header}")\norch_layer_visible_{layer}\n#endif\n')
        for layer in layers:
            marker = f"CMakeFiles/orch_{layer}.dir/"
            entry = next((c for c in commands if marker in c.get("output", "") or
                          marker in c.get("command", "")), None)
            if entry is None:
                problems.append(f"{path}: no compile command of orch_{layer}")
                continue
            argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
            flags, skip = [], False
            for arg in argv[1:]:
                if skip:
                    skip = False
                    continue
                if arg in ("-o", "-c", "-MF", "-MT", "-MQ"):
                    skip = True
                    continue
                if arg in ("-MD", "-MMD") or arg == entry["file"] or arg.endswith((".cc", ".cxx")):
                    continue
                flags.append(arg)
            run = subprocess.run([argv[0], *flags, "-E", "-P", probe], cwd=entry["directory"],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                problems.append(f"orch_{layer}: the probe did not preprocess: {run.stderr.strip()}")
                continue
            visible = set(re.findall(r"orch_layer_visible_(\w+)", run.stdout))
            expected = {l for l in allowed[layer] if probes.get(l)}
            for extra in sorted(visible - expected):
                problems.append(f"orch_{layer}: sees the headers of {extra}/, which is not below it "
                                f"(an include directory exposes more than the layers it links)")
            for missing in sorted(expected - visible):
                problems.append(f"orch_{layer}: does not see {probes[missing]}, though it links orch_{missing}")
    return problems


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    source_dir = sys.argv[1]
    layers = read_layers(source_dir)
    if not layers:
        print("CMakeLists.txt: no orch_layer() call found", file=sys.stderr)
        return 1
    allowed, problems = closure(layers)
    problems += check_sources(source_dir, layers, allowed)
    if len(sys.argv) == 3:
        problems += check_build(source_dir, sys.argv[2], layers, allowed)
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    if problems:
        return 1
    order = " < ".join(layers)
    print(f"ok: {len(layers)} layers ({order}); every include points to a layer below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
