"""Crash safety of saving: a training process that saves in a loop is SIGKILLed at random
moments. After every kill, `latest_checkpoint` restores completely and consistently (every
value is the one saved at the step it names), the next save removes the temporary files the
kill left, and `max_to_keep` holds.

CI runs a few kills. The long setting runs more:

    STATICGRAD_KILLS=50 python -m pytest tests/test_crash_safety.py -s

`STATICGRAD_KILL_SEED=<int>` replays the random moments of a run (a failure prints its seed);
with `-s` the test prints where the kills landed and how long they took.
"""

from __future__ import annotations

import collections
import inspect
import json
import os
import pathlib
import random
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.train.atomic_files import is_temp_name

ROOT = pathlib.Path(__file__).resolve().parents[1]
KILLS_IN_CI = 4
MAX_TO_KEEP = 3
N = 256 * 1024  # float32 elements of w: 1 MiB, so that a save takes a while to write
LATEST_KILL_DELAY_S = 0.25  # kills land uniformly within this long after the first save began


def build_model():
    """The training process's variables (and the test's, to restore into)."""
    return {"w": sg.Variable(np.zeros(N, np.float32), name="w"),
            "b": sg.Variable(np.zeros(N // 2, np.float64), name="b"),
            "step": sg.Variable(np.int64(0), name="step")}


def values_for(step):
    """What the variables hold when `step` is saved: each one tells the step apart, so a
    checkpoint mixing two steps cannot pass for either."""
    return {"w": np.arange(N, dtype=np.float32) % 1000 + np.float32(step),
            "b": np.full(N // 2, -step, np.float64),
            "step": np.int64(step)}


CHILD = f"""
import sys
import numpy as np
import staticgrad as sg

N = {N}
{inspect.getsource(build_model)}
{inspect.getsource(values_for)}
directory, max_to_keep, saves = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
variables = build_model()
saver = sg.train.Saver(max_to_keep=max_to_keep)
sess = sg.Session()
latest = sg.train.latest_checkpoint(directory)
step = 0
if latest is not None:  # resume, as a restarted training job does
    saver.restore(sess, latest)
    step = int(sg.train.load_variable(latest, "step"))
print("ready", flush=True)
while saves < 0 or saves > 0:
    saves -= 1
    step += 1
    for name, value in values_for(step).items():
        variables[name].load(value, sess)
    saver.save(sess, directory + "/model", global_step=step)
    print(step, flush=True)
"""


def start_training(directory: pathlib.Path, saves: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with open(directory.parent / "child.err", "a") as err:
        return subprocess.Popen([sys.executable, "-c", CHILD, str(directory), str(MAX_TO_KEEP),
                                 str(saves)], env=env, cwd=directory.parent, text=True,
                                stdout=subprocess.PIPE, stderr=err)


def wait_for_ready(child: subprocess.Popen, directory: pathlib.Path) -> None:
    watchdog = threading.Timer(120, child.kill)  # a hung child fails the test, not CI
    watchdog.start()
    try:
        line = child.stdout.readline()
    finally:
        watchdog.cancel()
    assert line == "ready\n", (directory.parent / "child.err").read_text()[-3000:]


class Restorer:
    """The model built in this process: restores a checkpoint and checks every value."""

    def __init__(self):
        self.graph = sg.Graph()
        with self.graph.as_default():
            self.variables = build_model()
            self.saver = sg.train.Saver(max_to_keep=None)

    def step_of(self, prefix: str) -> int:
        """Restore `prefix` completely and return its step, after checking that every value is
        exactly what the training process saved at that step."""
        sess = sg.Session(graph=self.graph)
        self.saver.restore(sess, prefix)
        step = int(sess.run(self.variables["step"]))
        assert prefix.endswith(f"model-{step}"), (prefix, step)
        for name, expected in values_for(step).items():
            np.testing.assert_array_equal(sess.run(self.variables[name]), expected,
                                          err_msg=f"{name} of {prefix}")
        sess.close()
        return step


def checkpoint_files(directory: pathlib.Path) -> set[str]:
    return {name[:-len(".npz")] for name in os.listdir(directory)
            if name.startswith("model-") and name.endswith(".npz")}


def read_index(directory: pathlib.Path) -> dict:
    path = directory / "checkpoint.json"
    return json.loads(path.read_text()) if path.exists() else {}


def where_the_kill_landed(directory: pathlib.Path, index: dict, temps: set[str]) -> str:
    on_disk = checkpoint_files(directory)
    if temps:
        return "while writing a file"
    if set(index.get("adding_checkpoint_paths", [])) & on_disk:
        return "after a data file's rename, before the index named it"
    if set(index.get("deleting_checkpoint_paths", [])) & on_disk:
        return "before the dropped checkpoints were deleted"
    return "between files"


def test_a_training_process_killed_while_saving_always_restores(tmp_path):
    kills = int(os.environ.get("STATICGRAD_KILLS", KILLS_IN_CI))
    seed = int(os.environ.get("STATICGRAD_KILL_SEED", random.randrange(2 ** 32)))
    rng = random.Random(seed)
    directory = tmp_path / "ckpt"
    directory.mkdir()
    restorer = Restorer()
    started = time.monotonic()
    landed = collections.Counter()
    leftover_files = 0
    leftovers: set[str] = set()  # the temporary files the previous kill left
    last_step = 0
    for kill in range(kills):
        context = f"kill {kill + 1} of {kills}, STATICGRAD_KILL_SEED={seed}"
        child = start_training(directory, saves=-1)
        wait_for_ready(child, directory)
        time.sleep(rng.uniform(0, LATEST_KILL_DELAY_S))
        child.kill()
        child.wait()
        saved_steps = [int(line) for line in child.stdout.read().split()]
        child.stdout.close()

        names = set(os.listdir(directory))
        temps = {n for n in names if is_temp_name(n)}
        index = read_index(directory)
        landed[where_the_kill_landed(directory, index, temps)] += 1
        leftover_files += len(temps)
        if saved_steps:  # this run's first save removed what the previous kill left
            assert not leftovers & names, (context, leftovers & names)
        leftovers = temps

        latest = sg.train.latest_checkpoint(str(directory))
        if last_step or saved_steps:
            assert latest is not None, (context, index)
        if latest is not None:
            step = restorer.step_of(latest)
            assert step >= last_step and step >= max(saved_steps, default=0), (context, step)
            last_step = step

        kept = index.get("all_model_checkpoint_paths", [])
        assert len(kept) <= MAX_TO_KEEP, (context, kept)
        journal = (index.get("adding_checkpoint_paths", [])
                   + index.get("deleting_checkpoint_paths", []))
        on_disk = checkpoint_files(directory)
        assert on_disk <= set(kept) | set(journal), (context, on_disk, index)  # none untracked
        if saved_steps:
            assert len(on_disk) <= MAX_TO_KEEP + 1, (context, on_disk)

    # a last run that is not killed leaves exactly max_to_keep checkpoints and no temp files
    child = start_training(directory, saves=MAX_TO_KEEP)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0, (tmp_path / "child.err").read_text()[-3000:]
    final_step = int(out.split()[-1])
    assert final_step >= last_step + MAX_TO_KEEP
    assert not any(is_temp_name(n) for n in os.listdir(directory))
    index = read_index(directory)
    expected = [f"model-{s}" for s in range(final_step - MAX_TO_KEEP + 1, final_step + 1)]
    assert index["all_model_checkpoint_paths"] == expected
    assert checkpoint_files(directory) == set(expected)
    assert restorer.step_of(sg.train.latest_checkpoint(str(directory))) == final_step
    print(textwrap.dedent(f"""
        crash safety: {kills} kills survived in {time.monotonic() - started:.1f} s
        (seed {seed}), {final_step} checkpoints saved in all; {leftover_files} temporary
        files left by kills, every one removed by the next save; kills landed:
        {dict(landed)}"""))


def test_two_processes_saving_into_one_directory_never_remove_each_others_temp_files(tmp_path):
    """The cleanup of one save runs while another process writes: the writer's lock keeps its
    temporary file, so both processes' saves all succeed."""
    pytest.importorskip("fcntl")
    directory = tmp_path / "ckpt"
    directory.mkdir()
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import staticgrad as sg
        w = sg.Variable(np.zeros(1 << 18, np.float32), name="w")
        sess = sg.Session()
        w.load(np.ones(1 << 18, np.float32), sess)
        saver = sg.train.Saver(max_to_keep=2)
        for step in range(40):
            saver.save(sess, sys.argv[1], global_step=step)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    children = [subprocess.Popen([sys.executable, "-c", script, str(directory / name)],
                                 env=env, stderr=subprocess.PIPE, text=True)
                for name in ("run_a", "run_b")]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err[-3000:]
    names = sorted(os.listdir(directory))
    assert not any(is_temp_name(n) for n in names)
    assert {n for n in names if n.endswith(".npz")} == {"run_a-38.npz", "run_a-39.npz",
                                                        "run_b-38.npz", "run_b-39.npz"}
