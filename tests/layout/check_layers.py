#!/usr/bin/env python3
"""The source tree's layering, checked (docs/architecture.md, "Layout").

usage: check_layers.py SOURCE_DIR OBJECT_DIR [NM]

Layers, in the order data flows (a file may use its own layer and the ones before it):
  core -> model -> planner/base -> planner/strategies -> planner/bounds -> planner/search
  -> planner (front door, validator) -> schedule -> placement -> planfile -> backends -> pool -> report -> tools

Checks, each failing with the offending file and line:
  1. includes: no file includes an internal header (or a public header of
     include/tangram/) of a later layer;
  2. calls: from the library's object files (OBJECT_DIR: CMake's tangram.dir), no file
     calls a function defined in a later layer, and no two files of the library depend on
     each other in a circle (a strongly connected component of more than one file), where a
     file depends on the files it calls and on the file that defines most of what a header it
     includes declares.
Exit status 0 when every check passes, 1 otherwise.
"""
import os
import re
import subprocess
import sys

LAYERS = ["core", "model", "planner/base", "planner/strategies", "planner/bounds",
          "planner/search", "planner", "schedule", "placement", "planfile", "backends", "pool", "report", "tools"]

# Public headers, by the layer that implements them.
PUBLIC = {
    "status.h": "core", "allocator.h": "core", "records.h": "core", "range.h": "core",
    "graph.h": "model", "model.h": "model", "layout.h": "model", "op_class.h": "model",
    "planner.h": "planner/base", "range_plan.h": "planner",
    "schedule.h": "schedule", "order.h": "schedule",
    "plan_file.h": "planfile", "placement.h": "placement",
    "backend.h": "backends", "hetero.h": "backends", "speed.h": "backends",
    "pool.h": "pool",
    "report.h": "report", "profile.h": "report",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """Index of the layer of a repository-relative path, or None outside the library."""
    best = None
    for i, name in enumerate(LAYERS):
        if path == name or path.startswith(name + "/"):
            if best is None or len(name) > len(LAYERS[best]):
                best = i
    return best


def header_layer(inc, src_dir, including):
    if inc.startswith("tangram/"):
        name = inc[len("tangram/"):]
        if name not in PUBLIC:
            return None  # a backend's own public header (opencl.h, ...): its layer's
        return LAYERS.index(PUBLIC[name])
    for base in (os.path.dirname(including), ""):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(src_dir, cand)):
            return layer_of(cand)
    return None  # generated or system headers


def check_includes(src_dir):
    errors = []
    for top in ["core", "model", "planner", "schedule", "placement", "planfile", "backends", "pool", "report", "tools"]:
        for root, _, files in os.walk(os.path.join(src_dir, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".inc")):
                    continue
                rel = os.path.relpath(os.path.join(root, f), src_dir)
                mine = layer_of(rel)
                with open(os.path.join(src_dir, rel), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        theirs = header_layer(m.group(1), src_dir, rel)
                        if theirs is not None and mine is not None and theirs > mine:
                            errors.append(f"{rel}:{n}: includes \"{m.group(1)}\" of layer "
                                          f"{LAYERS[theirs]}, later than {LAYERS[mine]}")
    return errors


def includes_of(src_dir, rel):
    """Repository-relative paths of the project headers `rel` includes (those that exist)."""
    out = []
    with open(os.path.join(src_dir, rel), encoding="utf-8") as fh:
        for line in fh:
            m = INCLUDE.match(line)
            if not m:
                continue
            for base in (os.path.dirname(rel), ""):
                cand = os.path.normpath(os.path.join(base, m.group(1)))
                if os.path.exists(os.path.join(src_dir, cand)):
                    out.append(cand)
                    break
    return out


def symbols(obj, nm):
    out = subprocess.run([nm, obj], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def check_calls(src_dir, obj_dir, nm):
    files = {}
    for root, _, names in os.walk(obj_dir):
        for n in names:
            if not n.endswith(".c.o"):
                continue
            rel = os.path.relpath(os.path.join(root, n), obj_dir)[:-2]
            if os.path.exists(os.path.join(src_dir, rel)):  # skip stale objects
                files[rel] = symbols(os.path.join(root, n), nm)
    if not files:
        return [f"{obj_dir}: no object files"], 0, 0
    owner = {}
    for f, (defined, _) in files.items():
        for s in defined:
            owner[s] = f
    edges = {f: set() for f in files}
    errors = []
    for f, (_, used) in sorted(files.items()):
        for s in sorted(used):
            g = owner.get(s)
            if g is None or g == f:
                continue
            edges[f].add(g)
            lf, lg = layer_of(f), layer_of(g)
            if lf is not None and lg is not None and lg > lf:
                errors.append(f"{f}: calls {s} of {g}, layer {LAYERS[lg]} is later than "
                              f"{LAYERS[lf]}")
    # A file that includes another file's own header depends on that file too, whether or not
    # it calls it: a backend that includes the generic layer's header is in a circle with it
    # once the generic layer calls the backend. A header (in the library's folders) is a file's
    # own when that file defines more than half of the functions the header declares.
    decl = re.compile(r"^[A-Za-z_][\w \t\*]*?\b(tg_\w+)\s*\(")
    owner_of_header = {}
    for h in {os.path.normpath(m) for f in files for m in includes_of(src_dir, f)}:
        path = os.path.join(src_dir, h)
        if not h.endswith(".h") or not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as fh:
            names = [m.group(1) for m in map(decl.match, fh) if m]
        counts = {}
        for n in names:
            if n in owner:
                counts[owner[n]] = counts.get(owner[n], 0) + 1
        best = max(counts.items(), key=lambda kv: kv[1], default=(None, 0))
        if names and best[1] * 2 > len(names):
            owner_of_header[h] = best[0]
    for f in files:
        for h in includes_of(src_dir, f):
            g = owner_of_header.get(os.path.normpath(h))
            if g is not None and g != f:
                edges[f].add(g)
    # Tarjan's strongly connected components.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in comps:
        if len(comp) > 1:
            errors.append("call circle between: " + ", ".join(sorted(comp)))
    return errors, len(files), sum(len(e) for e in edges.values())


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    src_dir, obj_dir = sys.argv[1], sys.argv[2]
    nm = sys.argv[3] if len(sys.argv) == 4 else "nm"
    errors = check_includes(src_dir)
    call_errors, nfiles, nedges = check_calls(src_dir, obj_dir, nm)
    errors += call_errors
    for e in errors:
        print(e)
    print(f"layers: {nfiles} library files, {nedges} cross-file call edges, "
          f"{len(errors)} violations")
    print(f"{0 if errors else 1} passed, {1 if errors else 0} failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
