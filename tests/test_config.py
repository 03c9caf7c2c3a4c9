"""sg.ConfigProto and sg.GPUOptions (staticgrad/config.py), and where a session runs the ops
that sg.device placed: /cpu always, /gpu on the CPU under soft placement, else TF1's error."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg

pytestmark = pytest.mark.usefixtures("g")  # each test builds in a fresh default graph


def test_tf1s_configuration_is_accepted_as_tf1_programs_write_it():
    config = sg.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                            intra_op_parallelism_threads=2, inter_op_parallelism_threads=2,
                            device_count={"GPU": 0})
    config.gpu_options.allow_growth = True
    config.gpu_options.per_process_gpu_memory_fraction = 0.4
    gpu = sg.GPUOptions(visible_device_list="0")
    assert config.gpu_options.allow_growth and gpu.visible_device_list == "0"
    x = sg.placeholder(sg.float32, [2], name="x")
    with sg.Session(config=config) as sess:
        np.testing.assert_array_equal(sess.run(x * 2.0, {x: [1.0, 2.0]}), [2.0, 4.0])


@pytest.mark.parametrize("make, error, match", [
    (lambda: sg.ConfigProto(allow_soft_placment=True), ValueError,
     'ConfigProto has no "allow_soft_placment" field'),
    (lambda: sg.ConfigProto(allow_soft_placement="yes"), TypeError,
     "allow_soft_placement must be bool, got str"),
    (lambda: sg.ConfigProto(intra_op_parallelism_threads=True), TypeError,
     "intra_op_parallelism_threads must be int, got bool"),
    (lambda: sg.GPUOptions(per_process_gpu_memory_fraction="half"), TypeError,
     "per_process_gpu_memory_fraction must be float"),
    (lambda: sg.Session(config={"allow_soft_placement": True}), TypeError,
     "config must be an sg.ConfigProto, got dict"),
])
def test_a_wrong_field_or_value_is_refused_naming_it(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_fields_take_what_a_protocol_buffer_takes():
    assert sg.GPUOptions(per_process_gpu_memory_fraction=1).per_process_gpu_memory_fraction \
        == 1.0
    assert sg.ConfigProto(device_filters=("/cpu:0",)).device_filters == ["/cpu:0"]


def test_a_gpu_op_without_a_gpu_raises_tf1s_error_naming_op_device_and_line():
    x = sg.placeholder(sg.float32, [2], name="x")
    with sg.device("/gpu:0"):
        y = sg.multiply(x, 2.0, name="double")
    with sg.Session() as sess:
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match=r"Cannot assign a device for operation double: Operation was "
                                 r"explicitly assigned to /device:GPU:0 but available devices "
                                 r"are \[ /job:localhost/replica:0/task:0/device:CPU:0 \] "
                                 r"\(Mul op \"double\" created at \S*test_config.py:\d+\)") as e:
            sess.run(y, {x: [1.0, 2.0]})
        assert e.value.op is y.op
        # what needs no GPU op still runs
        np.testing.assert_array_equal(sess.run(x + 1.0, {x: [1.0, 2.0]}), [2.0, 3.0])


@pytest.mark.parametrize("name", ["/gpu:0", "/job:ps/task:1", "/device:TPU:0", "/cpu:1"])
def test_soft_placement_runs_what_has_no_device_here_on_the_cpu(name):
    x = sg.placeholder(sg.float32, [2], name="x")
    with sg.device(name):
        y = sg.multiply(x, 2.0, name="double")
    with sg.Session(config=sg.ConfigProto(allow_soft_placement=True)) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])


@pytest.mark.parametrize("name", ["/cpu:0", "/job:localhost/replica:0/task:0/device:CPU:0",
                                  "/device:CPU:*"])
def test_the_cpu_always_runs(name):
    with sg.device(name):
        w = sg.Variable([1.0, 2.0], name="w")
        y = sg.reduce_sum(w * 3.0)
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        assert sess.run(y) == 9.0


def test_log_device_placement_prints_each_op_and_its_device(capsys):
    x = sg.placeholder(sg.float32, [2], name="x")
    with sg.device("/gpu:0"):
        y = sg.multiply(x, 2.0, name="double")
    config = sg.ConfigProto(allow_soft_placement=True, log_device_placement=True)
    with sg.Session(config=config) as sess:
        sess.run(y, {x: [1.0, 2.0]})
    err = capsys.readouterr().err.splitlines()
    assert "double: (Mul): /job:localhost/replica:0/task:0/device:CPU:0" in err
    assert "x: (Placeholder): /job:localhost/replica:0/task:0/device:CPU:0" not in err  # (fed)
