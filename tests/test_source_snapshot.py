"""The generated NumPy source of every graph the test suite compiles stays as recorded.

tests/snapshots/sources.json.xz holds the graphs, each with its fetches, feeds, options and
the source it compiled to (tests/source_corpus.py says what is recorded, and how it is
replayed). Here each is compiled again from a fresh graph and compared, character for
character, with one allowance: a number written in the source may differ from the recorded
one in its last bits (at most `ULPS` units in the last place). Constant folding computes such
numbers with NumPy, and NumPy's sin, cos, exp... for float64 take other code paths on other
CPUs (its SIMD kernels on AVX-512 machines, the C library elsewhere), which disagree in the
last bit now and then. A change that alters generated code on purpose records the corpus
again and says so in its commit (tests/snapshots/README.md).

STATICGRAD_SNAPSHOT_EVERY=n checks a fixed n-th of the records (default: all);
STATICGRAD_SNAPSHOT_SHOW=n shows n mismatches as diffs (default 3);
STATICGRAD_SNAPSHOT_UPDATE=1 writes the source generated now into each record that differs
(when every record compiles), once the diffs have been read and the change is meant
(tests/snapshots/README.md).
"""

from __future__ import annotations

import difflib
import os
import re
import traceback

import numpy as np
import pytest

import staticgrad as sg
from tests import source_corpus

# mismatches shown in full, as unified diffs (STATICGRAD_SNAPSHOT_SHOW=n shows n)
SHOWN = int(os.environ.get("STATICGRAD_SNAPSHOT_SHOW", "3"))
DIFF_LINES = 80    # lines of each diff shown
ULPS = 4           # how far a folded number may be from the recorded one, in its last place
# a float literal as repr() writes it (not the digits inside a name such as x_1e5 or a[1.])
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w.])")


@pytest.fixture(scope="module")
def corpus():
    if os.environ.get("STATICGRAD_RECORD_SOURCES"):
        # a recording keeps what the suite compiles, not what an older corpus held
        pytest.skip("recording the corpus (STATICGRAD_RECORD_SOURCES)")
    if not source_corpus.CORPUS.exists():
        pytest.fail(f"{source_corpus.CORPUS} is missing: record it (tests/snapshots/README.md)")
    return source_corpus.load()


def test_every_recorded_threshold_still_exists(corpus):
    recorded = {knob for entry in corpus["entries"] for knob in entry["knobs"]}
    for knob in sorted(recorded | set(source_corpus.KNOBS)):
        source_corpus._knob_home(knob)  # LookupError naming the knob and what to do


def test_generated_source_is_as_recorded(corpus):
    every = int(os.environ.get("STATICGRAD_SNAPSHOT_EVERY", "1"))
    entries = source_corpus.sample(corpus["entries"], every)
    mismatches, errors = [], []
    graph_id, graph = None, None
    for entry in entries:  # sorted by graph: each graph is loaded once
        graph_doc = corpus["graphs"][entry["graph"]]
        try:
            if entry["graph"] != graph_id:
                graph_id, graph = entry["graph"], source_corpus.load_graph(graph_doc)
            got = source_corpus.compile_source(graph, entry)
        except Exception:  # noqa: BLE001 - every entry is tried; the report shows each error
            graph_id = None
            errors.append((entry, traceback.format_exc(limit=-4)))
            continue
        if not same_source(entry["source"], got):
            mismatches.append((entry, got))
    if mismatches and not errors and os.environ.get("STATICGRAD_SNAPSHOT_UPDATE") == "1":
        source_corpus.save(source_corpus.updated(corpus, mismatches), source_corpus.CORPUS)
        pytest.skip(f"STATICGRAD_SNAPSHOT_UPDATE=1: {len(mismatches)} of {len(entries)} "
                    f"records now hold the source generated today")
    if mismatches or errors:
        pytest.fail(_report(corpus, len(entries), mismatches, errors), pytrace=False)


def same_source(recorded: str, got: str) -> bool:
    """Whether `got` is `recorded`, character for character but for float literals within
    ULPS units in the last place of each other."""
    if got == recorded:
        return True
    old_parts, new_parts = _FLOAT.split(recorded), _FLOAT.split(got)
    if len(old_parts) != len(new_parts):
        return False
    for i, (old, new) in enumerate(zip(old_parts, new_parts)):
        if old == new:
            continue
        if i % 2 == 0:  # text between the numbers
            return False
        a, b = float(old), float(new)
        if not abs(a - b) <= ULPS * np.spacing(max(abs(a), abs(b))):
            return False
    return True


def test_same_source_allows_only_last_bits_of_numbers():
    line = "y = (-0.6159901788008828) + 1.8914266274291198 + x_1e5 * 3e-05"
    assert same_source(line, line.replace("1.8914266274291198", "1.8914266274291196"))
    assert not same_source(line, line.replace("1.8914266274291198", "1.8914266274291"))
    assert not same_source(line, line.replace("x_1e5", "x_1e6"))
    assert not same_source(line, line.replace("3e-05", "3e-06"))
    assert not same_source(line, line + " + 1.0")
    assert not same_source("y = 1.5", "y = 1.5 ")


def _report(corpus, checked: int, mismatches: list, errors: list) -> str:
    lines = [f"of {checked} recorded compiles, {len(mismatches)} now generate other source "
             f"and {len(errors)} fail to compile again. If the change is on purpose, record "
             "the corpus again and say so in the commit (tests/snapshots/README.md).", ""]
    for entry, got in mismatches[:SHOWN]:
        lines.append(source_corpus.entry_title(entry, corpus["graphs"][entry["graph"]]))
        diff = list(difflib.unified_diff(entry["source"].splitlines(), got.splitlines(),
                                         "recorded", "now", lineterm=""))
        lines += diff[:DIFF_LINES]
        if len(diff) > DIFF_LINES:
            lines.append(f"... ({len(diff) - DIFF_LINES} more lines of diff)")
        lines.append("")
    for entry, error in errors[:SHOWN]:
        lines.append(source_corpus.entry_title(entry, corpus["graphs"][entry["graph"]]))
        lines.append(error)
    return "\n".join(lines)


def test_an_update_rewrites_only_the_records_that_differ(tmp_path):
    doc = {"format": source_corpus.FORMAT, "version": source_corpus.VERSION,
           "graphs": {"g1": {"ops": []}},
           "entries": [{"graph": "g1", "fetches": ["a:0"], "source": "old a"},
                       {"graph": "g1", "fetches": ["b:0"], "source": "old b"}]}
    new = source_corpus.updated(doc, [(doc["entries"][1], "new b")])
    path = tmp_path / "corpus.json.xz"
    source_corpus.save(new, path)
    back = source_corpus.load(path)
    assert [e["source"] for e in back["entries"]] == ["old a", "new b"]
    assert back["entries"][1]["fetches"] == ["b:0"] and back["graphs"] == doc["graphs"]
    assert back["updated_with"]["entries"] == 1
    assert doc["entries"][1]["source"] == "old b"  # (the loaded corpus is left as it was)
    assert [p.name for p in tmp_path.iterdir()] == ["corpus.json.xz"]  # no temporary left


def test_the_product_split_threshold_a_test_changed_is_recorded(monkeypatch):
    """Which products a plan with convolutions writes as rt.matmul is decided when it renders,
    by conv_blocked.MIN_SPLIT_MACS, and whether it holds the BLAS at all by
    conv_fast.LOOPS_MIN_MACS: a compile made while a test had lowered them replays with those
    values (knobs), not today's."""
    from staticgrad.backends.numpy import conv_blocked, conv_fast

    recorder = source_corpus.Recorder()
    graph = sg.Graph()
    with graph.as_default():
        x = sg.placeholder(sg.float32, [2, 8, 8, 1], name="x")
        w = sg.constant(np.ones((3, 3, 1, 4), np.float32), name="w")
        flat = sg.reshape(sg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), [2, 256])
        y = sg.matmul(flat, sg.constant(np.ones((256, 8), np.float32), name="d"))
    recorder.install()
    try:
        monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)  # (a test's split_everything)
        monkeypatch.setattr(conv_fast, "LOOPS_MIN_MACS", 0)  # (loops_at_every_size)
        with source_corpus.pinned({}, True), sg.Session(graph=graph) as sess:
            sess.source(y, {x: np.zeros((2, 8, 8, 1), np.float32)})
    finally:
        recorder.uninstall()
        monkeypatch.undo()
    (entry,) = recorder.entries.values()
    assert "rt.matmul(" in entry["source"]
    assert entry["knobs"] == {"staticgrad.backends.numpy.conv_blocked:MIN_SPLIT_MACS": 0,
                              "staticgrad.backends.numpy.conv_fast:LOOPS_MIN_MACS": 0}
    replayed = source_corpus.compile_source(
        source_corpus.load_graph(recorder.graphs[entry["graph"]]), entry)
    assert replayed == entry["source"]
