"""The CUDA reductions and softmax kernels (staticgrad/backends/cuda/reduce.py): their plans'
shapes against NumPy's, and every kernel compiled by nvcc for sm_80 and sm_90, all of a
test's plans in one translation unit as the CUDA backend pastes them. Their answers are
checked on a GPU by test_reduce_gpu.py."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from staticgrad.backends.cuda.reduce import reduce_plan, softmax_plan, xent_plan

SHAPES = [(), (1,), (7,), (1 << 24,), (3, 5), (1024, 4096), (4096, 3), (1 << 22, 2), (8, 1 << 21),
          (2, 3, 4), (5, 1, 7, 9), (64, 33, 2, 3), (0, 4), (3, 0, 2)]
DTYPES = {"Sum": ["float32", "float64", "int32", "int64"], "Mean": ["float32", "int64"],
          "Max": ["float32", "float64", "int32"], "Min": ["float64", "int64"],
          "Prod": ["float32", "int32"], "All": ["bool"], "Any": ["bool"],
          "ArgMax": ["float32", "int64"], "ArgMin": ["float64", "int32"]}


def _axes_choices(rank):
    """No axis, the innermost, the outermost, a middle one, two apart, and all."""
    choices = {(), (rank - 1,), (0,), (rank // 2,), (0, rank - 1), tuple(range(rank))}
    return sorted(a for a in choices if all(0 <= i < rank for i in a) and len(set(a)) == len(a))


def _nvcc():
    found = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists(
        "/usr/local/bin/nvcc") else None)
    if found is None:
        pytest.skip("nvcc is not installed")
    return found


def _one_of_each_form(sources):
    """The sources with one of those that differ only in names and numbers (their shapes):
    nvcc would find the same in each, and a translation unit of them all takes minutes."""
    forms = {}
    for source in sources:
        form = re.sub(r"//.*", "", source)
        form = re.sub(r"\b[A-Za-z_]*\d+[A-Za-z_\d]*\b", "N", form)
        forms.setdefault(form, source)
    return list(forms.values())


def compile_all(sources, tmp_path):
    """Compile the sources as one translation unit for sm_80 and sm_90; any error or warning
    fails."""
    nvcc = _nvcc()
    unit = tmp_path / "unit.cu"
    unit.write_text("\n".join(_one_of_each_form(sources)))
    runs = {arch: subprocess.Popen([nvcc, "-ptx", f"-arch={arch}", "-Werror", "all-warnings",
                                    "-o", str(tmp_path / f"unit_{arch}.ptx"), str(unit)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for arch in ("sm_80", "sm_90")}  # side by side: each takes seconds
    for arch, run in runs.items():
        messages = run.communicate()[0].strip()
        assert run.returncode == 0 and "warning" not in messages, f"nvcc {arch}:\n{messages}"


def _reference_shape(op_type, shape, axes, keepdims, dtype):
    x = np.broadcast_to(np.zeros((), dtype), shape)
    if op_type in ("ArgMax", "ArgMin"):
        return np.argmax(x, axis=axes[0]).shape
    return np.sum(x, axis=axes, keepdims=keepdims).shape


def _reduce_cases():
    for op_type, dtypes in DTYPES.items():
        for shape in SHAPES:
            for axes, keepdims in itertools.product(_axes_choices(len(shape)), (False, True)):
                if op_type in ("ArgMax", "ArgMin"):
                    if len(axes) != 1 or keepdims or shape[axes[0]] == 0:
                        continue
                elif op_type in ("Max", "Min") and 0 in shape and \
                        math_prod(shape[a] for a in axes) == 0:
                    continue
                for dtype in dtypes:
                    yield op_type, shape, axes, keepdims, dtype


def math_prod(values):
    return int(np.prod(list(values), dtype=np.int64))


def _check_plan(plan, where):
    assert "atomic" not in plan.source, where  # a plan's answer is the same on every run
    for launch in plan.launches:
        assert re.search(rf'extern "C" __global__ void __launch_bounds__\({launch.block}\)\s+'
                         rf'{launch.kernel}\(', plan.source), where
        assert 1 <= launch.block <= 1024 and launch.grid >= 1 and launch.shared == 0, where
        params = re.search(rf"{launch.kernel}\(([^)]*)\)", plan.source).group(1)
        assert [p.split()[-1] for p in params.split(", ")] == launch.args, where
        assert all(re.fullmatch(r"(in|out|scratch)\d+", a) for a in launch.args), where
    used = {a for launch in plan.launches for a in launch.args}
    assert {f"scratch{i}" for i in range(len(plan.scratch))} <= used, where
    assert {f"out{i}" for i in range(len(plan.outputs))} <= used or not plan.launches, where


def test_reduce_plans_compile_and_match_numpy_shapes(tmp_path):
    sources = []
    for i, (op_type, shape, axes, keepdims, dtype) in enumerate(_reduce_cases()):
        out_dtype = "int64" if op_type in ("ArgMax", "ArgMin") and i % 2 else \
            "int32" if op_type in ("ArgMax", "ArgMin") else dtype
        where = f"{op_type} of {dtype}{shape} over {axes}, keepdims={keepdims}"
        plan = reduce_plan(f"r{i}", op_type, shape, axes, keepdims, dtype, out_dtype)
        assert plan.outputs == [(_reference_shape(op_type, shape, axes, keepdims, dtype),
                                 out_dtype)], where
        _check_plan(plan, where)
        n_out = math_prod(plan.outputs[0][0])
        n_reduced = math_prod(shape[a] for a in axes)
        assert len(plan.launches) == (0 if n_out == 0 else 1 + bool(plan.scratch)), where
        if n_out and n_reduced >= 1 << 22 and n_out <= 2:  # few outputs of many: two passes
            assert len(plan.launches) == 2 and plan.scratch[0].shape[0] >= 64 * n_out, where
        sources.append(plan.source)
    compile_all(sources, tmp_path)


def test_the_paths_each_size_takes():
    """A block an output for long contiguous rows, a thread an output for short ones, a
    warp's threads on neighbouring columns for a column sum, two passes for a full sum."""
    rows = reduce_plan("a", "Sum", (1024, 4096), (1,), False, "float32", "float32")
    assert [(x.grid, x.block) for x in rows.launches] == [(1024, 256)]
    short = reduce_plan("b", "Sum", (1 << 20, 3), (1,), False, "float32", "float32")
    assert [(x.grid, x.block) for x in short.launches] == [(4096, 256)]
    assert "const int y = threadIdx.x % 1, x = threadIdx.x / 1;" in short.source
    columns = reduce_plan("c", "Sum", (4096, 4096), (0,), False, "float32", "float32")
    assert "const int x = threadIdx.x % 32, y = threadIdx.x / 32;" in columns.source
    full = reduce_plan("d", "Sum", (1 << 24,), (0,), False, "float32", "float32")
    assert [x.kernel for x in full.launches] == ["d", "d_final"]
    assert full.launches[1].grid == 1 and full.scratch[0].dtype == "float64"


def test_load_and_its_arrays_compile(tmp_path):
    fused = reduce_plan("fused", "Sum", (64, 1000), (1,), False, "float32", "float32",
                        load="in0[idx] * in1[idx % 1000]",
                        arrays=[("const float*", "in0"), ("const float*", "in1")])
    assert fused.launches[0].args == ["in0", "in1", "out0"]
    big = reduce_plan("fused_big", "Max", (1 << 24,), (0,), False, "float32", "float32",
                      load="in0[idx] + in1[0]",
                      arrays=[("const float*", "in0"), ("const float*", "in1")])
    assert big.launches[0].args == ["in0", "in1", "scratch0"]
    assert big.launches[1].args == ["scratch0", "out0"]
    # the first array of any type (a bool mask here), or none at all
    masked = reduce_plan("masked", "Max", (64, 1000), (1,), False, "float32", "float32",
                         load="(in0[idx] ? in1[idx] : 0.0f)",
                         arrays=[("const bool*", "in0"), ("const float*", "in1")])
    assert "const bool* __restrict__ in0" in masked.source
    count = reduce_plan("count", "Sum", (64, 1000), (1,), False, "float32", "float32",
                        load="(float)(idx % 2)", arrays=[])
    assert count.launches[0].args == ["out0"]
    compile_all([fused.source, big.source, masked.source, count.source], tmp_path)


def test_refusals():
    with pytest.raises(ValueError, match="empty axis"):
        reduce_plan("e", "Max", (3, 0), (1,), False, "float32", "float32")
    with pytest.raises(ValueError, match="one axis"):
        reduce_plan("e", "ArgMax", (3, 4), (0, 1), False, "float32", "int64")
    with pytest.raises(ValueError, match="float16"):
        reduce_plan("e", "Sum", (3,), (0,), False, "float16", "float16")


SOFTMAX_SHAPES = [((1,), 0), ((7,), 0), ((5, 3), 1), ((5, 3), 0), ((64, 1000), -1),
                  ((8, 1024), 1), ((4, 1025), 1), ((2, 16384), 1), ((2, 100000), 1),
                  ((3, 4, 5), 1), ((2, 0, 3), 2), ((2, 0, 3), 1), ((1 << 20, 10), 1),
                  ((1000, 3), 0), ((2, 300, 40), 1)]


def test_softmax_plans_compile(tmp_path):
    sources = []
    for i, ((shape, axis), dtype, op_type) in enumerate(itertools.product(
            SOFTMAX_SHAPES, ("float32", "float64"), ("Softmax", "LogSoftmax"))):
        plan = softmax_plan(f"s{i}", op_type, shape, axis, dtype)
        assert plan.outputs == [(shape, dtype)]
        assert len(plan.launches) == (1 if math_prod(shape) else 0)
        _check_plan(plan, f"{op_type} of {dtype}{shape} along {axis}")
        sources.append(plan.source)
    compile_all(sources, tmp_path)


def test_xent_plans_compile(tmp_path):
    sources = []
    for i, ((shape, axis), dtype, backprop) in enumerate(itertools.product(
            SOFTMAX_SHAPES, ("float32", "float64"), (False, True))):
        where = f"xent of {dtype}{shape} along {axis}, backprop={backprop}"
        plan = xent_plan(f"x{i}", "SoftmaxCrossEntropyWithLogits", shape, dtype, axis=axis,
                         backprop=backprop)
        loss = np.sum(np.zeros(shape), axis=axis).shape
        assert plan.outputs == [(loss, dtype)] + ([(shape, dtype)] if backprop else []), where
        _check_plan(plan, where)
        sources.append(plan.source)
        labels = "int64" if i % 2 else "int32"
        sparse = xent_plan(f"xs{i}", "SparseSoftmaxCrossEntropyWithLogits", shape, dtype,
                           labels_dtype=labels, backprop=backprop)
        assert sparse.outputs[0] == (shape[:-1], dtype), where
        _check_plan(sparse, where)
        sources.append(sparse.source)
    compile_all(sources, tmp_path)


def test_a_row_of_more_than_a_warp_has_a_block_of_whole_warps_to_itself():
    """The softmax rows layout's shared parts[G // 32] hold one row's warps: wherever G > 32,
    a block is one row's (threads == G) and G a whole number of warps."""
    from staticgrad.backends.cuda.reduce import _row_layout
    for n in [*range(1, 3000), 4095, 4096, 4097, 10000, 16384, 16385, 100000, 1 << 20]:
        G, threads, _ = _row_layout(n)
        assert G <= 32 or (threads == G and G % 32 == 0), (n, G, threads)
