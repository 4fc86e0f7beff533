#!/usr/bin/env python3
"""Small .onnx models whose shapes come from values computed inside If branches and Loop / Scan
bodies, in the patterns PyTorch's exporter writes (python3-onnx, Debian).

Writes into tests/data/onnx/folding/ (the answers are worked out by hand in each docstring and
checked by tests/model/test_onnx.c; tests/model/onnx_oracle.py compares every value with ONNX's
own inference and a numpy evaluation):
  pad_if.onnx          F.pad in both branches of an If decided at run time: then_branch the
                       exporter's ConstantOfShape -> Concat -> Reshape -> Slice(step -1) ->
                       Transpose -> Reshape -> Cast chain on a constant pad list; else_branch
                       the same chain on pads computed from the outer x's Shape (Gather, Div,
                       Mul, Unsqueeze, Concat). x 1x3x8x8 -> y 1x3x15x11 either way.
  pad_loop.onnx        the same chain in a Loop body (trip count 2) on pads read from the outer
                       graph, then a Slice whose starts and ends are computed from the body
                       input's Shape cuts the carried value back: stack 2x1x3x15x11.
  interpolate_if.onnx  F.interpolate: Resize with sizes computed from Shape (Cast to float, Mul,
                       Floor, Cast back) in then_branch, with scales computed from Shape (Div of
                       floats) in else_branch. x 1x4x6x10 -> y 1x4x12x15.
  flatten_loop.onnx    torch.flatten(x, 1, 2) in a Loop body (Concat of Shape slices and -1), and
                       an If inside the body whose condition (batch == 2, from Shape) is known
                       when the model is read: only then_branch is planned. stack 3x2x12x5.
  split_scan.onnx      torch.chunk(x, 2, 1) in a Scan body: Split with sizes computed from Shape
                       (Div, Sub), and the same halves by Slice with computed starts; a Split of
                       the Shape vector itself. rows 4x1x6x4 -> ys 4x1x3x4.
  nested_loop.onnx     a Loop body (trip count 2) on x_in 1x2x3x4: F.interpolate to 1x2x6x8 (Resize
                       sizes: Shape[0:2] and Shape[2:4] * 2), and an If decided at run time
                       whose then_branch flattens x_in (Reshape to Concat(Shape[0:1], -1)) and
                       whose else_branch splits its channels in computed halves, concatenates
                       them along the width and Flattens: 1x24 either way. stacks 2x1x2x6x8 and
                       2x1x24.
  arith_if.onnx        integer arithmetic on small tensors inside an If branch, with the answers
                       ONNX's reference gives: Div truncates (-7 / 2 = -3), Mod takes the
                       divisor's sign (-7 mod 3 = 2; fmod=1: -1), Range, Where, Equal, Less,
                       Greater, Min, Max (three inputs), Neg, Abs, Cast int64 -> int32 -> float
                       -> int64, Expand, Squeeze, ReduceProd; the results reshape x 2x3x4 to
                       4x6 (then) and 6x4 -> 4x6 (else). Values only: a reverse Slice clamped
                       at both ends, casts that wrap (int32, uint8), truncate (float -> int) and
                       round (2^24 + 1 -> float32), a Range counting down, a reverse Slice of
                       an empty vector (empty), -2^63 times 1 (-2^63) and -1 (left to the run).
  overflow_if.onnx     hostile: Shape(x) times 2^40, then times 2^30, leaves 64 bits; the
                       Reshape reading it must name the Mul node that overflowed.
  div_zero_loop.onnx   hostile: a Div by zero in a Loop body feeds a Reshape.
Run: python3 tests/data/onnx/folding.py
"""
import os

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "folding")
F = TensorProto.FLOAT
I64 = TensorProto.INT64
INT64_MAX = 2**63 - 1


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, values, dtype=np.int64):
    tensor = numpy_helper.from_array(np.array(values, dtype=dtype), name + "_v")
    return helper.make_node("Constant", [], [name], value=tensor)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def write(name, graph, opset=13, check=True):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tangram-tests")
    model.ir_version = 8
    if check:
        checker.check_model(model)
    save(model, os.path.join(OUT, name))


def runtime_condition(x, p):
    """A condition only known at run time: sum(x) > 0."""
    return [node("ReduceSum", [x], [p + "sum"], keepdims=0),
            const(p + "zero", 0.0, np.float32),
            node("Greater", [p + "sum", p + "zero"], [p + "cond"])]


def torch_pad(x, pad, out, p, rank=4):
    """PyTorch's F.pad (symbolic_opset11._prepare_onnx_paddings): `pad` lists (begin, end)
    pairs from the last dimension backwards; ONNX wants all begins, then all ends."""
    return [
        node("Shape", [pad], [p + "pad_shape"]),
        const(p + "zero_idx", [0]),
        node("Gather", [p + "pad_shape", p + "zero_idx"], [p + "pad_len"], axis=0),
        const(p + "rank", rank),
        const(p + "two", 2),
        node("Mul", [p + "rank", p + "two"], [p + "rank2"]),
        node("Sub", [p + "rank2", p + "pad_len"], [p + "extension"]),
        node("Cast", [pad], [p + "pad64"], to=I64),
        node("ConstantOfShape", [p + "extension"], [p + "zeros"],
             value=numpy_helper.from_array(np.array([0], dtype=np.int64))),
        node("Concat", [p + "pad64", p + "zeros"], [p + "paddings"], axis=0),
        const(p + "pairs", [-1, 2]),
        node("Reshape", [p + "paddings", p + "pairs"], [p + "pair_rows"]),
        const(p + "flip_start", [-1]),
        const(p + "flip_end", [-INT64_MAX]),
        const(p + "flip_axis", [0]),
        const(p + "flip_step", [-1]),
        node("Slice", [p + "pair_rows", p + "flip_start", p + "flip_end", p + "flip_axis", p + "flip_step"],
             [p + "flipped"]),
        node("Transpose", [p + "flipped"], [p + "by_side"], perm=[1, 0]),
        const(p + "flat", [-1]),
        node("Reshape", [p + "by_side", p + "flat"], [p + "onnx_pads"]),
        node("Cast", [p + "onnx_pads"], [p + "pads"], to=I64),
        const(p + "fill", 0.0, np.float32),
        node("Pad", [x, p + "pads", p + "fill"], [out], mode="constant"),
    ]


def dim_of(x, axis, p):
    """Shape(x)[axis] as a 1-element vector, as the exporter writes size(x, axis)."""
    return [node("Shape", [x], [p + "shape"]),
            const(p + "axis", axis),
            node("Gather", [p + "shape", p + "axis"], [p + "dim"], axis=0),
            const(p + "unsq_axes", [0]),
            node("Unsqueeze", [p + "dim", p + "unsq_axes"], [p + "vec"])]


def pad_if():
    # then: pad (1, 2, 3, 4): W + 1 + 2 = 11, H + 3 + 4 = 15.
    then = helper.make_graph(
        [const("t_pad", [1, 2, 3, 4])] + torch_pad("x", "t_pad", "t_y", "t_"),
        "then", [], [vi("t_y", [1, 3, 15, 11])])
    # else: the same pads from x's own dims (8): W/8, W/4, H*3/8, H/2.
    e = []
    e += dim_of("x", 3, "ew_") + dim_of("x", 2, "eh_")
    e += [const("e_8", [8]), const("e_4", [4]), const("e_3", [3]), const("e_2", [2]),
          node("Div", ["ew_vec", "e_8"], ["e_p0"]),
          node("Div", ["ew_vec", "e_4"], ["e_p1"]),
          node("Mul", ["eh_vec", "e_3"], ["e_h3"]),
          node("Div", ["e_h3", "e_8"], ["e_p2"]),
          node("Div", ["eh_vec", "e_2"], ["e_p3"]),
          node("Concat", ["e_p0", "e_p1", "e_p2", "e_p3"], ["e_pad"], axis=0)]
    e += torch_pad("x", "e_pad", "e_y", "e_")
    other = helper.make_graph(e, "else", [], [vi("e_y", [1, 3, 15, 11])])
    g = helper.make_graph(
        runtime_condition("x", "m_") +
        [node("If", ["m_cond"], ["y"], then_branch=then, else_branch=other)],
        "pad_if", [vi("x", [1, 3, 8, 8])], [vi("y", [1, 3, 15, 11])])
    write("pad_if.onnx", g)


def pad_loop():
    # The pad list lives in the outer graph; the body pads its input, stacks the result, and
    # cuts the carried value back with starts (3, 1) and ends starts + Shape(x_in)[2:4].
    body = torch_pad("x_in", "o_pad", "b_padded", "b_")
    body += [node("Shape", ["x_in"], ["b_in_shape"]),
             const("b_hw_start", [2]), const("b_hw_end", [4]),
             node("Slice", ["b_in_shape", "b_hw_start", "b_hw_end"], ["b_hw"]),
             const("b_starts", [3, 1]),
             node("Add", ["b_starts", "b_hw"], ["b_ends"]),
             const("b_axes", [2, 3]),
             node("Slice", ["b_padded", "b_starts", "b_ends", "b_axes"], ["b_cut"]),
             node("Relu", ["b_cut"], ["x_out"]),
             node("Identity", ["cond_in"], ["cond_out"])]
    b = helper.make_graph(body, "body",
                          [vi("i", [], I64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [1, 3, 8, 8])],
                          [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [1, 3, 8, 8]),
                           vi("b_padded", [1, 3, 15, 11])])
    g = helper.make_graph(
        [const("o_pad", [1, 2, 3, 4]), const("M", 2), const("cond", True, np.bool_),
         node("Loop", ["M", "cond", "x"], ["x_final", "stack"], body=b)],
        "pad_loop", [vi("x", [1, 3, 8, 8])], [vi("x_final", [1, 3, 8, 8]), vi("stack", [2, 1, 3, 15, 11])])
    write("pad_loop.onnx", g)


def interpolate_if():
    # sizes: N, C from Shape; H, W = floor(float(6, 10) * (2, 1.5)) = 12, 15.
    t = [node("Shape", ["x"], ["t_shape"]),
         const("t_0", [0]), const("t_2", [2]), const("t_4", [4]),
         node("Slice", ["t_shape", "t_0", "t_2"], ["t_nc"]),
         node("Slice", ["t_shape", "t_2", "t_4"], ["t_hw"]),
         node("Cast", ["t_hw"], ["t_hwf"], to=F),
         const("t_scale", [2.0, 1.5], np.float32),
         node("Mul", ["t_hwf", "t_scale"], ["t_scaled"]),
         node("Floor", ["t_scaled"], ["t_floor"]),
         node("Cast", ["t_floor"], ["t_hw_out"], to=I64),
         node("Concat", ["t_nc", "t_hw_out"], ["t_sizes"], axis=0),
         node("Resize", ["x", "", "", "t_sizes"], ["t_y"], mode="nearest")]
    then = helper.make_graph(t, "then", [], [vi("t_y", [1, 4, 12, 15])])
    # scales: (1, 1) and float(12, 15) / float(6, 10) = (2, 1.5).
    e = [node("Shape", ["x"], ["e_shape"]),
         const("e_2", [2]), const("e_4", [4]),
         node("Slice", ["e_shape", "e_2", "e_4"], ["e_hw"]),
         node("Cast", ["e_hw"], ["e_hwf"], to=F),
         const("e_target", [12, 15]),
         node("Cast", ["e_target"], ["e_targetf"], to=F),
         node("Div", ["e_targetf", "e_hwf"], ["e_ratio"]),
         const("e_ones", [1.0, 1.0], np.float32),
         node("Concat", ["e_ones", "e_ratio"], ["e_scales"], axis=0),
         const("e_roi", [], np.float32),
         node("Resize", ["x", "e_roi", "e_scales"], ["e_y"], mode="linear")]
    other = helper.make_graph(e, "else", [], [vi("e_y", [1, 4, 12, 15])])
    g = helper.make_graph(
        runtime_condition("x", "m_") +
        [node("If", ["m_cond"], ["y"], then_branch=then, else_branch=other)],
        "interpolate_if", [vi("x", [1, 4, 6, 10])], [vi("y", [1, 4, 12, 15])])
    write("interpolate_if.onnx", g)


def flatten_loop():
    # flatten(x_in, 1, 2) on 2x3x4x5: Concat(Shape[0:1], [-1], Shape[3:4]) -> 2x12x5.
    inner_then = helper.make_graph([node("Relu", ["b_flat"], ["it"])], "inner_then", [], [vi("it", [2, 12, 5])])
    inner_else = helper.make_graph([node("Neg", ["b_flat"], ["ie"])], "inner_else", [], [vi("ie", [2, 12, 5])])
    body = [node("Shape", ["x_in"], ["b_shape"]),
            const("b_0", [0]), const("b_1", [1]), const("b_3", [3]), const("b_4", [4]),
            node("Slice", ["b_shape", "b_0", "b_1"], ["b_n"]),
            node("Slice", ["b_shape", "b_3", "b_4"], ["b_w"]),
            const("b_m1", [-1]),
            node("Concat", ["b_n", "b_m1", "b_w"], ["b_target"], axis=0),
            node("Reshape", ["x_in", "b_target"], ["b_flat"]),
            const("b_two", [2]),
            node("Equal", ["b_n", "b_two"], ["b_is2"]),
            const("b_sq", [0]),
            node("Squeeze", ["b_is2", "b_sq"], ["b_c"]),
            node("If", ["b_c"], ["b_out"], then_branch=inner_then, else_branch=inner_else),
            node("Sigmoid", ["x_in"], ["x_out"]),
            node("Identity", ["cond_in"], ["cond_out"])]
    b = helper.make_graph(body, "body",
                          [vi("i", [], I64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [2, 3, 4, 5])],
                          [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [2, 3, 4, 5]),
                           vi("b_out", [2, 12, 5])])
    g = helper.make_graph(
        [node("Loop", ["M", "", "x"], ["x_final", "stack"], body=b)],
        "flatten_loop", [vi("x", [2, 3, 4, 5])], [vi("x_final", [2, 3, 4, 5]), vi("stack", [3, 2, 12, 5])],
        initializer=[numpy_helper.from_array(np.array(3, dtype=np.int64), "M")])
    write("flatten_loop.onnx", g)


def split_scan():
    # Body input row 1x6x4: halves of 3 channels by Split (sizes C/2, C - C/2) and by Slice.
    body = [node("Shape", ["row"], ["b_shape"]),
            const("b_ax", 1),
            node("Gather", ["b_shape", "b_ax"], ["b_c"], axis=0),
            const("b_two", 2),
            node("Div", ["b_c", "b_two"], ["b_half"]),
            node("Sub", ["b_c", "b_half"], ["b_rest"]),
            const("b_unsq", [0]),
            node("Unsqueeze", ["b_half", "b_unsq"], ["b_half1"]),
            node("Unsqueeze", ["b_rest", "b_unsq"], ["b_rest1"]),
            node("Concat", ["b_half1", "b_rest1"], ["b_sizes"], axis=0),
            node("Split", ["row", "b_sizes"], ["b_lo", "b_hi"], axis=1),
            const("b_zero", [0]), const("b_big", [INT64_MAX]), const("b_axes", [1]),
            node("Slice", ["row", "b_zero", "b_half1", "b_axes"], ["b_lo2"]),
            node("Slice", ["row", "b_half1", "b_big", "b_axes"], ["b_hi2"]),
            node("Add", ["b_lo", "b_hi"], ["b_sum"]),
            node("Sub", ["b_lo2", "b_hi2"], ["b_diff"]),
            node("Mul", ["b_sum", "b_diff"], ["b_prod"]),
            # Split of the shape vector itself: (1), (6, 4) -> a 6x4 reshape target.
            const("b_parts", [1, 2]),
            node("Split", ["b_shape", "b_parts"], ["b_batch", "b_tail"], axis=0),
            node("Reshape", ["row", "b_tail"], ["b_mat"]),
            node("Add", ["s_in", "b_mat"], ["s_out"])]
    b = helper.make_graph(body, "body", [vi("s_in", [6, 4]), vi("row", [1, 6, 4])],
                          [vi("s_out", [6, 4]), vi("b_prod", [1, 3, 4])])
    g = helper.make_graph(
        [node("Scan", ["s0", "rows"], ["s", "ys"], body=b, num_scan_inputs=1)],
        "split_scan", [vi("rows", [4, 1, 6, 4])], [vi("s", [6, 4]), vi("ys", [4, 1, 3, 4])],
        initializer=[numpy_helper.from_array(np.zeros((6, 4), dtype=np.float32), "s0")])
    write("split_scan.onnx", g)


def nested_loop():
    then = helper.make_graph(
        [node("Shape", ["x_in"], ["t_shape"]),
         const("t_0", [0]), const("t_1", [1]), const("t_m1", [-1]),
         node("Slice", ["t_shape", "t_0", "t_1"], ["t_n"]),
         node("Concat", ["t_n", "t_m1"], ["t_target"], axis=0),
         node("Reshape", ["x_in", "t_target"], ["t_flat"])],
        "then", [], [vi("t_flat", [1, 24])])
    other = helper.make_graph(
        [node("Shape", ["x_in"], ["e_shape"]),
         const("e_1", [1]), const("e_2", [2]),
         node("Gather", ["e_shape", "e_1"], ["e_c"]),
         node("Div", ["e_c", "e_2"], ["e_half"]),
         node("Sub", ["e_c", "e_half"], ["e_rest"]),
         node("Concat", ["e_half", "e_rest"], ["e_sizes"], axis=0),
         node("Split", ["x_in", "e_sizes"], ["e_lo", "e_hi"], axis=1),
         node("Concat", ["e_lo", "e_hi"], ["e_cat"], axis=3),
         node("Flatten", ["e_cat"], ["e_flat"], axis=1)],
        "else", [], [vi("e_flat", [1, 24])])
    body = [node("Shape", ["x_in"], ["b_shape"]),
            const("b_0", [0]), const("b_2", [2]), const("b_4", [4]),
            node("Slice", ["b_shape", "b_0", "b_2"], ["b_nc"]),
            node("Slice", ["b_shape", "b_2", "b_4"], ["b_hw"]),
            const("b_two", [2]),
            node("Mul", ["b_hw", "b_two"], ["b_hw2"]),
            node("Concat", ["b_nc", "b_hw2"], ["b_sizes"], axis=0),
            node("Resize", ["x_in", "", "", "b_sizes"], ["b_up"], mode="nearest")]
    body += runtime_condition("x_in", "b_")
    body += [node("If", ["b_cond"], ["b_flat"], then_branch=then, else_branch=other),
             node("Relu", ["x_in"], ["x_out"]),
             node("Identity", ["cond_in"], ["cond_out"])]
    b = helper.make_graph(body, "body",
                          [vi("i", [], I64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [1, 2, 3, 4])],
                          [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [1, 2, 3, 4]),
                           vi("b_up", [1, 2, 6, 8]), vi("b_flat", [1, 24])])
    g = helper.make_graph(
        [node("Loop", ["M", "", "x"], ["x_final", "ups", "flats"], body=b)],
        "nested_loop", [vi("x", [1, 2, 3, 4])],
        [vi("x_final", [1, 2, 3, 4]), vi("ups", [2, 1, 2, 6, 8]), vi("flats", [2, 1, 24])],
        initializer=[numpy_helper.from_array(np.array(2, dtype=np.int64), "M")])
    write("nested_loop.onnx", g)


def arith_if():
    t = [const("t_a", [-7, 7, -8, 9]), const("t_b", [2, -2, 3, 3]),
         node("Div", ["t_a", "t_b"], ["t_div"]),                # -3, -3, -2, 3
         node("Mod", ["t_a", "t_b"], ["t_mod"]),                # 1, -1, 1, 0
         node("Mod", ["t_a", "t_b"], ["t_fmod"], fmod=1),       # -1, 1, -2, 0
         node("Abs", ["t_div"], ["t_abs"]),                     # 3, 3, 2, 3
         node("Neg", ["t_abs"], ["t_neg"]),                     # -3, -3, -2, -3
         node("Min", ["t_abs", "t_b", "t_mod"], ["t_min"]),     # 1, -2, 1, 0
         node("Max", ["t_abs", "t_b", "t_fmod"], ["t_max"]),    # 3, 3, 3, 3
         node("Less", ["t_neg", "t_min"], ["t_less"]),          # T, T, T, T
         node("Greater", ["t_max", "t_abs"], ["t_greater"]),    # F, F, T, F
         node("Equal", ["t_max", "t_abs"], ["t_eq"]),           # T, T, F, T
         node("Where", ["t_eq", "t_abs", "t_max"], ["t_pick"]),  # 3, 3, 3, 3
         node("ReduceProd", ["t_pick"], ["t_prod"], keepdims=1),  # [81]
         node("Shape", ["x"], ["t_shape"]),                      # 2, 3, 4
         const("t_r0", 0), const("t_r3", 3), const("t_r1", 1),
         node("Range", ["t_r0", "t_r3", "t_r1"], ["t_idx"]),     # 0, 1, 2
         node("Gather", ["t_shape", "t_idx"], ["t_dims"]),        # 2, 3, 4
         node("Cast", ["t_dims"], ["t_d32"], to=TensorProto.INT32),
         node("Cast", ["t_d32"], ["t_df"], to=F),
         const("t_halfk", [0.5], np.float32),
         node("Mul", ["t_df", "t_halfk"], ["t_halves"]),          # 1, 1.5, 2
         node("Ceil", ["t_halves"], ["t_ceil"]),                  # 1, 2, 2
         node("Cast", ["t_ceil"], ["t_ci"], to=I64),
         const("t_sl0", [1]), const("t_sl1", [3]),
         node("Slice", ["t_ci", "t_sl0", "t_sl1"], ["t_22"]),     # 2, 2
         node("ReduceProd", ["t_22"], ["t_four"], keepdims=1),    # [4]
         node("Div", ["t_prod", "t_four"], ["t_20"]),             # 81 / 4 = 20
         node("Sub", ["t_20", "t_four"], ["t_16"]),               # 16
         node("Div", ["t_16", "t_four"], ["t_rows"]),             # 4
         const("t_shape1", [1]),
         node("Expand", ["t_rows", "t_shape1"], ["t_rows_e"]),    # [4]
         const("t_m1", [-1]),
         node("Concat", ["t_rows_e", "t_m1"], ["t_target"], axis=0),  # 4, -1
         node("Reshape", ["x", "t_target"], ["t_y"]),             # 4x6
         # Edge cases, values only: clamped reverse slice, wrapping casts, float32 rounding.
         const("t_s100", [100]), const("t_sm100", [-100]), const("t_s0", [0]), const("t_sm2", [-2]),
         node("Slice", ["t_dims", "t_s100", "t_sm100", "t_s0", "t_sm2"], ["t_rev"]),  # 4, 2
         const("t_wide", [2**32 + 5, -1, 2**31]),
         node("Cast", ["t_wide"], ["t_wrap"], to=TensorProto.INT32),                   # 5, -1, -2^31
         const("t_bytes", [-1, 263]),
         node("Cast", ["t_bytes"], ["t_u8"], to=TensorProto.UINT8),                   # 255, 7
         const("t_fr", [2.7, -2.7], np.float32),
         node("Cast", ["t_fr"], ["t_trunc"], to=I64),                                 # 2, -2
         const("t_odd", [2**24 + 1]),
         node("Cast", ["t_odd"], ["t_f32"], to=F),                                    # 2^24
         const("t_r5", 5), const("t_rm1", -1), const("t_rm2", -2),
         node("Range", ["t_r5", "t_rm1", "t_rm2"], ["t_down"]),                      # 5, 3, 1
         const("t_empty", np.zeros(0, np.int64)),
         node("Slice", ["t_empty", "t_sm100", "t_s100", "t_s0", "t_sm2"], ["t_none"]),  # empty
         const("t_lowest", [-2**63]), const("t_one", [1]), const("t_minus", [-1]),
         node("Mul", ["t_one", "t_lowest"], ["t_times"]),     # -2^63
         node("Mul", ["t_minus", "t_lowest"], ["t_over"])]    # 2^63 leaves 64 bits: left to the run
    then = helper.make_graph(t, "then", [], [vi("t_y", [4, 6])])
    e = [node("Shape", ["x"], ["e_shape"]),
         const("e_sq", [0]),
         const("e_i", [[1, 2]]),
         node("Gather", ["e_shape", "e_i"], ["e_g"]),               # [[3, 4]]
         node("Squeeze", ["e_g", "e_sq"], ["e_hw"]),               # 3, 4
         const("e_k", [2, 1]),
         node("Mul", ["e_hw", "e_k"], ["e_t"]),                    # 6, 4
         node("Reshape", ["x", "e_t"], ["e_r"]),
         node("Transpose", ["e_r"], ["e_y"], perm=[1, 0])]         # 4x6
    other = helper.make_graph(e, "else", [], [vi("e_y", [4, 6])])
    g = helper.make_graph(
        runtime_condition("x", "m_") +
        [node("If", ["m_cond"], ["y"], then_branch=then, else_branch=other)],
        "arith_if", [vi("x", [2, 3, 4])], [vi("y", [4, 6])])
    write("arith_if.onnx", g)


def hostile():
    then = helper.make_graph(
        [node("Shape", ["x"], ["t_shape"]),
         const("t_big", [2**40, 1]),
         node("Mul", ["t_shape", "t_big"], ["t_a"]),
         const("t_big2", [2**30, 1]),
         node("Mul", ["t_a", "t_big2"], ["t_b"], name="too_big"),
         node("Reshape", ["x", "t_b"], ["t_y"])],
        "then", [], [vi("t_y", [None, None])])
    other = helper.make_graph([node("Relu", ["x"], ["e_y"])], "else", [], [vi("e_y", [1, 4])])
    g = helper.make_graph(
        runtime_condition("x", "m_") +
        [node("If", ["m_cond"], ["y"], then_branch=then, else_branch=other)],
        "overflow_if", [vi("x", [1, 4])], [vi("y", [None, None])])
    write("overflow_if.onnx", g, check=False)
    body = [node("Shape", ["x_in"], ["b_shape"]),
            const("b_zero", [0, 1]),
            node("Div", ["b_shape", "b_zero"], ["b_q"], name="by_zero"),
            node("Reshape", ["x_in", "b_q"], ["b_r"]),
            node("Relu", ["x_in"], ["x_out"]),
            node("Identity", ["cond_in"], ["cond_out"])]
    b = helper.make_graph(body, "body",
                          [vi("i", [], I64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [2, 4])],
                          [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [2, 4]), vi("b_r", [None, None])])
    g = helper.make_graph(
        [node("Loop", ["M", "", "x"], ["x_final", "stack"], body=b)],
        "div_zero_loop", [vi("x", [2, 4])], [vi("x_final", [2, 4]), vi("stack", [2, None, None])],
        initializer=[numpy_helper.from_array(np.array(2, dtype=np.int64), "M")])
    write("div_zero_loop.onnx", g, check=False)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    pad_if()
    pad_loop()
    interpolate_if()
    flatten_loop()
    split_scan()
    nested_loop()
    arith_if()
    hostile()
