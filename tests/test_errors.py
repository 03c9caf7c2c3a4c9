"""staticgrad.errors: where a node was made, as messages show it."""

import pytest

from staticgrad.errors import format_location


@pytest.mark.parametrize("filename", ["train.py", "/home/zoë/проект/train model.py",
                                      r"C:\Users\me\train.py", "<stdin>", "<unknown>"])
def test_an_ordinary_location_reads_unchanged(filename):
    assert format_location((filename, 12)) == f"{filename}:12"


@pytest.mark.parametrize("hostile, shown", [
    ("m.py\nstaticgrad: all checks passed", r"m.py\nstaticgrad: all checks passed"),
    ("m.py\r\x1b[2J", r"m.py\r\x1b[2J"),
    ("m.py\x00\t", r"m.py\x00\t"),
    ("evil\u202eyp.m", r"evil\u202eyp.m"),  # a bidirectional override
    ("m.py\u2028x", r"m.py\u2028x"),  # a line separator
])
def test_a_location_from_a_file_cannot_break_or_forge_a_message(hostile, shown):
    assert format_location((hostile, 1)) == shown + ":1"
    assert format_location(("m.py", "1\n2")) == r"m.py:1\n2"
