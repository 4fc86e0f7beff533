#!/usr/bin/env python3
"""Cut the fuzz seeds tests/fuzz/corpus/fuzz_onnx/*.onnx out of the PaddleOCR models.

usage: cut_seeds.py MODEL_DIR OUT_DIR

Each seed is a run of a real model's nodes with the Constant nodes they read; values read from
outside the run become graph inputs with static shapes (from ONNX's shape inference at a small
input size), values read after it become graph outputs. Weights over 256 bytes become
initializers whose data is declared to live in an external file ("weights.bin", which does not
exist): the reader needs only their shapes, so the seeds stay small and exercise the external
data path. The seeds are cuts, not copies: no seed holds a model's weights. Needs python3-onnx.
"""
import os
import sys

import onnx
from onnx import TensorProto, helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import derive_shapes  # noqa: E402

SEEDS = [
    # (seed, model, input shape used for the cut's static shapes, first node, end node)
    # counting non-Constant nodes; None = to the end
    ("cls_stem", "ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 64), 0, 24),
    ("cls_head", "ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 64), 209, None),
    ("cls_whole", "ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 64), 0, None),
    ("det_neck_head", "ch_PP-OCRv4_det_infer.onnx", (1, 3, 64, 64), 270, None),
    ("rec_attention", "ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 64), 290, 380),
]


def shapes_at(model, shape):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for d, v in zip(m.graph.input[0].type.tensor_type.shape.dim, shape):
        d.ClearField("dim_param")
        d.dim_value = v
    # The recogniser's Reshape targets come from Shape subgraphs ONNX's inference does not
    # follow: pin them as derive_shapes.py does.
    shapes = derive_shapes.static_shapes(m)
    while derive_shapes.pin_reshapes(m, shapes):
        shapes = derive_shapes.static_shapes(m)
    inferred = shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    out = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        t = v.type.tensor_type
        out[v.name] = (t.elem_type, [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim])
    return out


def cut(model, shape, first, end):
    shapes = shapes_at(model, shape)
    nodes = list(model.graph.node)
    constants = {n.output[0]: n for n in nodes if n.op_type == "Constant"}
    body = [n for n in nodes if n.op_type != "Constant"][first:end]
    produced = {o for n in body for o in n.output}
    used_later = set()
    after = False
    for n in nodes:
        if n is body[-1]:
            after = True
            continue
        if after:
            used_later.update(n.input)
    graph_outputs = {o.name for o in model.graph.output}
    inputs, new_nodes, initializers = [], [], []
    seen = set()
    for n in body:
        for i in n.input:
            if i in produced or i in seen or i == "":
                continue
            seen.add(i)
            if i in constants:
                t = constants[i].attribute[0].t
                if len(t.raw_data) > 256:
                    ext = TensorProto()
                    ext.CopyFrom(t)
                    ext.name = i
                    ext.ClearField("raw_data")
                    ext.data_location = TensorProto.EXTERNAL
                    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", str(len(t.raw_data)))):
                        e = ext.external_data.add()
                        e.key, e.value = k, v
                    initializers.append(ext)
                else:
                    new_nodes.append(constants[i])
            else:
                elem, dims = shapes[i]
                inputs.append(helper.make_tensor_value_info(i, elem, dims))
        new_nodes.append(n)
    outputs = []
    for n in body:
        for o in n.output:
            consumed_inside = any(o in m.input for m in body)
            if o in graph_outputs or o in used_later or not consumed_inside:
                elem, dims = shapes.get(o, (TensorProto.FLOAT, []))
                outputs.append(helper.make_tensor_value_info(o, elem, None))
    graph = helper.make_graph(new_nodes, "cut", inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=model.opset_import, producer_name="tangram cut_seeds.py")
    m.ir_version = model.ir_version
    return m


def main():
    model_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for seed, name, shape, first, end in SEEDS:
        m = cut(onnx.load(os.path.join(model_dir, name)), shape, first, end)
        path = os.path.join(out_dir, seed + ".onnx")
        onnx.save(m, path)
        print(f"{path}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes")


if __name__ == "__main__":
    main()
