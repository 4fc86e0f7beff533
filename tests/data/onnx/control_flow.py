#!/usr/bin/env python3
"""Small .onnx models with control flow for the reader's tests (python3-onnx, Debian).

Writes into tests/data/onnx/control_flow/:
  loop.onnx          Loop, trip count 3: x (1x8) carried through Relu(Add(x, w)) and stacked
                     per iteration (scan output 3x1x8); an outer value read inside the body.
  scan.onnx          Scan (opset 11) over a 5x4 input: a running sum (state 4) and its Tanh
                     stacked (5x4).
  loop_counted.onnx  Loop whose trip count and condition are computed at run time (from the
                     input), carrying x (2x4) through Relu(Add(x, w)).
  if_nested.onnx     If whose then_branch holds another If (conditions computed at run time).
  if_known.onnx      If whose condition is an initializer (false): only the else_branch is kept.
  loop_grows.onnx    hostile: a Loop-carried value that changes shape in the body (Concat).
  if_outputs.onnx    hostile: an else_branch with two outputs for a one-output If.
  loop_dynamic.onnx  hostile: a scan output with the trip count computed at run time.
Run: python3 tests/data/onnx/control_flow.py
"""
import os

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "control_flow")
F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def write(name, graph, opset=13, check=True):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tangram-tests")
    model.ir_version = 8
    if check:
        checker.check_model(model)
    save(model, os.path.join(OUT, name))


def loop():
    body = helper.make_graph(
        [helper.make_node("Add", ["x_in", "w"], ["sum"]),
         helper.make_node("Relu", ["sum"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["x_out", "x_out"], ["sq"])],
        "body",
        [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [1, 8])],
        [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [1, 8]), vi("sq", [1, 8])])
    g = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["x0"]),
         helper.make_node("Neg", ["x"], ["w"]),
         helper.make_node("Loop", ["M", "cond", "x0"], ["x_final", "stack"], body=body),
         helper.make_node("Add", ["x_final", "w"], ["y"])],
        "loop", [vi("x", [1, 8])], [vi("y", [1, 8]), vi("stack", [3, 1, 8])],
        initializer=[numpy_helper.from_array(np.array(3, dtype=np.int64), "M"),
                     numpy_helper.from_array(np.array(True), "cond")])
    write("loop.onnx", g)


def scan():
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]),
         helper.make_node("Tanh", ["s_out"], ["t"])],
        "scan_body", [vi("s_in", [4]), vi("row", [4])], [vi("s_out", [4]), vi("t", [4])])
    g = helper.make_graph(
        [helper.make_node("Exp", ["x"], ["e"]),
         helper.make_node("Scan", ["s0", "e"], ["s", "ts"], body=body, num_scan_inputs=1),
         helper.make_node("Relu", ["ts"], ["y"])],
        "scan", [vi("x", [5, 4])], [vi("s", [4]), vi("y", [5, 4])],
        initializer=[numpy_helper.from_array(np.zeros(4, dtype=np.float32), "s0")])
    write("scan.onnx", g, opset=11)


def loop_counted():
    body = helper.make_graph(
        [helper.make_node("Add", ["x_in", "w"], ["sum"]),
         helper.make_node("Relu", ["sum"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [2, 4])],
        [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [2, 4])])
    g = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
         helper.make_node("Cast", ["m"], ["n"], to=TensorProto.INT64),
         helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("Neg", ["x"], ["w"]),
         helper.make_node("Loop", ["n", "c", "x"], ["x_final"], body=body),
         helper.make_node("Add", ["x_final", "w"], ["y"])],
        "loop_counted", [vi("x", [2, 4])], [vi("y", [2, 4])],
        initializer=[numpy_helper.from_array(np.array(0, dtype=np.float32), "zero")])
    write("loop_counted.onnx", g)


def if_nested():
    inner_then = helper.make_graph([helper.make_node("Relu", ["a"], ["it"])], "inner_then", [], [vi("it", [2, 6])])
    inner_else = helper.make_graph([helper.make_node("Neg", ["a"], ["ie"])], "inner_else", [], [vi("ie", [2, 6])])
    then = helper.make_graph(
        [helper.make_node("Exp", ["x"], ["a"]),
         helper.make_node("If", ["c2"], ["inner"], then_branch=inner_then, else_branch=inner_else),
         helper.make_node("Add", ["inner", "x"], ["t_out"])],
        "then", [], [vi("t_out", [2, 6])])
    other = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["e_out"])], "else", [], [vi("e_out", [2, 6])])
    g = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("Less", ["s", "zero"], ["c2"]),
         helper.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other),
         helper.make_node("Mul", ["r", "r"], ["y"])],
        "if_nested", [vi("x", [2, 6])], [vi("y", [2, 6])],
        initializer=[numpy_helper.from_array(np.array(0, dtype=np.float32), "zero")])
    write("if_nested.onnx", g, opset=11)


def if_known():
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", [4])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Exp", ["n"], ["e_out"])],
                              "else", [], [vi("e_out", [4])])
    g = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["s"]),
         helper.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other),
         helper.make_node("Mul", ["r", "s"], ["y"])],
        "if_known", [vi("x", [4])], [vi("y", [4])],
        initializer=[numpy_helper.from_array(np.array(False), "c")])
    write("if_known.onnx", g)


def hostile():
    body = helper.make_graph(
        [helper.make_node("Concat", ["x_in", "x_in"], ["x_out"], axis=1),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "grows", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [1, 4])],
        [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [1, None])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)],
        "loop_grows", [vi("x", [1, 4])], [vi("y", [1, None])],
        initializer=[numpy_helper.from_array(np.array(2, dtype=np.int64), "M")])
    write("loop_grows.onnx", g, check=False)
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", [3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e1"]), helper.make_node("Abs", ["x"], ["e2"])],
                              "else", [], [vi("e1", [3]), vi("e2", [3])])
    g = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
         helper.make_node("Greater", ["m", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        "if_outputs", [vi("x", [3])], [vi("y", [3])],
        initializer=[numpy_helper.from_array(np.array(0, dtype=np.float32), "zero")])
    write("if_outputs.onnx", g, check=False)
    body = helper.make_graph(
        [helper.make_node("Relu", ["x_in"], ["x_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Exp", ["x_in"], ["e"])],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("x_in", [4])],
        [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [4]), vi("e", [4])])
    g = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
         helper.make_node("Cast", ["m"], ["n"], to=TensorProto.INT64),
         helper.make_node("Loop", ["n", "", "x"], ["y", "stack"], body=body)],
        "loop_dynamic", [vi("x", [4])], [vi("y", [4]), vi("stack", [None, 4])])
    write("loop_dynamic.onnx", g, check=False)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    loop()
    scan()
    loop_counted()
    if_nested()
    if_known()
    hostile()
