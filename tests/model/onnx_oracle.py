#!/usr/bin/env python3
"""The .onnx reader's shapes and folded values against ONNX's own shape inference.

usage: onnx_oracle.py ONNX_VALUES SOURCE_DIR [MODEL...]

ONNX_VALUES is tests/model/onnx_values.c built (what the reader knows of every value: shape,
type, and the values it computed before the run). The models: every .onnx under
tests/data/onnx/ and tests/fuzz/corpus/fuzz_onnx/, and the cached ones
($TANGRAM_MODEL_CACHE and its openwakeword/ folder), or the MODELs given. Three references,
none of them Tangram:
  1. ONNX's shape inference with data propagation (onnx.shape_inference.infer_shapes(model,
     data_prop=True)): every value whose shape it infers completely must have that shape in
     Tangram, and every integer vector (or scalar) whose values it propagates must have those
     values: a ConstantOfShape probe appended after each such value shows them as its output's
     dimensions.
  2. A numpy evaluation of ONNX's operator definitions (as its shape inference reads them where
     ONNX's Python reference differs: a Slice's clamping) for everything computable before the
     run: initializers and Constants, Shape and Size of values whose shapes inference knows,
     and the ops of run_op on known inputs, inside every If branch and Loop / Scan body (an If
     with a known condition passes its branch's values on; loops pass none). Integer results
     that leave their type, divisions by zero and float -> int casts out of range are left
     unknown, as ONNX leaves them undefined. Every value it computes must be equal in Tangram
     (Tangram computing more is counted, not an error), with the reader's own limits:
     initializers and Constants up to 256 elements, computed values up to 4096.
  3. ONNX's shape inference again after pinning the values of (2) as Constant nodes (as
     tests/data/onnx/derive_shapes.py does): the shapes of Reshape, Pad, Resize, Expand...
     targets computed by subgraphs that (1) cannot follow.
ONNX's data propagation passes values through Cast unconverted (no wrapping, no bool): where
it differs from Tangram there, the numpy evaluation decides. Besides the files, random models
(30; 400 with TANGRAM_TEST_DEEP=1): chains of integer and float shape arithmetic with random
operands, indices, bounds and steps in the graph, an If branch decided at run time and a Loop
body. Values in If branches that a condition known at read time rules out are not compared
(Tangram does not read them). A model Tangram refuses fails the test unless EXPECTED_REFUSALS
says why.
Exit status 0 when everything agrees, 1 otherwise, 77 (skip) when the `onnx` package is missing
outside CI (CI=true or 1: missing is a failure).
"""
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import helper, mapping, numpy_helper, shape_inference
    from onnx import TensorProto as TP
except ImportError as e:  # pragma: no cover
    in_ci = os.environ.get("CI", "") in ("true", "1")
    print(f"{'FAILED' if in_ci else 'SKIPPING'}: onnx_oracle needs python3-onnx and numpy ({e}); "
          "install them (scripts/setup.sh)")
    sys.exit(1 if in_ci else 77)

MAX_DECODE = 256   # the reader decodes initializers and Constant tensors up to this many elements
MAX_FOLD = 4096    # and tracks computed values up to this many

# Sizes for dynamic input dimensions, by file name (the sizes the other tests use).
INPUT_SHAPES = {
    "ch_PP-OCRv4_det_infer.onnx": {"x": [1, 3, 640, 640]},
    "ch_PP-OCRv4_rec_infer.onnx": {"x": [1, 3, 48, 320]},
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": {"x": [1, 3, 48, 192]},
    "embedding_model.onnx": {"input_1": [1, 76, 32, 1]},
    "melspectrogram.onnx": {"input": [1, 1280]},
    "silero_vad.onnx": {"input": [1, 512], "h": [2, 1, 64], "c": [2, 1, 64]},
}
# Hostile models the reader must refuse, with a piece of the reason.
EXPECTED_REFUSALS = {
    "loop_grows.onnx": "values that change shape across iterations are not supported",
    "if_outputs.onnx": "else_branch has 2 outputs but the node has 1",
    "loop_dynamic.onnx": "the number of iterations (input M) is only known at run time",
    "overflow_if.onnx": "node 4 'too_big' (Mul): 1099511627776 * 1073741824 leaves 64 bits",
    "div_zero_loop.onnx": "node 2 'by_zero' (Div): division by zero",
}
CACHED = ["ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx"]

INT_RANGE = {TP.INT8: (-2**7, 2**7 - 1), TP.UINT8: (0, 2**8 - 1), TP.INT16: (-2**15, 2**15 - 1),
             TP.UINT16: (0, 2**16 - 1), TP.INT32: (-2**31, 2**31 - 1), TP.UINT32: (0, 2**32 - 1),
             TP.INT64: (-2**63, 2**63 - 1), TP.UINT64: (0, 2**63 - 1), TP.BOOL: (0, 1)}
FLOATS = (TP.FLOAT, TP.DOUBLE, TP.FLOAT16)
NP_OF = {t: mapping.TENSOR_TYPE_TO_NP_TYPE[t] for t in list(INT_RANGE) + list(FLOATS)}
ONNX_OF = {np.dtype(v): k for k, v in NP_OF.items()}


class Unknown(Exception):
    """A value ONNX leaves undefined (or this evaluation does not compute)."""


def subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.name, a.g


def all_graphs(graph):
    yield graph
    for n in graph.node:
        for _, g in subgraphs(n):
            yield from all_graphs(g)


def opset_of(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


# ------------------------------------------------------------------------------------------
# References 1 and 3: ONNX's shape inference.

def infer_with_data(model):
    """ONNX's inference with data propagation; without it when that fails (ONNX 1.12's data
    propagation throws on some valid models, e.g. a Gather of an Unsqueeze's 2-D output)."""
    try:
        return shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except shape_inference.InferenceError:
        return shape_inference.infer_shapes(model, strict_mode=False, data_prop=False)


def infer(model):
    """name -> (elem_type, dims or None when not fully static), over every graph."""
    inferred = infer_with_data(model)
    out = {}
    for g in all_graphs(inferred.graph):
        for v in list(g.value_info) + list(g.output) + list(g.input):
            t = v.type.tensor_type
            dims = None
            if t.HasField("shape"):
                dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
                if None in dims:
                    dims = None
            out[v.name] = (t.elem_type, dims)
    return out, inferred


def through_cast(model):
    """Values computed from the output of a Cast to another type than int64."""
    producer = {o: n for g in all_graphs(model.graph) for n in g.node for o in n.output}
    memo = {}

    def flagged(name, depth=0):
        if name in memo or depth > 500:
            return memo.get(name, False)
        n = producer.get(name)
        memo[name] = n is not None and (
            (n.op_type in ("Cast", "CastLike") and not (n.op_type == "Cast" and attrs_of(n).get("to") == TP.INT64))
            or any(flagged(i, depth + 1) for i in n.input if i))
        return memo[name]

    return {name for name in producer if flagged(name)}


def probe(model, types):
    """Integer vectors and scalars whose values ONNX's data propagation knows: name -> list of
    ints (None for an element it does not know)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    opset = opset_of(m)
    probes = {}
    for g in all_graphs(m.graph):
        defined = [t.name for t in g.initializer] + [o for n in g.node for o in n.output if o]
        extra = []
        for name in defined:
            elem, dims = types.get(name, (0, None))
            if elem not in INT_RANGE or elem == TP.BOOL or dims is None or len(dims) > 1 or \
                    (dims and dims[0] > 64):
                continue
            k = len(probes)
            src = name
            if not dims:
                if opset >= 13:
                    extra.append(helper.make_node("Constant", [], [f"__probe_axes_{k}"],
                                                  value=numpy_helper.from_array(np.array([0], np.int64))))
                    extra.append(helper.make_node("Unsqueeze", [src, f"__probe_axes_{k}"], [f"__probe_vec_{k}"]))
                else:
                    extra.append(helper.make_node("Unsqueeze", [src], [f"__probe_vec_{k}"], axes=[0]))
                src = f"__probe_vec_{k}"
            if elem != TP.INT64:
                extra.append(helper.make_node("Cast", [src], [f"__probe_int_{k}"], to=TP.INT64))
                src = f"__probe_int_{k}"
            extra.append(helper.make_node("ConstantOfShape", [src], [f"__probe_{k}"]))
            probes[f"__probe_{k}"] = name
        g.node.extend(extra)
    inferred = infer_with_data(m)
    known = {}
    for g in all_graphs(inferred.graph):
        for v in g.value_info:
            if v.name in probes and v.type.tensor_type.HasField("shape"):
                dims = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
                if any(d is not None for d in dims):
                    known[probes[v.name]] = dims
    return known


# ------------------------------------------------------------------------------------------
# Reference 2: ONNX's operator definitions in numpy.

def attrs_of(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def ints_result(values, elem, shape):
    lo, hi = INT_RANGE[elem]
    flat = [int(v) for v in values]
    if any(v < lo or v > hi for v in flat):
        raise Unknown("leaves its type")
    return np.array(flat, dtype=NP_OF[elem]).reshape(shape)


def elementwise(node, ins, op):
    """Broadcast binary (or, for Max / Min / Sum, variadic) arithmetic with ONNX's semantics."""
    a = attrs_of(node)
    arrays = [np.asarray(x) for x in ins]
    elem = ONNX_OF[arrays[0].dtype]
    shape = np.broadcast_shapes(*[x.shape for x in arrays])
    if elem in FLOATS:
        with np.errstate(all="ignore"):
            acc = arrays[0]
            for x in arrays[1:]:
                if op in ("Add", "Sum"):
                    acc = acc + x
                elif op == "Sub":
                    acc = acc - x
                elif op == "Mul":
                    acc = acc * x
                elif op == "Div":
                    acc = acc / x
                elif op == "Max":
                    acc = np.maximum(acc, x)
                elif op == "Min":
                    acc = np.minimum(acc, x)
                elif op == "Pow":
                    acc = np.power(acc, x)
                elif op == "Mod" and a.get("fmod", 0) == 1:
                    acc = np.fmod(acc, x)
                else:
                    raise Unknown(op)
            return np.broadcast_to(acc, shape).astype(arrays[0].dtype)
    if op == "Pow":
        raise Unknown("integer Pow")
    flat = [np.broadcast_to(x, shape).ravel().tolist() for x in arrays]
    out = []
    for e in range(len(flat[0])):
        acc = int(flat[0][e])
        for x in flat[1:]:
            b = int(x[e])
            if op in ("Add", "Sum"):
                acc += b
            elif op == "Sub":
                acc -= b
            elif op == "Mul":
                acc *= b
            elif op in ("Div", "Mod"):
                if b == 0:
                    raise Unknown("division by zero")
                q = abs(acc) // abs(b) * (1 if (acc < 0) == (b < 0) else -1)  # truncated
                if op == "Div":
                    acc = q
                elif a.get("fmod", 0) == 1:
                    acc = acc - b * q           # the dividend's sign (C's %)
                else:
                    acc = acc % b               # the divisor's sign (Python's %)
            elif op == "Max":
                acc = max(acc, b)
            elif op == "Min":
                acc = min(acc, b)
            else:
                raise Unknown(op)
        # Exact (Python's integers): a result that fits is what wrapping arithmetic gives too.
        if not INT_RANGE[TP.INT64][0] <= acc <= INT_RANGE[TP.INT64][1]:
            raise Unknown("leaves 64 bits")
        out.append(acc)
    return ints_result(out, elem, shape)


def cast(x, to):
    x = np.asarray(x)
    if to not in NP_OF:
        raise Unknown("cast to an unsupported type")
    src = ONNX_OF[x.dtype]
    if to == TP.BOOL:
        return x != 0
    if to in FLOATS:
        return x.astype(NP_OF[to])
    if src in FLOATS:
        with np.errstate(all="ignore"):
            t = np.trunc(x.astype(np.float64))
        if not np.all(np.isfinite(t)):
            raise Unknown("not a number")
        return ints_result([int(v) for v in t.ravel()], to, x.shape)
    if to == TP.UINT64 and np.any(x < 0):
        raise Unknown("negative to uint64")
    return x.astype(NP_OF[to])  # integers wrap, as numpy (ONNX's reference) converts them


def axes_input_or_attr(node, ins, opset, since):
    if opset >= since:
        return None if len(ins) < 2 or ins[1] is None else [int(v) for v in np.asarray(ins[1]).ravel()]
    a = attrs_of(node).get("axes")
    return None if a is None else list(a)


def slice_(node, ins, opset):
    x = np.asarray(ins[0])
    if opset < 10:
        a = attrs_of(node)
        starts, ends = a["starts"], a["ends"]
        axes, steps = a.get("axes", list(range(len(starts)))), [1] * len(starts)
    else:
        starts, ends = ins[1].ravel().tolist(), ins[2].ravel().tolist()
        axes = ins[3].ravel().tolist() if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
        steps = ins[4].ravel().tolist() if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        x = np.take(x, slice_indices(x.shape[ax], int(s), int(e), int(st)), axis=ax)
    return x


def slice_indices(dim, start, end, step):
    """The indices ONNX's Slice takes along one axis (its definition, which ONNX's shape inference
    follows: for negative steps start clamps to [0, dim - 1] and end to [-1, dim - 1], so
    x[-6:-7:-2] of 4 elements is x[0], where Python's slice would be empty)."""
    if dim == 0 or step == 0:
        return []
    start += dim if start < 0 else 0
    end += dim if end < 0 else 0
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return list(range(start, end, step))


def split(node, ins, opset):
    x = np.asarray(ins[0])
    a = attrs_of(node)
    axis = a.get("axis", 0)
    if opset >= 13:
        sizes = ins[1].ravel().tolist() if len(ins) > 1 and ins[1] is not None else None
    else:
        sizes = a.get("split")
    if sizes is None:
        parts = a.get("num_outputs", len(node.output))
        each = -(-x.shape[axis] // parts)
        sizes = [max(0, min(each, x.shape[axis] - k * each)) for k in range(parts)]
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def reshape(node, ins, opset):
    x = np.asarray(ins[0])
    shape = attrs_of(node)["shape"] if opset < 5 else ins[1].ravel().tolist()
    allowzero = attrs_of(node).get("allowzero", 0)
    new = [x.shape[i] if d == 0 and not allowzero else int(d) for i, d in enumerate(shape)]
    return x.reshape(new)


def unsqueeze(node, ins, opset):
    x = np.asarray(ins[0])
    axes = axes_input_or_attr(node, ins, opset, 13)
    rank = x.ndim + len(axes)
    for ax in sorted(a % rank for a in axes):
        x = np.expand_dims(x, ax)
    return x


def squeeze(node, ins, opset):
    x = np.asarray(ins[0])
    axes = axes_input_or_attr(node, ins, opset, 13)
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(a % x.ndim for a in axes))


def reduce_(node, ins, opset, fn):
    x = np.asarray(ins[0])
    if x.ndim > 1 or ONNX_OF[x.dtype] not in INT_RANGE:
        raise Unknown("the reader folds integer vectors only")
    a = attrs_of(node)
    since = 13 if node.op_type == "ReduceSum" else 18
    axes = axes_input_or_attr(node, ins, opset, since)
    if not axes and a.get("noop_with_empty_axes", 0):
        return x
    if x.size == 0 and fn in (np.max, np.min):
        raise Unknown("empty")
    values = x.ravel().tolist()
    acc = {np.sum: 0, np.prod: 1}.get(fn)
    if acc is None:
        acc = fn(values)
    else:
        for v in values:
            acc = acc + int(v) if fn is np.sum else acc * int(v)
    shape = [1] * x.ndim if a.get("keepdims", 1) else []
    return ints_result([acc], ONNX_OF[x.dtype], shape)


def range_(ins):
    start, limit, delta = (np.asarray(v).item() for v in ins)
    dtype = np.asarray(ins[0]).dtype
    if delta == 0:
        raise Unknown("delta 0")
    n = max(int(math.ceil((limit - start) / delta)), 0) if isinstance(start, float) else \
        max(-(-(limit - start) // delta), 0)
    if n > MAX_FOLD:
        raise Unknown("long")
    return np.array([start + k * delta for k in range(n)], dtype=np.float64 if isinstance(start, float)
                    else object).astype(dtype)


def constant_of_shape(node, ins):
    v = attrs_of(node).get("value")
    fill = numpy_helper.to_array(v).ravel()[0] if v is not None else np.float32(0)
    return np.full([int(d) for d in ins[0].ravel()], fill, dtype=fill.dtype)


def expand(ins):
    x = np.asarray(ins[0])
    shape = np.broadcast_shapes(x.shape, tuple(int(d) for d in ins[1].ravel()))
    return np.broadcast_to(x, shape).copy()


def flatten(node, ins):
    x = np.asarray(ins[0])
    axis = attrs_of(node).get("axis", 1) % (x.ndim + 1) if x.ndim else 0
    return x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))


def compare(op):
    return {"Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
            "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
            "Xor": np.logical_xor}[op]


def unary(op, x):
    x = np.asarray(x)
    if op == "Not":
        return np.logical_not(x)
    if ONNX_OF[x.dtype] in FLOATS:
        return {"Neg": np.negative, "Abs": np.abs, "Sign": np.sign, "Floor": np.floor, "Ceil": np.ceil,
                "Round": np.round}[op](x)
    if op in ("Floor", "Ceil", "Round"):
        raise Unknown("integer rounding")
    values = [-int(v) if op == "Neg" else abs(int(v)) if op == "Abs" else (int(v) > 0) - (int(v) < 0)
              for v in x.ravel()]
    return ints_result(values, ONNX_OF[x.dtype], x.shape)


def run_op(node, ins, opset):
    op = node.op_type
    a = attrs_of(node)
    if op in ("Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Sum", "Pow"):
        return [elementwise(node, ins, op)]
    if op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"):
        return [compare(op)(ins[0], ins[1])]
    if op in ("Not", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round"):
        return [unary(op, ins[0])]
    if op == "Where":
        return [np.where(ins[0], ins[1], ins[2])]
    if op == "Identity":
        return [ins[0]]
    if op == "Cast":
        return [cast(ins[0], a["to"])]
    if op == "CastLike":
        return [cast(ins[0], ONNX_OF[np.asarray(ins[1]).dtype])]
    if op == "Gather":
        return [np.take(np.asarray(ins[0]), np.asarray(ins[1]).astype(np.int64), axis=a.get("axis", 0))]
    if op == "Slice":
        return [slice_(node, ins, opset)]
    if op == "Concat":
        return [np.concatenate([np.asarray(x) for x in ins if x is not None], axis=a.get("axis", 1))]
    if op == "Reshape":
        return [reshape(node, ins, opset)]
    if op == "Transpose":
        return [np.transpose(np.asarray(ins[0]), a.get("perm"))]
    if op == "Unsqueeze":
        return [unsqueeze(node, ins, opset)]
    if op == "Squeeze":
        return [squeeze(node, ins, opset)]
    if op == "Flatten":
        return [flatten(node, ins)]
    if op == "Expand":
        return [expand(ins)]
    if op == "Tile":
        return [np.tile(np.asarray(ins[0]), [int(r) for r in ins[1].ravel()])]
    if op == "Split":
        return split(node, ins, opset)
    if op == "ConstantOfShape":
        return [constant_of_shape(node, ins)]
    if op == "Range":
        return [range_(ins)]
    if op in ("ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin"):
        return [reduce_(node, ins, opset, {"ReduceProd": np.prod, "ReduceSum": np.sum,
                                            "ReduceMax": np.max, "ReduceMin": np.min}[op])]
    raise Unknown(op)


def tensor_value(t, limit=MAX_DECODE):
    if t.data_location == TP.EXTERNAL or len(t.external_data) or t.data_type not in NP_OF:
        return None
    if math.prod(t.dims) > limit:
        return None
    try:
        return numpy_helper.to_array(t)
    except Exception:
        return None


def constant_value(node):
    a = node.attribute[0] if len(node.attribute) == 1 else None
    if a is None:
        return None
    if a.name == "value":
        return tensor_value(a.t)
    if a.name in ("value_int", "value_float"):
        return np.array(a.i if a.name == "value_int" else a.f, dtype=np.int64 if a.name == "value_int" else np.float32)
    if a.name in ("value_ints", "value_floats"):
        vals = list(a.ints) if a.name == "value_ints" else list(a.floats)
        if len(vals) > MAX_FOLD:
            return None
        return np.array(vals, dtype=np.int64 if a.name == "value_ints" else np.float32)
    return None


def evaluate(model, shapes):
    """name -> numpy value, for every value computable before the run."""
    opset = opset_of(model)
    env = {}

    def run_graph(g):
        for t in g.initializer:
            v = tensor_value(t)
            if v is not None:
                env[t.name] = v
        for node in g.node:
            run_node(node)

    def run_node(node):
        op = node.op_type
        if node.domain not in ("", "ai.onnx"):
            return
        if op == "Constant":
            v = constant_value(node)
            if v is not None:
                env[node.output[0]] = v
            return
        subs = dict(subgraphs(node))
        if subs:
            for g in subs.values():
                run_graph(g)
            if op == "If" and node.input[0] in env:
                branch = subs["then_branch" if np.asarray(env[node.input[0]]).ravel()[0] else "else_branch"]
                for out, inner in zip(node.output, branch.output):
                    if inner.name in env:
                        env[out] = env[inner.name]
            return
        if op in ("Shape", "Size"):
            dims = shapes.get(node.input[0], (0, None))[1]
            if dims is None:
                return
            if op == "Size":
                env[node.output[0]] = np.array(math.prod(dims), dtype=np.int64)
            else:
                a = attrs_of(node)
                env[node.output[0]] = np.array(dims[a.get("start", 0):a.get("end", len(dims))], dtype=np.int64)
            return
        ins = []
        for name in node.input:
            if name == "":
                ins.append(None)
            elif name in env:
                ins.append(env[name])
            else:
                return
        try:
            with np.errstate(all="ignore"):
                outs = run_op(node, ins, opset)
        except (Unknown, KeyError, IndexError, ValueError, TypeError, OverflowError):
            return
        for name, v in zip(node.output, outs):
            v = np.asarray(v)
            if name and v.size <= MAX_FOLD:
                env[name] = v

    run_graph(model.graph)
    return env


def pin(model, env):
    """A copy of the model with every node whose outputs are all known replaced by Constants."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for g in all_graphs(m.graph):
        nodes = []
        for node in g.node:
            outs = [o for o in node.output if o]
            if node.op_type != "Constant" and outs and not list(subgraphs(node)) and all(o in env for o in outs):
                for o in outs:
                    value = numpy_helper.from_array(np.asarray(env[o]), o + "_pinned")
                    nodes.append(helper.make_node("Constant", [], [o], value=value))
            else:
                nodes.append(node)
        del g.node[:]
        g.node.extend(nodes)
    return m


def references(model):
    shapes, _ = infer(model)
    plain = dict(shapes)
    for _ in range(8):
        env = evaluate(model, shapes)
        again, _ = infer(pin(model, env))
        if again == shapes:
            break
        shapes = again
    return plain, shapes, env


# ------------------------------------------------------------------------------------------
# Random models: chains of integer (and some float) shape arithmetic with random operands,
# indices, bounds and steps, in the graph, in an If branch decided at run time (reading the
# graph's values) and in a Loop body. Operands are drawn so that every node is valid (indices
# in range, Reshape targets that fit), values so that overflows, divisions by zero and casts out
# of range happen now and then.

INT64_MAX = 2**63 - 1


class Chain:
    def __init__(self, rng, prefix, pool):
        self.rng, self.prefix, self.pool, self.nodes, self.k = rng, prefix, pool, [], 0

    def name(self):
        self.k += 1
        return f"{self.prefix}{self.k}"

    def const(self, values, dtype=np.int64):
        out = self.name()
        arr = np.array(values, dtype=dtype)
        self.nodes.append(helper.make_node("Constant", [], [out], value=numpy_helper.from_array(arr, out + "_v")))
        self.pool.append((out, arr))
        return out, arr

    def emit(self, op, ins, n_out=1, **attrs):
        outs = [self.name() for _ in range(n_out)]
        node = helper.make_node(op, [i for i, _ in ins], outs, **attrs)
        self.nodes.append(node)
        try:
            with np.errstate(all="ignore"):
                values = run_op(node, [v for _, v in ins], 13)
            for o, v in zip(outs, values):
                v = np.asarray(v)
                if v.size <= 64:
                    self.pool.append((o, v))
        except (Unknown, KeyError, IndexError, ValueError, TypeError, OverflowError):
            pass

    def pick(self, ok):
        cands = [p for p in self.pool if ok(np.asarray(p[1]))]
        return cands[int(self.rng.integers(len(cands)))] if cands else None

    def operand(self, like):
        """A constant shaped like `like`, like a scalar, or [1], of its type."""
        r = self.rng
        shape = [like.shape, (), (1,)][int(r.integers(3))]
        if like.dtype.kind == "f":
            return self.const(np.round(r.uniform(-9, 9, shape), 1), like.dtype)
        big = [0, 1, -1, 2**31, -2**31, 2**62, -2**62, INT64_MAX, -INT64_MAX - 1]
        vals = r.integers(-12, 13, shape)
        if r.random() < 0.15:
            vals = np.array(big)[r.integers(len(big), size=shape)]
        info = np.iinfo(like.dtype) if like.dtype.kind in "iu" else None
        if info is not None:
            vals = np.clip(vals, info.min, info.max)
        return self.const(vals, like.dtype)

    def step(self):
        r = self.rng
        kind = int(r.integers(16))
        ints = lambda v: v.dtype.kind in "iu" and v.size > 0
        if kind == 0:
            self.const(r.integers(-10, 11, int(r.integers(1, 6))))
        elif kind == 1:
            a = self.pick(lambda v: v.ndim >= 1 and v.size > 0)
            if a:
                ax = int(r.integers(a[1].ndim))
                d = a[1].shape[ax]
                idx = r.integers(-d, d, [(), (int(r.integers(1, 4)),)][int(r.integers(2))])
                self.emit("Gather", [a, self.const(idx)], axis=ax - a[1].ndim * int(r.integers(2)))
        elif kind == 2:
            # Not of empty vectors: ONNX 1.12's data propagation crashes on a negative step there.
            a = self.pick(lambda v: v.ndim >= 1 and v.size > 0)
            if a:
                ax = int(r.integers(a[1].ndim))
                bound = lambda: int([r.integers(-8, 9), INT64_MAX, -INT64_MAX][int(r.choice(3, p=[.8, .1, .1]))])
                step = int(r.choice([-3, -2, -1, 1, 2, 3]))
                self.emit("Slice", [a, self.const([bound()]), self.const([bound()]), self.const([ax]),
                                    self.const([step])])
        elif kind in (3, 4, 5):
            a = self.pick(lambda v: v.size > 0 and v.dtype != np.bool_)
            if a:
                op = str(r.choice(["Add", "Sub", "Mul", "Div", "Mod", "Min", "Max", "Equal", "Less", "Greater"]))
                b = self.operand(a[1])
                if op == "Mod" and a[1].dtype.kind == "f":
                    self.emit(op, [a, b], fmod=1)
                elif op == "Mod":
                    self.emit(op, [a, b], fmod=int(r.integers(2)))
                elif op in ("Min", "Max") and r.random() < 0.3:
                    self.emit(op, [a, b, self.operand(a[1])])
                else:
                    self.emit(op, [a, b])
        elif kind == 6:
            a = self.pick(lambda v: v.dtype != np.bool_)
            if a:
                self.emit(str(r.choice(["Neg", "Abs", "Sign"])), [a])
        elif kind == 7:
            a = self.pick(lambda v: True)
            if a:
                to = int(r.choice([TP.INT64, TP.INT32, TP.INT8, TP.UINT8, TP.INT16, TP.FLOAT, TP.BOOL]))
                self.emit("Cast", [a], to=to)
        elif kind == 8:
            a = self.pick(lambda v: v.ndim >= 1 and v.size > 1)
            if a:
                n = a[1].size
                divs = [k for k in range(1, n + 1) if n % k == 0]
                p = int(r.choice(divs))
                target = [[p, n // p], [p, -1], [-1], [0, -1] if a[1].ndim >= 1 else [-1]][int(r.integers(4))]
                self.emit("Reshape", [a, self.const(target)])
        elif kind == 9:
            a = self.pick(lambda v: v.ndim == 2)
            if a:
                self.emit("Transpose", [a], perm=[1, 0])
        elif kind == 10:
            a = self.pick(lambda v: v.ndim == 1 and ints(v))
            b = self.pick(lambda v: v.ndim == 1 and a is not None and v.dtype == a[1].dtype)
            if a and b:
                self.emit("Concat", [a, b], axis=0)
        elif kind == 11:
            a = self.pick(lambda v: v.ndim <= 1)
            if a:
                u = self.name()
                self.nodes.append(helper.make_node("Unsqueeze", [a[0], self.const([0])[0]], [u]))
                self.pool.append((u, np.expand_dims(a[1], 0)))
                self.emit("Squeeze", [(u, self.pool[-1][1]), self.const([0])])
        elif kind == 12:
            a = self.pick(lambda v: v.ndim <= 1 and v.size >= 1)
            if a:
                if r.random() < 0.5:
                    self.emit("Expand", [a, self.const([int(r.integers(1, 4)), a[1].size if a[1].ndim else 1])])
                else:
                    self.emit("Tile", [a, self.const([int(r.integers(1, 4))] * a[1].ndim)])
        elif kind == 13:
            a = self.pick(lambda v: v.ndim == 1 and v.size >= 2)
            if a:
                cut = int(r.integers(0, a[1].size + 1))
                self.emit("Split", [a, self.const([cut, a[1].size - cut])], n_out=2, axis=0)
        elif kind == 14:
            start, limit = int(r.integers(-6, 7)), int(r.integers(-6, 7))
            delta = int(r.choice([-3, -2, -1, 1, 2, 3]))
            self.emit("Range", [self.const(start), self.const(limit), self.const(delta)])
        else:
            a = self.pick(lambda v: v.ndim == 1 and ints(v))
            if a:
                if r.random() < 0.5:
                    self.emit("ReduceProd", [a], keepdims=int(r.integers(2)))
                else:
                    self.emit("Where", [self.pick(lambda v: v.dtype == np.bool_ and v.shape == a[1].shape) or
                                        self.const(r.integers(0, 2, a[1].shape).astype(np.bool_), np.bool_),
                                        a, self.operand(a[1])])
        # A value whose shape comes from the chain: ConstantOfShape of a small vector.
        if r.random() < 0.1:
            a = self.pick(lambda v: v.ndim == 1 and v.dtype == np.int64 and v.size <= 3 and np.all((v >= 0) & (v <= 4)))
            if a:
                self.emit("ConstantOfShape", [a], value=numpy_helper.from_array(np.array([7], np.int64)))


def random_model(seed, path):
    rng = np.random.default_rng(seed)
    dims = [int(d) for d in rng.integers(1, 6, int(rng.integers(1, 5)))]
    main = Chain(rng, "m", [])
    main.emit("Shape", [("x", np.zeros(dims, np.float32))])
    for _ in range(8):
        main.step()
    branch = Chain(rng, "t", list(main.pool))
    branch.emit("Shape", [("x", np.zeros(dims, np.float32))])
    for _ in range(25):
        branch.step()
    branch.nodes.append(helper.make_node("Identity", ["x"], ["t_out"]))
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"])], "else", [],
                              [helper.make_tensor_value_info("e_out", TP.FLOAT, dims)])
    then = helper.make_graph(branch.nodes, "then", [], [helper.make_tensor_value_info("t_out", TP.FLOAT, dims)])
    body = Chain(rng, "b", list(main.pool))
    body.emit("Shape", [("x_in", np.zeros(dims, np.float32))])
    for _ in range(25):
        body.step()
    body.nodes += [helper.make_node("Identity", ["x_in"], ["x_out"]), helper.make_node("Identity", ["c_in"], ["c_out"])]
    loop_body = helper.make_graph(body.nodes, "body",
                                  [helper.make_tensor_value_info("i", TP.INT64, []),
                                   helper.make_tensor_value_info("c_in", TP.BOOL, []),
                                   helper.make_tensor_value_info("x_in", TP.FLOAT, dims)],
                                  [helper.make_tensor_value_info("c_out", TP.BOOL, []),
                                   helper.make_tensor_value_info("x_out", TP.FLOAT, dims)])
    nodes = main.nodes + [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.float32), "zero_v")),
        helper.make_node("Greater", ["s", "zero"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other),
        helper.make_node("Constant", [], ["M"], value=numpy_helper.from_array(np.array(2, np.int64), "M_v")),
        helper.make_node("Loop", ["M", "", "x"], ["z"], body=loop_body)]
    g = helper.make_graph(nodes, f"random_{seed}", [helper.make_tensor_value_info("x", TP.FLOAT, dims)],
                          [helper.make_tensor_value_info("y", TP.FLOAT, dims),
                           helper.make_tensor_value_info("z", TP.FLOAT, dims)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="tangram-tests")
    model.ir_version = 8
    onnx.save(model, path)


# ------------------------------------------------------------------------------------------
# Tangram.

def tangram_values(tool, path, given):
    args = [tool, path] + [f"{k}:{'x'.join(str(d) for d in v)}" for k, v in given.items()]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    out = {}
    for line in r.stdout.splitlines():
        v = json.loads(line)
        out[v["name"]] = v
    return out, None


def same_values(mine, ref):
    ref = np.asarray(ref).ravel()
    if len(mine) != ref.size:
        return False
    for a, b in zip(mine, ref.tolist()):
        if isinstance(a, str):
            a = float(a)
        if isinstance(b, bool):
            b = int(b)
        if isinstance(b, float) and math.isnan(b):
            if not (isinstance(a, float) and math.isnan(a)):
                return False
        elif a != b:
            return False
    return True


def check(tool, path, totals):
    name = os.path.basename(path)
    model = onnx.load(path, load_external_data=False)
    given = INPUT_SHAPES.get(name, {})
    for inp in model.graph.input:
        if inp.name in given:
            for d, v in zip(inp.type.tensor_type.shape.dim, given[inp.name]):
                d.ClearField("dim_param")
                d.dim_value = v
    mine, refused = tangram_values(tool, path, given)
    if refused is not None:
        want = EXPECTED_REFUSALS.get(name)
        if want is None or want not in refused:
            return [f"{name}: refused: {refused}" + (f" (expected: {want})" if want else "")]
        totals["refused"] += 1
        return []
    if name in EXPECTED_REFUSALS:
        return [f"{name}: read, but it must be refused ({EXPECTED_REFUSALS[name]})"]
    errors = []
    plain, shapes, env = references(model)
    live = {k: v for k, v in mine.items() if v["live"]}
    for vname, (elem, dims) in shapes.items():
        t = live.get(vname)
        if t is None:
            continue
        if elem and t["type"] and elem != t["type"]:
            errors.append(f"{name}: '{vname}': type {t['type']}, ONNX infers {elem}")
        totals["types"] += 1
        if dims is None:
            continue
        if t["shape"] != dims:
            errors.append(f"{name}: '{vname}': shape {t['shape']}, ONNX infers {dims}"
                          + ("" if plain.get(vname, (0, None))[1] == dims else " (with the pinned values)"))
        totals["shapes"] += 1
        totals["shapes_plain"] += plain.get(vname, (0, None))[1] == dims
    totals["shapes_beyond"] += sum(1 for k, t in live.items()
                                   if t["shape"] is not None and shapes.get(k, (0, None))[1] is None)
    converted = through_cast(model)
    for vname, dims in probe(model, plain).items():
        t = live.get(vname)
        if t is None:
            continue
        if t["values"] is None:
            errors.append(f"{name}: '{vname}': ONNX's data propagation knows its values {dims}; Tangram does not")
            continue
        if len(t["values"]) != len(dims) or any(d is not None and d != v for d, v in zip(dims, t["values"])):
            # ONNX's data propagation passes values through Cast unconverted (no wrapping to
            # int32 or uint8, no 0/1 for bool): there the numpy evaluation is the reference.
            if vname in converted and vname in env and same_values(t["values"], env[vname]):
                totals["propagated_cast"] += 1
                continue
            errors.append(f"{name}: '{vname}': values {t['values']}, ONNX's data propagation {dims}")
        totals["propagated"] += 1
    for vname, ref in env.items():
        t = live.get(vname)
        if t is None:
            continue
        if t["values"] is None:
            if np.asarray(ref).dtype != np.uint64 or np.all(np.asarray(ref) <= 2**63 - 1):
                errors.append(f"{name}: '{vname}': numpy computes {np.asarray(ref).ravel()[:8].tolist()}...; "
                              "Tangram does not")
            continue
        if not same_values(t["values"], ref):
            errors.append(f"{name}: '{vname}': values {t['values'][:16]}, "
                          f"numpy {np.asarray(ref).ravel()[:16].tolist()}")
        totals["values"] += 1
    totals["values_beyond"] += sum(1 for k, t in live.items() if t["values"] is not None and k not in env)
    totals["dead"] += len(mine) - len(live)
    totals["compared"] += 1
    return errors


def random_count(models):
    return sum(1 for m in models if os.path.basename(m).startswith("random_"))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tool, src = sys.argv[1], sys.argv[2]
    in_ci = os.environ.get("CI", "") in ("true", "1")
    models = sys.argv[3:]
    if not models:
        models = sorted(glob.glob(os.path.join(src, "tests/data/onnx/**/*.onnx"), recursive=True))
        models += sorted(glob.glob(os.path.join(src, "tests/fuzz/corpus/fuzz_onnx/*.onnx")))
        cache = os.environ.get("TANGRAM_MODEL_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tangram/models")
        cached = sorted(glob.glob(os.path.join(cache, "*.onnx")) +
                        glob.glob(os.path.join(cache, "openwakeword/*.onnx")))
        missing = [m for m in CACHED if not os.path.exists(os.path.join(cache, m))]
        if missing:
            msg = f"models {', '.join(missing)} not cached in {cache} (run scripts/fetch-models.sh)"
            if in_ci:
                print(f"FAILED: {msg}")
                return 1
            print(f"SKIPPING the cached models: {msg}")
        models += cached
    # Random models (TANGRAM_TEST_DEEP=1: many more).
    deep = os.environ.get("TANGRAM_TEST_DEEP", "") == "1"
    scratch = tempfile.mkdtemp(prefix="onnx_oracle_")
    for seed in range(400 if deep else 30):
        path = os.path.join(scratch, f"random_{seed}.onnx")
        random_model(seed, path)
        models.append(path)
    totals = dict.fromkeys(["compared", "refused", "shapes", "shapes_plain", "shapes_beyond", "types",
                            "propagated", "propagated_cast", "values", "values_beyond", "dead"], 0)
    errors = []
    for path in models:
        errs = check(tool, path, totals)
        for e in errs[:20]:
            print("FAILED:", e)
        if len(errs) > 20:
            print(f"FAILED: {os.path.basename(path)}: {len(errs) - 20} more")
        errors += errs
    shutil.rmtree(scratch, ignore_errors=True)
    t = totals
    print(f"onnx_oracle: {len(models)} models ({len(models) - random_count(models)} files, "
          f"{random_count(models)} random), {t['compared']} read and compared, {t['refused']} refused as expected")
    print(f"  shapes equal to ONNX's inference: {t['shapes']} values ({t['shapes_plain']} without the pinned "
          f"values; {t['shapes_beyond']} more known to Tangram only); types equal: {t['types']}")
    print(f"  values equal to ONNX's data propagation: {t['propagated']} ({t['propagated_cast']} more differ "
          f"only where it passes values through a Cast unconverted); to the numpy evaluation: {t['values']} "
          f"({t['values_beyond']} more computed by Tangram only); {t['dead']} values in branches ruled out")
    print("onnx_oracle:", "FAILED" if errors else "all equal")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
