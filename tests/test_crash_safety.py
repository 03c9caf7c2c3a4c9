"""Crash safety of saving: processes that save at the same time into one directory, and (below)
processes killed while they save.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from staticgrad.train.atomic_files import is_temp_name

ROOT = pathlib.Path(__file__).resolve().parents[1]


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
