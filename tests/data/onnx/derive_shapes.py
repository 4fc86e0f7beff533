#!/usr/bin/env python3
"""Derive the reference shape tables tests/data/onnx/*.shapes for the PaddleOCR models, without
Tangram: ONNX's own shape inference (the `onnx` Python package, Debian's python3-onnx), run at
two input sizes per model, with the integer shape subgraphs it cannot follow evaluated here by
numpy and pinned as constants.

usage: derive_shapes.py MODEL_DIR OUT_DIR

Every dimension of every value a node writes is then written as a formula in the input's N, H
and W (fitted on the two sizes and checked to reproduce both exactly), e.g. "N,16,H/2,W/2".
tests/model/test_onnx.c evaluates the formulas at the sizes it plans and compares them with
what Tangram infers. Run once; the tables are committed. Needs python3-onnx and numpy.
"""
import fractions
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

MODELS = {
    # model: (input sizes as (N, H, W); the channel count is 3 for all three)
    "ch_PP-OCRv4_det_infer.onnx": [(1, 640, 640), (1, 960, 736)],
    "ch_PP-OCRv4_rec_infer.onnx": [(1, 48, 320), (1, 48, 640)],
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": [(1, 48, 192), (6, 48, 192)],
}


def static_shapes(model):
    """ONNX shape inference; the value name -> list of dims for values fully known."""
    inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    out = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        t = v.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if None not in dims:
            out[v.name] = dims
    return out


def evaluate_ints(model, shapes, name, memo):
    """numpy value of integer value `name` computed from shapes and constants, or None."""
    if name in memo:
        return memo[name]
    producer = {o: n for n in model.graph.node for o in n.output}
    node = producer.get(name)
    val = None
    if node is None:
        for init in model.graph.initializer:
            if init.name == name:
                val = numpy_helper.to_array(init)
    elif node.op_type == "Constant":
        val = numpy_helper.to_array(node.attribute[0].t)
    elif node.op_type == "Shape":
        if node.input[0] in shapes:
            val = np.array(shapes[node.input[0]], dtype=np.int64)
    else:
        ins = [evaluate_ints(model, shapes, i, memo) for i in node.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if all(i is not None for i in ins):
            if node.op_type == "Cast":
                val = ins[0].astype(np.int64)
            elif node.op_type == "Concat":
                val = np.concatenate([np.atleast_1d(i) for i in ins], axis=attrs["axis"])
            elif node.op_type == "Slice" and "starts" in attrs:  # opset < 10: attributes
                sl = [slice(None)] * ins[0].ndim
                for ax, s, e in zip(attrs.get("axes", range(len(attrs["starts"]))), attrs["starts"], attrs["ends"]):
                    sl[ax] = slice(s, e)
                val = ins[0][tuple(sl)]
    memo[name] = val
    return val


def pin_reshapes(model, shapes):
    """Replace each Reshape's shape input that inference could not follow by its value."""
    changed = False
    memo = {}
    for node in model.graph.node:
        if node.op_type != "Reshape" or node.output[0] in shapes:
            continue
        val = evaluate_ints(model, shapes, node.input[1], memo)
        if val is None:
            continue
        pinned = node.input[1] + ".pinned"
        model.graph.initializer.append(numpy_helper.from_array(val.astype(np.int64), pinned))
        node.input[1] = pinned
        changed = True
    return changed


def reference(path, size):
    model = onnx.load(path)
    n, h, w = size
    for d, v in zip(model.graph.input[0].type.tensor_type.shape.dim, (n, 3, h, w)):
        d.ClearField("dim_param")
        d.dim_value = v
    shapes = static_shapes(model)
    while pin_reshapes(model, shapes):
        shapes = static_shapes(model)
    written = [o for node in model.graph.node if node.op_type != "Constant" for o in node.output]
    missing = [o for o in written if o not in shapes]
    if missing:
        sys.exit(f"{path} {size}: no reference shape for {missing[:5]}")
    return [(o, shapes[o]) for o in written]


def fit(values, sizes):
    """A formula over N, H, W reproducing `values` at `sizes` exactly."""
    for vars_ in ([], ["N"], ["H"], ["W"], ["N", "H"], ["N", "W"], ["H", "W"], ["N", "H", "W"]):
        ratios = set()
        for v, (n, h, w) in zip(values, sizes):
            prod = 1
            for x in vars_:
                prod *= {"N": n, "H": h, "W": w}[x]
            ratios.add(fractions.Fraction(v, prod))
        if len(ratios) != 1:
            continue
        r = ratios.pop()
        # A variable that does not change across the sizes cannot be told from a constant.
        if any(len({s[i] for s in sizes}) == 1 for i, x in enumerate("NHW") if x in vars_):
            continue
        factors = ([str(r.numerator)] if r.numerator != 1 or not vars_ else []) + vars_
        text = "*".join(factors)
        return text + (f"/{r.denominator}" if r.denominator != 1 else "")
    return None


def main():
    model_dir, out_dir = sys.argv[1], sys.argv[2]
    for name, sizes in MODELS.items():
        refs = [reference(os.path.join(model_dir, name), s) for s in sizes]
        lines = []
        for k, (value, dims) in enumerate(refs[0]):
            per = [r[k][1] for r in refs]
            assert all(r[k][0] == value and len(r[k][1]) == len(dims) for r in refs)
            formula = [fit([p[d] for p in per], sizes) for d in range(len(dims))]
            if None in formula:
                sys.exit(f"{name}: {value}: no formula for {per}")
            lines.append(f"{value} {','.join(formula) if formula else 'scalar'}")
        stem = name[: -len(".onnx")]
        with open(os.path.join(out_dir, stem + ".shapes"), "w") as f:
            f.write(f"# {name}: every value a node writes (Constant nodes excepted), in node order,\n")
            f.write("# with its shape as formulas in the input's N, H, W (input x is N,3,H,W).\n")
            f.write("# Derived by tests/data/onnx/derive_shapes.py from ONNX's reference shape inference\n")
            f.write("# at " + " and ".join("x:%dx3x%dx%d" % s for s in sizes) + "; see test_onnx.c.\n")
            f.write("\n".join(lines) + "\n")
        print(f"{stem}.shapes: {len(lines)} values")


if __name__ == "__main__":
    main()
