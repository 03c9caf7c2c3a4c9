"""sg.Print and sg.print (ops/print_ops.py): what they print, when, and what they give."""

import sys

import numpy as np
import pytest

import staticgrad as sg


def test_print_passes_its_input_and_prints_its_first_n_runs(g, capsys):
    x = sg.placeholder(sg.float32, [None], name="x")
    y = sg.Print(x, [x, sg.shape(x)], "x is: ", first_n=2, summarize=2) * 2.0
    other = sg.Print(x, [x], "again: ")  # (a Print of its own: its own count, no first_n)
    sess = sg.Session()
    for _ in range(3):
        got = sess.run([y, other], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(got[0], [2.0, 4.0, 6.0])
    err = capsys.readouterr().err
    assert err.count("x is: [1.0 2.0...][3]\n") == 2 and err.count("again: ") == 3


def test_print_ops_run_where_they_are_used_and_print_to_the_stream_asked(g, capsys):
    x = sg.placeholder(sg.float32, [2], name="x")
    show = sg.print("x =", x, "sum =", sg.reduce_sum(x), output_stream=sys.stdout, sep=" ")
    with sg.control_dependencies([show]):
        y = sg.identity(x)
    unused = sg.Print(x, [x], "never: ")  # noqa: F841 - (nothing reads it: it never runs)
    sess = sg.Session()
    sess.run(y, {x: [1.5, 2.5]})
    captured = capsys.readouterr()
    assert captured.out == "x = [1.5 2.5] sum = 4.0\n" and "never" not in captured.err
    assert "('x =', None, 'sum =', None, )" in sess.source(y, {x: [1.0, 2.0]})  # (a literal)
    with pytest.raises(ValueError, match=r"output_stream must be sys.stderr or sys.stdout"):
        sg.print(x, output_stream=open)
    with pytest.raises(ValueError, match=r"its layout has 2 places for inputs, but it has 1"):
        sg.get_default_graph().create_op("PrintV2", [x], {"layout": (None, "and", None),
                                                          "output_stream": "stderr"})
