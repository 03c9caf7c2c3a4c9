"""Checkpoints: round trips, the on-disk format, max_to_keep, atomic writes, all-or-nothing
restores and the errors that name what is wrong."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import lineno

HERE = os.path.basename(__file__)


VALUES = {
    "f32": np.array([[1.5, -2.0, 3.25], [0.0, 4.0, -1.0]], dtype=np.float32),
    "f64": np.array(2.718281828459045, dtype=np.float64),
    "i32": np.array([1, -2, 3], dtype=np.int32),
    "i64": np.array(2**40, dtype=np.int64),
    "flag": np.array([[True, False], [False, True]]),
}


def build_model(values=VALUES):
    """One variable per entry of `values`, in a scope, as a user would write them."""
    with sg.variable_scope("model"):
        return {name: sg.Variable(value, name=name) for name, value in values.items()}


def session_with(variables, graph=None):
    sess = sg.Session(graph=graph)
    sess.run(sg.variables_initializer(list(variables.values())))
    return sess


def values_of(sess, variables):
    return {name: np.array(sess.run(v)) for name, v in variables.items()}


def clobber(sess, variables):
    """Give every variable a different value (so a restore must change it back)."""
    for name, v in variables.items():
        v.load(np.zeros_like(VALUES[name]) if VALUES[name].dtype != bool
               else ~VALUES[name], sess)


def assert_values(actual, expected):
    assert actual.keys() == expected.keys()
    for name in expected:
        a, e = actual[name], np.asarray(expected[name])
        assert a.dtype == e.dtype, (name, a.dtype, e.dtype)
        assert a.shape == e.shape, (name, a.shape, e.shape)
        np.testing.assert_array_equal(a, e, err_msg=name)


def dir_listing(path):
    return sorted(os.listdir(path))


def read_index(directory, filename="checkpoint.json"):
    with open(os.path.join(directory, filename)) as f:
        return json.load(f)


# -- round trips ----------------------------------------------------------------------------------

def test_round_trip_every_dtype_and_shape(g, tmp_path):
    variables = build_model()
    sess = session_with(variables)
    before = values_of(sess, variables)
    assert_values(before, VALUES)
    saver = sg.train.Saver()
    prefix = saver.save(sess, str(tmp_path / "model"))
    assert prefix == str(tmp_path / "model")
    clobber(sess, variables)
    assert not np.array_equal(sess.run(variables["f32"]), VALUES["f32"])
    saver.restore(sess, prefix)
    assert_values(values_of(sess, variables), before)
    # the restored values are the session's own: later updates work on them
    sess.run(variables["i32"].assign_add([1, 1, 1]))
    np.testing.assert_array_equal(sess.run(variables["i32"]), [2, -1, 4])


def test_restore_into_a_fresh_session(g, tmp_path):
    variables = build_model()
    saver = sg.train.Saver()
    prefix = saver.save(session_with(variables), str(tmp_path / "model"))
    fresh = sg.Session()  # nothing initialized
    saver.restore(fresh, prefix)
    assert_values(values_of(fresh, variables), VALUES)


def test_restore_into_a_fresh_graph_rebuilt_with_the_same_names(tmp_path):
    with sg.Graph().as_default():
        variables = build_model()
        prefix = sg.train.Saver().save(session_with(variables), str(tmp_path / "model"))
    with sg.Graph().as_default() as graph2:
        zeros = {name: np.zeros_like(v) for name, v in VALUES.items()}
        rebuilt = build_model(zeros)
        assert [v.op.name for v in rebuilt.values()] == [f"model/{n}" for n in VALUES]
        sess = sg.Session(graph=graph2)
        sg.train.Saver().restore(sess, prefix)
        assert_values(values_of(sess, rebuilt), VALUES)


def test_the_file_is_an_npz_of_variable_names_and_the_index_is_relative_json(g, tmp_path):
    variables = build_model()
    prefix = sg.train.Saver().save(session_with(variables), str(tmp_path / "model"),
                                   global_step=3)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-3.npz"]
    with np.load(prefix + ".npz", allow_pickle=False) as archive:
        assert sorted(archive.files) == sorted(f"model/{n}" for n in VALUES)
        for name, value in VALUES.items():
            stored = archive[f"model/{name}"]
            assert stored.dtype == value.dtype and stored.shape == value.shape
            np.testing.assert_array_equal(stored, value)
    index = read_index(tmp_path)
    assert index["format"] == "staticgrad-checkpoint-index" and index["version"] == 1
    assert index["model_checkpoint_path"] == "model-3"
    assert index["all_model_checkpoint_paths"] == ["model-3"]
    assert len(index["all_model_checkpoint_timestamps"]) == 1


def test_default_var_list_saves_optimizer_slots_and_the_global_step(tmp_path):
    def build():
        w = sg.Variable([1.0, -2.0], name="w")
        loss = sg.reduce_sum(w * w)
        step = sg.train.get_or_create_global_step()
        train = sg.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
        return w, step, train

    with sg.Graph().as_default() as g1:
        w, step, train = build()
        saver = sg.train.Saver()
        names = {v.op.name for v in sg.global_variables()}
        assert {"global_step", "w/Adam", "w/Adam_1"} <= names
        sess = sg.Session(graph=g1)
        sess.run(sg.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        prefix = saver.save(sess, str(tmp_path / "model"), global_step=step)
        assert prefix.endswith("model-3")
        with np.load(prefix + ".npz", allow_pickle=False) as archive:
            assert set(archive.files) == names
        sess.run(train)
        expected_w = sess.run(w)
    with sg.Graph().as_default() as g2:
        w2, step2, train2 = build()
        sess2 = sg.Session(graph=g2)
        sg.train.Saver().restore(sess2, prefix)
        assert sess2.run(step2) == 3
        sess2.run(train2)  # Adam's moments and powers came back too: the same next step
        np.testing.assert_array_equal(sess2.run(w2), expected_w)


def test_var_list_as_a_dict_with_custom_names(tmp_path):
    with sg.Graph().as_default() as g1:
        w = sg.Variable([[1.0, 2.0]], name="w")
        b = sg.Variable(5, name="b")
        sess = sg.Session(graph=g1)
        sess.run(sg.global_variables_initializer())
        prefix = sg.train.Saver({"layer/kernel": w, "file": b}).save(sess, str(tmp_path / "m"))
    with np.load(prefix + ".npz", allow_pickle=False) as archive:
        assert sorted(archive.files) == ["file", "layer/kernel"]
    with sg.Graph().as_default() as g2:  # other variable names, mapped by the dict
        kernel = sg.Variable([[0.0, 0.0]], name="dense/kernel")
        bias = sg.Variable(0, name="dense/bias")
        sess2 = sg.Session(graph=g2)
        sg.train.Saver({"layer/kernel": kernel, "file": bias}).restore(sess2, prefix)
        np.testing.assert_array_equal(sess2.run(kernel), [[1.0, 2.0]])
        assert sess2.run(bias) == 5


def test_var_list_as_a_list_saves_only_those(g, tmp_path):
    a = sg.Variable(1.0, name="a")
    sg.Variable(2.0, name="b")
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    prefix = sg.train.Saver([a]).save(sess, str(tmp_path / "m"))
    assert sg.train.list_variables(prefix) == [("a", [])]
    assert sg.train.load_variable(prefix, "a") == 1.0
    assert sg.train.list_variables(str(tmp_path)) == [("a", [])]


def test_bad_var_lists(g):
    a = sg.Variable(1.0, name="a")
    with pytest.raises(ValueError, match="No variables to save"):
        sg.train.Saver([])
    with pytest.raises(TypeError, match="not a Variable"):
        sg.train.Saver([a.value()])
    with pytest.raises(TypeError, match="var_list must be"):
        sg.train.Saver(a)
    with pytest.raises(ValueError, match="appears twice"):
        sg.train.Saver([a, a])
    with pytest.raises(ValueError, match="appears twice"):
        sg.train.Saver({"x": a, "y": a})
    with pytest.raises(ValueError, match="non-empty strings"):
        sg.train.Saver({"": a})
    with sg.Graph().as_default():
        other = sg.Variable(1.0, name="other")
    with pytest.raises(ValueError, match="another graph"):
        sg.train.Saver([a, other])


def test_variables_created_after_the_saver_are_not_saved(g, tmp_path):
    sg.Variable(1.0, name="early")
    saver = sg.train.Saver()
    sg.Variable(2.0, name="late")
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    prefix = saver.save(sess, str(tmp_path / "m"))
    assert [n for n, _ in sg.train.list_variables(prefix)] == ["early"]


def test_allow_empty(g, tmp_path):
    saver = sg.train.Saver([], allow_empty=True)
    assert saver.save(sg.Session(), str(tmp_path / "m")) is None
    saver.restore(sg.Session(), str(tmp_path / "m"))
    assert dir_listing(tmp_path) == []


# -- names and the index --------------------------------------------------------------------------

def test_global_step_as_int_variable_tensor_and_padded(g, tmp_path):
    w = sg.Variable(1.0, name="w")
    step = sg.Variable(42, name="step", trainable=False)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    saver = sg.train.Saver([w], max_to_keep=None)
    base = str(tmp_path / "model")
    assert saver.save(sess, base, global_step=7) == base + "-7"
    assert saver.save(sess, base, global_step=np.int64(8)) == base + "-8"
    assert saver.save(sess, base, global_step=step) == base + "-42"
    assert saver.save(sess, base, global_step=step + 1) == base + "-43"
    padded = sg.train.Saver([w], pad_step_number=True)
    assert padded.save(sess, base, global_step=5) == base + "-00000005"
    with pytest.raises(ValueError, match="global_step must be a number"):
        saver.save(sess, base, global_step=sg.constant([1, 2]))


def _initialized_w():
    """A scalar variable w (0.0) and a session that has initialized it."""
    w = sg.Variable(0.0, name="w")
    sess = sg.Session()
    sess.run(w.initializer)
    return w, sess


def test_max_to_keep_deletes_the_oldest_and_the_index_lists_the_kept(g, tmp_path):
    w, sess = _initialized_w()
    saver = sg.train.Saver(max_to_keep=2)
    base = str(tmp_path / "model")
    for step in range(1, 6):
        w.load(float(step), sess)
        saver.save(sess, base, global_step=step)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-4.npz", "model-5.npz"]
    assert saver.last_checkpoints == [base + "-4", base + "-5"]
    index = read_index(tmp_path)
    assert index["model_checkpoint_path"] == "model-5"
    assert index["all_model_checkpoint_paths"] == ["model-4", "model-5"]
    state = sg.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == base + "-5"
    assert state.all_model_checkpoint_paths == [base + "-4", base + "-5"]
    assert sg.train.latest_checkpoint(str(tmp_path)) == base + "-5"
    saver.restore(sess, base + "-4")
    assert sess.run(w) == 4.0


@pytest.mark.parametrize("max_to_keep", [None, 0])
def test_max_to_keep_none_or_zero_keeps_all(g, tmp_path, max_to_keep):
    _, sess = _initialized_w()
    saver = sg.train.Saver(max_to_keep=max_to_keep)
    for step in range(4):
        saver.save(sess, str(tmp_path / "model"), global_step=step)
    assert dir_listing(tmp_path) == ["checkpoint.json"] + [f"model-{i}.npz" for i in range(4)]
    assert read_index(tmp_path)["all_model_checkpoint_paths"] == [f"model-{i}" for i in range(4)]


def test_saving_a_prefix_again_moves_it_to_the_end(g, tmp_path):
    _, sess = _initialized_w()
    saver = sg.train.Saver(max_to_keep=2)
    base = str(tmp_path / "model")
    for step in (1, 2, 1, 3):
        saver.save(sess, base, global_step=step)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-1.npz", "model-3.npz"]
    assert read_index(tmp_path)["all_model_checkpoint_paths"] == ["model-1", "model-3"]


def test_keep_checkpoint_every_n_hours_leaves_dropped_checkpoints_on_disk(g, tmp_path):
    _, sess = _initialized_w()
    saver = sg.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=0.0)
    for step in range(3):
        saver.save(sess, str(tmp_path / "model"), global_step=step)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-0.npz", "model-1.npz",
                                     "model-2.npz"]
    assert read_index(tmp_path)["all_model_checkpoint_paths"] == ["model-2"]


def test_recover_last_checkpoints_lets_a_new_saver_count_old_ones(g, tmp_path):
    _, sess = _initialized_w()
    base = str(tmp_path / "model")
    first = sg.train.Saver(max_to_keep=2)
    for step in (1, 2):
        first.save(sess, base, global_step=step)
    second = sg.train.Saver(max_to_keep=2)
    second.recover_last_checkpoints(
        sg.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths)
    assert second.last_checkpoints == [base + "-1", base + "-2"]
    second.save(sess, base, global_step=3)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-2.npz", "model-3.npz"]


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlinked-directory", "set-with-time"])
def test_a_given_checkpoint_outside_the_save_directory_is_refused_before_writing(g, tmp_path,
                                                                                 how):
    """max_to_keep would delete it: the save raises ValueError naming it, and writes nothing."""
    _, sess = _initialized_w()
    ckpt, elsewhere = tmp_path / "ckpt", tmp_path / "elsewhere"
    ckpt.mkdir()
    elsewhere.mkdir()
    sg.train.Saver().save(sess, str(elsewhere / "precious"), write_state=False)
    given = {"dotdot": str(ckpt / ".." / "elsewhere" / "precious"),
             "absolute": str(elsewhere / "precious"),
             "symlinked-directory": str(ckpt / "link" / "precious"),
             "set-with-time": str(elsewhere / "precious")}[how]
    if how == "symlinked-directory":
        (ckpt / "link").symlink_to(elsewhere, target_is_directory=True)
    saver = sg.train.Saver(max_to_keep=1)
    if how == "set-with-time":
        saver.set_last_checkpoints_with_time([(given, 1.0)])
    else:
        saver.recover_last_checkpoints([given])
    assert saver.last_checkpoints == [given]
    with pytest.raises(ValueError, match=rf"checkpoint '{re.escape(given)}' .* is not in "
                                         rf"'{re.escape(str(ckpt))}'.*nothing was written"):
        saver.save(sess, str(ckpt / "model"), global_step=2)
    assert dir_listing(elsewhere) == ["precious.npz"]
    assert dir_listing(ckpt) == (["link"] if how == "symlinked-directory" else [])
    saver.save(sess, str(ckpt / "model"), global_step=2, write_state=False)  # deletes nothing
    assert dir_listing(elsewhere) == ["precious.npz"]


def test_a_given_checkpoint_in_the_save_directory_however_spelled_is_counted(g, tmp_path):
    _, sess = _initialized_w()
    first = sg.train.Saver(max_to_keep=5)
    first.save(sess, str(tmp_path / "model"), global_step=1)
    saver = sg.train.Saver(max_to_keep=1)
    saver.recover_last_checkpoints([str(tmp_path / "sub" / ".." / "model-1")])
    saver.save(sess, str(tmp_path / "model"), global_step=2)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-2.npz"]


def test_recovered_checkpoints_must_share_one_directory(g, tmp_path):
    _, sess = _initialized_w()
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        sg.train.Saver().save(sess, str(tmp_path / folder / "model"), global_step=1)
    saver = sg.train.Saver(max_to_keep=1)
    with pytest.raises(ValueError, match=r"different directories: '.*/b/model-1'"):
        saver.recover_last_checkpoints([str(tmp_path / "a" / "model-1"),
                                        str(tmp_path / "b" / "model-1")])
    assert saver.last_checkpoints == []


def test_a_savers_own_checkpoints_are_deleted_wherever_it_wrote_them(g, tmp_path):
    """As in TF1: what the saver wrote itself it may delete, in any directory."""
    _, sess = _initialized_w()
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    saver = sg.train.Saver(max_to_keep=1)
    saver.save(sess, str(tmp_path / "a" / "model"), global_step=1)
    saver.save(sess, str(tmp_path / "b" / "model"), global_step=2)
    assert dir_listing(tmp_path / "a") == ["checkpoint.json"]
    assert dir_listing(tmp_path / "b") == ["checkpoint.json", "model-2.npz"]


def test_latest_filename_and_write_state(g, tmp_path):
    _, sess = _initialized_w()
    saver = sg.train.Saver()
    saver.save(sess, str(tmp_path / "a"), latest_filename="runs.json")
    assert dir_listing(tmp_path) == ["a.npz", "runs.json"]
    assert sg.train.latest_checkpoint(str(tmp_path)) is None
    assert sg.train.latest_checkpoint(str(tmp_path), "runs.json") == str(tmp_path / "a")
    saver.save(sess, str(tmp_path / "b"), write_state=False)
    assert dir_listing(tmp_path) == ["a.npz", "b.npz", "runs.json"]
    with pytest.raises(ValueError, match="a file name"):
        saver.save(sess, str(tmp_path / "c"), latest_filename="sub/index.json")


def test_no_index_means_no_checkpoint(tmp_path):
    assert sg.train.get_checkpoint_state(str(tmp_path)) is None
    assert sg.train.latest_checkpoint(str(tmp_path)) is None
    assert sg.train.latest_checkpoint(str(tmp_path / "absent")) is None
    assert not sg.train.checkpoint_exists(str(tmp_path / "model"))


def test_latest_checkpoint_is_none_when_its_file_is_gone(g, tmp_path):
    _, sess = _initialized_w()
    prefix = sg.train.Saver().save(sess, str(tmp_path / "model"))
    os.remove(prefix + ".npz")
    assert sg.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == prefix
    assert sg.train.latest_checkpoint(str(tmp_path)) is None


def test_a_moved_directory_still_works(g, tmp_path):
    w = sg.Variable([1.0, 2.0], name="w")
    sess = sg.Session()
    sess.run(w.initializer)
    (tmp_path / "run").mkdir()
    sg.train.Saver().save(sess, str(tmp_path / "run" / "model"), global_step=1)
    shutil.move(str(tmp_path / "run"), str(tmp_path / "moved"))
    prefix = sg.train.latest_checkpoint(str(tmp_path / "moved"))
    assert prefix == str(tmp_path / "moved" / "model-1")
    w.load([0.0, 0.0], sess)
    sg.train.Saver().restore(sess, prefix)
    np.testing.assert_array_equal(sess.run(w), [1.0, 2.0])


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b'{"format": "other"}',
                                     b'{"format": "staticgrad-checkpoint-index"}'])
def test_a_damaged_index_raises_data_loss_naming_it(tmp_path, content):
    (tmp_path / "checkpoint.json").write_bytes(content)
    with pytest.raises(sg.errors.DataLossError, match="checkpoint.json"):
        sg.train.latest_checkpoint(str(tmp_path))


def test_saving_into_a_missing_directory_raises_naming_it(g, tmp_path):
    _, sess = _initialized_w()
    missing = tmp_path / "no" / "such"
    with pytest.raises(ValueError, match=f"{missing}.*does not exist"):
        sg.train.Saver().save(sess, str(missing / "model"))
    assert dir_listing(tmp_path) == []


def test_saving_an_uninitialized_variable_names_it_and_writes_nothing(g, tmp_path):
    a = sg.Variable(1.0, name="a")
    line = lineno() + 1
    b = sg.Variable([1, 2], name="scope/b")
    sess = sg.Session()
    sess.run(a.initializer)
    with pytest.raises(sg.errors.FailedPreconditionError) as info:
        sg.train.Saver().save(sess, str(tmp_path / "model"))
    message = str(info.value)
    assert "scope/b" in message and f"{HERE}:{line}" in message
    assert "initializer" in message
    assert info.value.op is b.op
    assert dir_listing(tmp_path) == []


def test_session_checks(g, tmp_path):
    w = sg.Variable(0.0, name="w")
    saver = sg.train.Saver()
    with pytest.raises(TypeError, match="must be a Session"):
        saver.save(None, str(tmp_path / "m"))
    with pytest.raises(ValueError, match="None"):
        saver.restore(sg.Session(), None)
    with sg.Graph().as_default() as other:
        sg.Variable(0.0, name="w")
    with pytest.raises(ValueError, match="graph"):
        saver.restore(sg.Session(graph=other), str(tmp_path / "m"))
    sess = sg.Session()
    sess.run(w.initializer)
    sess.close()
    with pytest.raises(RuntimeError, match="closed"):
        saver.save(sess, str(tmp_path / "m"))


# -- failures while saving leave the previous checkpoint ------------------------------------------

@pytest.fixture
def saved(g, tmp_path):
    """A session with two variables and one good checkpoint (step 1) in tmp_path."""
    w = sg.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
    b = sg.Variable([0.5, -0.5], name="b")
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    saver = sg.train.Saver(max_to_keep=1)
    prefix = saver.save(sess, str(tmp_path / "model"), global_step=1)
    w.load([[9.0, 9.0], [9.0, 9.0]], sess)
    b.load([7.0, 7.0], sess)
    return {"sess": sess, "saver": saver, "prefix": prefix, "w": w, "b": b, "dir": tmp_path}


def assert_previous_checkpoint_intact(saved, index_before, files_before):
    tmp_path = saved["dir"]
    assert dir_listing(tmp_path) == files_before  # no temp files, nothing deleted
    assert (tmp_path / "checkpoint.json").read_bytes() == index_before
    assert sg.train.latest_checkpoint(str(tmp_path)) == saved["prefix"]
    fresh = sg.Session()
    saved["saver"].restore(fresh, saved["prefix"])
    np.testing.assert_array_equal(fresh.run(saved["w"]), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(fresh.run(saved["b"]), [0.5, -0.5])


def full_disk_after_first_array(monkeypatch):
    """Make the second array written into an archive fail halfway, as a full disk would."""
    real = np.lib.format.write_array
    calls = []

    def write_array(fp, array, *args, **kwargs):
        calls.append(array.shape)
        if len(calls) == 2:
            fp.write(b"\x93NUMPY partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fp, array, *args, **kwargs)
    monkeypatch.setattr(np.lib.format, "write_array", write_array)
    return calls


@pytest.mark.parametrize("same_prefix", [False, True], ids=["new-step", "same-prefix"])
def test_a_full_disk_mid_save_leaves_the_previous_checkpoint(saved, monkeypatch, same_prefix):
    index_before = (saved["dir"] / "checkpoint.json").read_bytes()
    files_before = dir_listing(saved["dir"])
    calls = full_disk_after_first_array(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        saved["saver"].save(saved["sess"], str(saved["dir"] / "model"),
                            global_step=1 if same_prefix else 2)
    assert len(calls) == 2
    monkeypatch.undo()
    assert saved["saver"].last_checkpoints == [saved["prefix"]]
    assert_previous_checkpoint_intact(saved, index_before, files_before)


@pytest.mark.parametrize("failing", [1, 2], ids=["journal", "final-index"])
def test_a_failed_index_write_keeps_the_latest_and_deletes_nothing(saved, monkeypatch, failing):
    index_before = (saved["dir"] / "checkpoint.json").read_bytes()
    real_replace = os.replace
    index_writes = []

    def replace(src, dst):
        if os.path.basename(dst) == "checkpoint.json":
            index_writes.append(dst)
            if len(index_writes) == failing:
                raise OSError(errno.EIO, "Input/output error")
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="Input/output"):
        saved["saver"].save(saved["sess"], str(saved["dir"] / "model"), global_step=2)
    monkeypatch.undo()
    assert saved["saver"].last_checkpoints == [saved["prefix"]]
    if failing == 1:  # the journal entry comes before the data file: nothing new on disk
        assert_previous_checkpoint_intact(saved, index_before, ["checkpoint.json", "model-1.npz"])
        return
    # the new data file is complete and in place; the index still names model-1 as the latest
    # and its journal names model-2, so max_to_keep=1 deleted nothing yet...
    assert dir_listing(saved["dir"]) == ["checkpoint.json", "model-1.npz", "model-2.npz"]
    index = read_index(saved["dir"])
    assert index["model_checkpoint_path"] == "model-1"
    assert index["adding_checkpoint_paths"] == ["model-2"]
    assert sg.train.latest_checkpoint(str(saved["dir"])) == saved["prefix"]
    # ...and the next save, by a saver of a restarted program, counts both
    sg.train.Saver(max_to_keep=1).save(saved["sess"], str(saved["dir"] / "model"), global_step=3)
    assert dir_listing(saved["dir"]) == ["checkpoint.json", "model-3.npz"]


def test_a_failed_fsync_leaves_no_temp_file(saved, monkeypatch):
    index_before = (saved["dir"] / "checkpoint.json").read_bytes()
    files_before = dir_listing(saved["dir"])

    def fsync(fd):
        raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError):
        saved["saver"].save(saved["sess"], str(saved["dir"] / "model"), global_step=2)
    monkeypatch.undo()
    assert_previous_checkpoint_intact(saved, index_before, files_before)


def test_files_are_replaced_through_a_temp_file_in_the_same_directory(saved, monkeypatch):
    moves = []
    real_replace = os.replace

    def replace(src, dst):
        moves.append((src, dst))
        assert os.path.getsize(src) > 0 and os.path.dirname(src) == os.path.dirname(dst)
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    saved["saver"].save(saved["sess"], str(saved["dir"] / "model"), global_step=2)
    # the index's journal entry, the data file, the index naming it
    assert [os.path.basename(dst) for _, dst in moves] == ["checkpoint.json", "model-2.npz",
                                                           "checkpoint.json"]
    assert all(os.path.basename(src).startswith(".") for src, _ in moves)


# -- crashes: what a killed save leaves, the next save finishes ---------------------------------

class Killed(BaseException):
    """Stands for SIGKILL at a chosen point of a save: nothing after it runs."""


def orphan_name(target="model-3.npz", pid=99999):
    return f".{target}.staticgrad-{pid}-0123456789ab.tmp"


def test_a_save_removes_temp_files_that_killed_saves_left(saved):
    tmp_path = saved["dir"]
    orphans = [orphan_name(), orphan_name("checkpoint.json", 4242)]
    for name in orphans:
        (tmp_path / name).write_bytes(b"half a checkpoint")
    others = [".model-3.npz.0123456789ab.tmp", "notes.tmp", ".hidden"]  # not staticgrad's
    for name in others:
        (tmp_path / name).write_bytes(b"someone else's")
    saved["saver"].save(saved["sess"], str(tmp_path / "model"), global_step=2)
    assert dir_listing(tmp_path) == sorted(others + ["checkpoint.json", "model-2.npz"])


def test_a_temp_file_being_written_is_not_removed(saved):
    """A live writer holds a lock on its temporary file; a save beside it leaves it alone."""
    fcntl = pytest.importorskip("fcntl")
    live = saved["dir"] / orphan_name()
    with open(live, "wb") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # as atomic_write does while it writes
        f.write(b"being written")
        saved["saver"].save(saved["sess"], str(saved["dir"] / "model"), global_step=2)
        assert live.exists()
    saved["saver"].save(saved["sess"], str(saved["dir"] / "model"), global_step=3)
    assert not live.exists()  # its writer is gone now


def test_without_file_locks_no_temp_file_is_removed(saved, monkeypatch):
    """Where flock is unavailable a live writer cannot be told from a dead one: leave both."""
    from staticgrad.train import atomic_files
    monkeypatch.setattr(atomic_files, "fcntl", None)
    orphan = saved["dir"] / orphan_name()
    orphan.write_bytes(b"half a checkpoint")
    saved["saver"].save(saved["sess"], str(saved["dir"] / "model"), global_step=2)
    assert orphan.exists()
    assert sg.train.latest_checkpoint(str(saved["dir"])) == str(saved["dir"] / "model-2")


def test_a_restarted_program_keeps_max_to_keep_for_the_previous_runs_checkpoints(g, tmp_path):
    """A new Saver adopts its series from the index on its first save (TF1's would leave
    model-1..3 on disk forever unless the program called recover_last_checkpoints)."""
    _, sess = _initialized_w()
    base = str(tmp_path / "model")
    first_run = sg.train.Saver(max_to_keep=2)
    for step in (1, 2, 3):
        first_run.save(sess, base, global_step=step)
    second_run = sg.train.Saver(max_to_keep=2)
    second_run.save(sess, base, global_step=4)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-3.npz", "model-4.npz"]
    assert second_run.last_checkpoints == [base + "-3", base + "-4"]
    assert read_index(tmp_path)["all_model_checkpoint_paths"] == ["model-3", "model-4"]


def test_adoption_takes_only_the_savers_own_series(g, tmp_path):
    _, sess = _initialized_w()
    sg.train.Saver(max_to_keep=5).save(sess, str(tmp_path / "model"), global_step=1)
    best = sg.train.Saver(max_to_keep=1)
    for step in (7, 8):
        best.save(sess, str(tmp_path / "best"), global_step=step)
    assert dir_listing(tmp_path) == ["best-8.npz", "checkpoint.json", "model-1.npz"]
    assert read_index(tmp_path)["all_model_checkpoint_paths"] == ["best-8"]


def test_a_kill_before_the_deletions_is_finished_by_the_next_save(saved, monkeypatch):
    real_remove = os.remove

    def remove(path):
        if str(path).endswith(".npz"):
            raise Killed
        return real_remove(path)
    monkeypatch.setattr(os, "remove", remove)
    with pytest.raises(Killed):
        saved["saver"].save(saved["sess"], str(saved["dir"] / "model"), global_step=2)
    monkeypatch.undo()
    # the index already names model-2 alone, and its journal the deletion that did not happen
    assert dir_listing(saved["dir"]) == ["checkpoint.json", "model-1.npz", "model-2.npz"]
    assert read_index(saved["dir"])["deleting_checkpoint_paths"] == ["model-1"]
    assert sg.train.latest_checkpoint(str(saved["dir"])) == str(saved["dir"] / "model-2")
    sg.train.Saver(max_to_keep=1).save(saved["sess"], str(saved["dir"] / "model"),
                                       global_step=3)
    assert dir_listing(saved["dir"]) == ["checkpoint.json", "model-3.npz"]


def test_a_kill_during_the_first_save_leaves_no_checkpoint_and_no_leak(g, tmp_path, monkeypatch):
    """Killed after the first data file is in place but before the index names it: the index
    is only a journal (no latest yet), and the next run's save adopts that file."""
    _, sess = _initialized_w()
    real_replace = os.replace

    def replace(src, dst):
        real_replace(src, dst)
        if os.path.basename(dst) == "model-1.npz":
            raise Killed
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Killed):
        sg.train.Saver(max_to_keep=1).save(sess, str(tmp_path / "model"), global_step=1)
    monkeypatch.undo()
    assert read_index(tmp_path)["model_checkpoint_path"] is None
    assert read_index(tmp_path)["adding_checkpoint_paths"] == ["model-1"]
    assert sg.train.latest_checkpoint(str(tmp_path)) is None
    assert sg.train.get_checkpoint_state(str(tmp_path)) is None
    restarted = sg.train.Saver(max_to_keep=1)
    restarted.save(sess, str(tmp_path / "model"), global_step=2)
    assert dir_listing(tmp_path) == ["checkpoint.json", "model-2.npz"]


def test_saving_over_a_damaged_index_warns_and_writes_a_new_one(saved):
    (saved["dir"] / "checkpoint.json").write_text('{"format": "staticgrad-checkpoint-index", '
                                                  '"version": 1, "model_checkpoint_path": 7}')
    with pytest.warns(UserWarning, match="checkpoint.json.*writes a new index"):
        prefix = sg.train.Saver().save(saved["sess"], str(saved["dir"] / "model"),
                                       global_step=2)
    assert sg.train.latest_checkpoint(str(saved["dir"])) == prefix


# -- restore: all or nothing, with errors that name what is wrong ---------------------------------

def assert_unchanged(saved):
    np.testing.assert_array_equal(saved["sess"].run(saved["w"]), [[9.0, 9.0], [9.0, 9.0]])
    np.testing.assert_array_equal(saved["sess"].run(saved["b"]), [7.0, 7.0])


def test_a_missing_variable_raises_not_found_and_restores_nothing(saved):
    line = lineno() + 1
    extra = sg.Variable(3.0, name="extra")
    sess = saved["sess"]
    sess.run(extra.initializer)
    saver = sg.train.Saver([saved["w"], extra, saved["b"]])
    with pytest.raises(sg.errors.NotFoundError) as info:
        saver.restore(sess, saved["prefix"])
    message = str(info.value)
    assert "extra" in message and f"{HERE}:{line}" in message
    assert saved["prefix"] + ".npz" in message and "w" in message
    assert info.value.op is extra.op
    assert_unchanged(saved)  # w came first and was readable, but is not restored
    assert sess.run(extra) == 3.0


def test_a_missing_custom_name_names_both(saved):
    saver = sg.train.Saver({"w": saved["w"], "bias": saved["b"]})
    with pytest.raises(sg.errors.NotFoundError, match=r"b \(saved as 'bias'\)"):
        saver.restore(saved["sess"], saved["prefix"])
    assert_unchanged(saved)


def test_a_shape_mismatch_names_the_variable_and_both_shapes(saved, tmp_path):
    with sg.Graph().as_default() as other:
        sg.Variable([0.5, -0.5], name="b")
        line = lineno() + 1
        w = sg.Variable([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], name="w")
        sess = sg.Session(graph=other)
        sess.run(sg.global_variables_initializer())
        saver = sg.train.Saver()
        with pytest.raises(sg.errors.InvalidArgumentError) as info:
            saver.restore(sess, saved["prefix"])
        message = str(info.value)
        assert "variable w" in message and f"{HERE}:{line}" in message
        assert "(2, 3)" in message and "(2, 2)" in message and saved["prefix"] in message
        np.testing.assert_array_equal(sess.run(w), np.zeros((2, 3)))


def test_reshape_true_fills_a_variable_of_another_shape_with_as_many_elements(saved):
    with sg.Graph().as_default() as other:
        w = sg.Variable(np.zeros(4, dtype=np.float32), name="w")
        sess = sg.Session(graph=other)
        sg.train.Saver([w], reshape=True).restore(sess, saved["prefix"])
        np.testing.assert_array_equal(sess.run(w), [1.0, 2.0, 3.0, 4.0])


def test_a_dtype_mismatch_names_the_variable_and_both_dtypes(saved):
    with sg.Graph().as_default() as other:
        b = sg.Variable([0, 0], name="b")
        sess = sg.Session(graph=other)
        sess.run(b.initializer)
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match="variable b .* dtype int32.* as float32"):
            sg.train.Saver([b]).restore(sess, saved["prefix"])
        np.testing.assert_array_equal(sess.run(b), [0, 0])


def corrupt_garbage(path):
    path.write_bytes(b"this is not a checkpoint at all" * 10)


def corrupt_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def corrupt_empty(path):
    path.write_bytes(b"")


def corrupt_flip_data(path):
    data = bytearray(path.read_bytes())
    start = data.index(b"b.npy") if b"b.npy" in data else 0
    at = data.index(b"\x00\x00\x00?", start)  # inside b's float32 data (0.5 = 0x3f000000)
    data[at + 3] ^= 0xFF
    path.write_bytes(bytes(data))


def corrupt_pickled_objects(path):
    np.savez(path, w=np.array([{"a": 1}, None], dtype=object), b=np.zeros(2, np.float32))


def corrupt_single_npy(path):
    with open(path, "wb") as f:
        np.save(f, np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("corrupt", [corrupt_garbage, corrupt_truncate, corrupt_empty,
                                     corrupt_flip_data, corrupt_pickled_objects,
                                     corrupt_single_npy])
def test_a_damaged_file_raises_data_loss_naming_it_and_restores_nothing(saved, corrupt):
    path = saved["dir"] / "model-1.npz"
    corrupt(path)
    with pytest.raises(sg.errors.DataLossError) as info:
        saved["saver"].restore(saved["sess"], saved["prefix"])
    assert str(path) in str(info.value)
    assert_unchanged(saved)


def test_a_missing_file_raises_not_found_naming_it(saved):
    with pytest.raises(sg.errors.NotFoundError, match="model-7.npz not found"):
        saved["saver"].restore(saved["sess"], str(saved["dir"] / "model-7"))
    assert_unchanged(saved)


def test_restore_accepts_the_npz_path_itself(saved):
    saved["saver"].restore(saved["sess"], saved["prefix"] + ".npz")
    np.testing.assert_array_equal(saved["sess"].run(saved["b"]), [0.5, -0.5])


def test_load_variable_of_a_missing_name_and_an_empty_directory(saved):
    with pytest.raises(sg.errors.NotFoundError, match="'nope' is not in checkpoint"):
        sg.train.load_variable(saved["prefix"], "nope")
    empty = saved["dir"] / "empty"
    empty.mkdir()
    with pytest.raises(sg.errors.NotFoundError, match="no checkpoint found"):
        sg.train.list_variables(str(empty))


def test_restoring_a_missing_checkpoint_is_also_a_value_error_as_in_tf1(tmp_path):
    with sg.Graph().as_default():
        sg.Variable(1.0, name="v")
        saver = sg.train.Saver()
        with sg.Session() as sess:
            with pytest.raises(ValueError, match="not a valid checkpoint"):
                saver.restore(sess, str(tmp_path / "nothing"))
            with pytest.raises(sg.errors.NotFoundError):
                saver.restore(sess, str(tmp_path / "nothing"))
