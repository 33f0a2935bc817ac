#!/usr/bin/python3
"""Checks that no layer of agate uses a higher one: every #include and every Bazel dependency
runs down (or sideways within a layer) the order declared in tools/layering/layers.txt.

Why a check: docs/ARCHITECTURE.md promises that data flows one way and no layer reaches back up;
without a check the first convenient include breaks it silently (core/compiler once called the
ONNX frontend). It reads the tree as text, so it needs no build and runs in seconds.

What it checks, for production code (tests may reach up: see below):
  - each `#include "..."` of a C/C++ file resolves (against the file's folder, the repository root
    and every Bazel `includes` root) to a file whose layer is not above the includer's;
  - each `deps`/`srcs`/`hdrs` label of a Bazel target names a package whose layer is not above the
    target's;
  - production code never uses test code (a `testing/` folder, a `*_test` file, a testonly target);
  - every folder with code belongs to a declared layer (a new folder must be placed in the order);
  - README.md's layout table and docs/ARCHITECTURE.md name every layer, and every folder the
    table names exists (the docs agree with the tree).
Test code (`*_test.*` files, `testing/` and `fuzz/` folders, cc_test/sh_test/testonly targets)
may use any layer: a runtime test may build its module with the compiler.

Usage: check_layers.py [--root DIR] [--layers FILE]; exit status 1 and one line per violation.
"""
import argparse
import os
import re
import subprocess
import sys

CODE_EXTENSIONS = (".h", ".hpp", ".c", ".cc", ".cpp")
TEST_FOLDERS = ("testing", "testdata", "fuzz")  # anywhere in a path
TEST_ROOTS = ("tests", "benchmarks")  # top-level folders whose code never ships
TEST_RULE_KINDS = ("cc_test", "sh_test", "py_test", "java_test", "go_test")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def load_layers(path):
    """Returns the declared folders, lowest first: [(folder, rank)]. Several folders on one
    line (separated by spaces) share a rank: they may use each other."""
    layers = []
    rank = 0
    with open(path) as f:
        for raw in f:
            fields = raw.split("#", 1)[0].split()
            if not fields:
                continue
            for folder in fields:
                layers.append((folder.rstrip("/"), rank))
            rank += 1
    return layers


class Layering:
    def __init__(self, layers):
        # Longest folder first, so that core/graph/passes wins over core/graph.
        self.layers = sorted(layers, key=lambda fr: -len(fr[0]))

    def layer_of(self, path):
        """(folder, rank) of the layer holding `path` (a file or folder), or None."""
        for folder, rank in self.layers:
            if folder == "." or path == folder or path.startswith(folder + "/"):
                return folder, rank
        return None


def is_test_path(path):
    parts = path.split("/")
    stem = os.path.splitext(parts[-1])[0]
    return (stem.endswith("_test") or parts[0] in TEST_ROOTS and len(parts) > 1 or
            any(p in TEST_FOLDERS for p in parts[:-1]))


def tracked_files(root):
    """Files git tracks plus untracked ones it does not ignore; every file when not a checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                             check=True, capture_output=True, text=True).stdout
        return sorted(p for p in out.splitlines() if os.path.isfile(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "bazel-"))]
            for name in filenames:
                files.append(os.path.relpath(os.path.join(dirpath, name), root))
        return sorted(files)


# ---- Bazel BUILD files, read by running them as Python with stand-ins for Starlark's rules.

class Target:
    def __init__(self, package, kind, attrs):
        self.package = package
        self.kind = kind
        self.name = attrs.get("name", "")
        self.testonly = bool(attrs.get("testonly", False))
        self.labels = []
        for attr in ("deps", "srcs", "hdrs", "tools", "actual"):
            value = attrs.get(attr, [])
            self.labels += [value] if isinstance(value, str) else list(value)
        # Its own files (srcs = ["include/agate/runtime.h"]): they place the target, not its package.
        self.files = [os.path.normpath(os.path.join(package, l)) for l in self.labels
                      if isinstance(l, str) and not l.startswith(("@", "//", ":"))]
        self.includes = list(attrs.get("includes", []))

    @property
    def is_test(self):
        return self.kind in TEST_RULE_KINDS or self.testonly or is_test_path(self.package + "/x")


class Select(list):
    """select({...}): every branch's values, as the union of all configurations."""


def read_build_file(root, package):
    path = os.path.join(root, package, "BUILD")
    with open(path) as f:
        text = f.read()
    targets = []

    def recorder(kind):
        def rule(*args, **attrs):
            targets.append(Target(package, kind, attrs))
        return rule

    def select(branches, **_):
        merged = Select()
        for value in branches.values():
            merged += value
        return merged

    env = {"glob": lambda *a, **k: [], "select": select, "load": lambda *a, **k: None,
           "package": lambda *a, **k: None, "exports_files": lambda *a, **k: None,
           "True": True, "False": False, "None": None}
    for name in set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*\(", text)):
        if name not in env and name not in dir(__builtins__):
            env[name] = recorder(name)
    exec(compile(text, path, "exec"), env)
    return targets


def label_package(label, package):
    """The package a label names, or None for external repositories (@...)."""
    if label.startswith("@"):
        return None
    if label.startswith("//"):
        return label[2:].split(":", 1)[0]
    if label.startswith(":"):
        return package
    # A file in this package (srcs = ["foo.cc"]).
    return package


# ---- The docs agree with the tree.

DOCS = ("README.md", "docs/ARCHITECTURE.md")
BACKTICKED = re.compile(r"`([^`\s]+)`")


def check_docs(root, layers):
    violations = []
    top = {folder.split("/")[0] for folder, _ in layers}
    for doc in DOCS:
        path = os.path.join(root, doc)
        if not os.path.exists(path):
            violations.append(f"{doc}: missing")
            continue
        with open(path) as f:
            text = f.read()
        for folder, _ in layers:
            if f"`{folder}`" not in text and f"`{folder}/" not in text:
                violations.append(f"{doc}: names no layer `{folder}` (tools/layering/layers.txt)")
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.startswith("| `"):
                continue
            for token in BACKTICKED.findall(line):
                if token.split("/")[0] in top and "/" in token and "." not in token and "{" not in token \
                        and not os.path.isdir(os.path.join(root, token)):
                    violations.append(f"{doc}:{lineno}: names `{token}`, which is no folder of the tree")
    return violations


# ---- The check.

def check(root, layers_path):
    declared = load_layers(layers_path)
    layering = Layering(declared)
    files = tracked_files(root)
    violations = check_docs(root, declared)

    def describe(layer):
        return layer[0]

    # Every folder with code or a BUILD file belongs to a layer (the root's BUILD holds no rule).
    for path in files:
        if path.endswith(CODE_EXTENSIONS) or os.path.basename(path) == "BUILD" and path != "BUILD":
            if layering.layer_of(path) is None:
                violations.append(f"{path}: its folder is in no layer of {os.path.relpath(layers_path, root)}")

    packages = sorted(os.path.dirname(p) for p in files if os.path.basename(p) == "BUILD")
    targets = []
    for package in packages:
        if package == "" or layering.layer_of(package) is None:
            continue
        try:
            targets += read_build_file(root, package)
        except Exception as e:  # a BUILD file this reader cannot run is itself a finding
            violations.append(f"{package}/BUILD: cannot be read ({type(e).__name__}: {e})")

    # Include roots: the repository root and every target's `includes` folders.
    include_roots = [""] + sorted({os.path.normpath(os.path.join(t.package, inc))
                                   for t in targets for inc in t.includes})
    file_set = set(files)
    test_targets = {(t.package, t.name) for t in targets if t.is_test}
    by_label = {(t.package, t.name): t for t in targets}

    def target_layer(t):
        """The highest layer among a target's own files; its package's layer when it has none."""
        ranks = [layering.layer_of(f) for f in t.files]
        ranks = [r for r in ranks if r is not None]
        return max(ranks, key=lambda r: r[1]) if ranks else layering.layer_of(t.package)

    def resolve(includer, name):
        for base in [os.path.dirname(includer)] + include_roots:
            candidate = os.path.normpath(os.path.join(base, name))
            if candidate in file_set:
                return candidate
        # Generated headers (e.g. runtime_minimal/schema/module_generated.h) are named from the root.
        if layering.layer_of(name) is not None and "/" in name:
            return name
        return None  # a system or external header

    for path in files:
        if not path.endswith(CODE_EXTENSIONS) or is_test_path(path):
            continue
        here = layering.layer_of(path)
        if here is None:
            continue
        with open(os.path.join(root, path), errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve(path, m.group(1))
                if target is None:
                    continue
                if is_test_path(target):
                    violations.append(f"{path}:{lineno}: production code includes test code {target}")
                    continue
                there = layering.layer_of(target)
                if there is not None and there[1] > here[1]:
                    violations.append(f"{path}:{lineno}: includes {target}: layer {describe(here)} "
                                      f"may not use the higher layer {describe(there)}")

    for t in targets:
        if t.is_test:
            continue
        here = target_layer(t)
        if here is None:
            continue
        for label in t.labels:
            if not isinstance(label, str):
                continue
            package = label_package(label, t.package)
            if package is None or package == t.package:
                continue
            name = label.split(":", 1)[1] if ":" in label else os.path.basename(package)
            where = f"{t.package}/BUILD: {t.kind} {t.name} uses {label}"
            if (package, name) in test_targets or is_test_path(package + "/x"):
                violations.append(f"{where}: production target depends on test code")
                continue
            dep = by_label.get((package, name))
            there = target_layer(dep) if dep is not None else layering.layer_of(package + "/" + name)
            if there is not None and there[1] > here[1]:
                violations.append(f"{where}: layer {describe(here)} may not use the higher layer {describe(there)}")
    return violations, len(files), len(targets)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    parser.add_argument("--layers", default=None, help="default: ROOT/tools/layering/layers.txt")
    args = parser.parse_args()
    layers = args.layers or os.path.join(args.root, "tools", "layering", "layers.txt")
    violations, nfiles, ntargets = check(args.root, layers)
    for v in violations:
        print(v)
    if violations:
        print(f"{len(violations)} layering violations ({nfiles} files, {ntargets} Bazel targets read)")
        return 1
    print(f"layering ok: {nfiles} files, {ntargets} Bazel targets, every include and dependency runs down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
