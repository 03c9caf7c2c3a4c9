"""The emulator's device arrays keep CuPy's manners (emulator.py): the host/device mix-ups that
a GPU refuses are refused on the CPU too, and what CuPy takes is taken."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backends.cuda.emulator import CXX, DeviceArray, fake_cupy

cp = fake_cupy()


def _device(values, dtype=None):
    return cp.asarray(np.asarray(values, dtype=dtype))


def test_a_device_array_reaches_the_host_through_get_alone():
    a = _device(np.arange(6.0).reshape(2, 3))
    for implicit in (np.asarray, np.array, np.ascontiguousarray, lambda x: np.zeros(3)[x[0, 0]]):
        with pytest.raises(TypeError, match="Implicit conversion to a NumPy array"):
            implicit(a)
    for host in (a.get(), cp.asnumpy(a)):
        assert type(host) is np.ndarray
        np.testing.assert_array_equal(host, np.arange(6.0).reshape(2, 3))


def test_cupy_functions_refuse_host_arrays_and_copy_them_where_cupy_does():
    a, host = _device([1.0, 2.0, 3.0]), np.ones(3)
    for mixed in (lambda: cp.add(a, host), lambda: a + host, lambda: host * a,
                  lambda: cp.concatenate([a, host]), lambda: cp.ascontiguousarray(host),
                  lambda: cp.matmul(a, host)):
        with pytest.raises(TypeError, match="Unsupported type"):
            mixed()
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        a[:] = host
    # a host value copied over (not shared), a host index, an advanced assignment's values
    copied = cp.asarray(host)
    copied[0] = 5.0
    assert host[0] == 1.0
    a[np.array([0, 2])] = np.array([7.0, 9.0])
    np.testing.assert_array_equal(a.get(), [7.0, 2.0, 9.0])


def test_numpy_functions_on_device_arrays_compute_on_the_device():
    a = _device([[1.0, 2.0], [3.0, 4.0]])
    for result in (np.sum(a), np.exp(a), a.sum(), a[0, 1], a.T @ a):
        assert isinstance(result, DeviceArray)
    assert np.sum(a).shape == () and float(np.sum(a)) == 10.0


def test_int_and_float_take_a_0d_array_alone():
    assert int(_device(3)) == 3 and float(_device(2.5)) == 2.5 and bool(_device(True))
    for one in (_device([3]), _device([[2.5]])):
        for convert in (int, float):
            with pytest.raises(TypeError, match="only 0-dimensional arrays"):
                convert(one)
    with pytest.raises(TypeError):
        range(_device(3))  # (no __index__)


@pytest.mark.parametrize("ufunc, takes", [
    ("add", ["float16", "float32", "float64", "int32", "uint32", "uint64"]),
    ("subtract", ["int32", "uint32"])])
def test_ufunc_at_takes_cupys_dtypes_alone(ufunc, takes):
    for dtype in ["float16", "float32", "float64", "int8", "int32", "int64", "uint32", "uint64",
                  "bool", "complex64"]:
        a, ones = cp.zeros(3, dtype=dtype), np.ones(2, dtype)
        if dtype in takes:
            getattr(cp, ufunc).at(a, _device([1, 1]), cp.asarray(ones))
            want = np.zeros(3, dtype)
            getattr(np, ufunc).at(want, [1, 1], ones)
            np.testing.assert_array_equal(a.get(), want)
        else:
            with pytest.raises(TypeError, match=f"cupy.{ufunc}.at only supports"):
                getattr(cp, ufunc).at(a, _device([1, 1]), cp.asarray(ones))


def test_an_assignment_to_a_repeated_place_keeps_its_first_value():
    """NumPy keeps the last; CuPy any one: code that counts on NumPy's order fails here."""
    a = cp.zeros((3, 2))
    a[_device([1, 2, 1])] = _device([[5.0, 5.0], [6.0, 6.0], [7.0, 7.0]])
    np.testing.assert_array_equal(a.get(), [[0, 0], [5, 5], [6, 6]])


@pytest.mark.skipif(CXX is None, reason="no C++ compiler for the emulator")
def test_a_kernel_takes_device_arrays_alone():
    code = ('extern "C" __global__ void __launch_bounds__(32) ones(float* __restrict__ out) '
            '{ out[threadIdx.x] = 1.0f; }')
    ones = cp.RawModule(code=code).get_function("ones")
    with pytest.raises(AssertionError, match="argument 0 is not a device array"):
        ones((1,), (32,), (np.zeros(32, np.float32),))
    out = cp.zeros(32, dtype=cp.float32)
    ones((1,), (32,), (out,))
    np.testing.assert_array_equal(out.get(), np.ones(32, np.float32))


@pytest.mark.skipif(CXX is None, reason="no C++ compiler for the emulator")
def test_a_capture_records_launches_and_cupy_calls_that_a_graphs_launch_replays():
    """As on a GPU: a capture computes nothing (what existed before it is left as it was),
    a launch of its graph computes it all on the values then, and reading a value back
    while capturing is CUDA's error, which invalidates the capture."""
    code = ('extern "C" __global__ void __launch_bounds__(32) twice(const float* __restrict__ '
            'x, float* __restrict__ out) { out[threadIdx.x] = 2.0f * x[threadIdx.x]; }')
    twice = cp.RawModule(code=code).get_function("twice")
    x, total = cp.zeros(32, dtype=cp.float32), cp.zeros((), dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        doubled = cp.empty(32, dtype=cp.float32)
        twice((1,), (32,), (x, doubled))
        total[...] = cp.sum(doubled[::2]) + 1.0
        graph = stream.end_capture()
    assert float(total) == 0.0  # (nothing computed)
    for k in range(1, 4):
        x[...] = cp.asarray(np.arange(32, dtype=np.float32) * k)
        graph.launch()
        assert float(total) == 2 * k * np.arange(0, 32, 2).sum() + 1
    with stream:
        stream.begin_capture()
        # (and what CuPy reads a count back for, to know its result's shape)
        for wait in (lambda: total.get(), lambda: float(total), lambda: cp.asarray(np.ones(2)),
                     lambda: cp.asnumpy(x), lambda: bool(total), lambda: cp.unique(x),
                     lambda: x[x > 0], lambda: cp.nonzero(x), lambda: x.nonzero()):
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="capturing"):
                wait()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="Invalidated"):
            stream.end_capture()
    # CuPy's cuBLAS wrappers refuse a capturing stream before any work (NotImplementedError),
    # for floating arrays; an integer matmul is a kernel of CuPy's own
    floats, ints = cp.ones((2, 2), dtype=cp.float32), cp.ones((2, 2), dtype=cp.int32)
    with stream:
        stream.begin_capture()
        for blas in (lambda: floats @ floats, lambda: cp.matmul(floats, floats),
                     lambda: cp.dot(floats, floats), lambda: floats.dot(floats),
                     lambda: cp.tensordot(floats, floats, axes=1)):
            with pytest.raises(NotImplementedError, match="cuBLAS API during stream capture"):
                blas()
        ints @ ints
        scalar = cp.asarray(2.5)  # (a 0-d host value: CuPy's fill, a kernel, no copy)
        graph = stream.end_capture()  # (still valid)
    graph.launch()
    assert float(scalar) == 2.5


@pytest.mark.skipif(CXX is None, reason="no C++ compiler for the emulator")
@pytest.mark.parametrize("mask, width", [(8, 8), (4, 16), (1, 2), (16, 32), (16, 8)])
def test_a_xor_shuffle_keeps_to_its_group_of_width_lanes(mask, width):
    """CUDA's __shfl_xor_sync: lane l reads lane l ^ mask of its warp, unless that lane is
    in a later group of `width` lanes, when it keeps its own value."""
    code = ('extern "C" __global__ void __launch_bounds__(64) xor_shuffle(float* __restrict__ '
            f'out) {{ out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (float)threadIdx.x, '
            f'{mask}, {width}); }}')
    shuffle = cp.RawModule(code=code).get_function("xor_shuffle")
    out = cp.zeros(64, dtype=cp.float32)
    shuffle((1,), (64,), (out,))
    want = []
    for t in range(64):
        lane, source = t % 32, (t % 32) ^ mask
        want.append(t if source // width > lane // width else t - lane + source)
    np.testing.assert_array_equal(out.get(), want)
