"""runtime_strings.py's split and join of string values (checkpoints and exported modules
keep strings as their lengths and bytes); the string kernels are tested through their ops in
tests/ops/test_string_ops.py."""

import numpy as np
import pytest

from staticgrad.runtime_strings import join_strings, split_strings, to_strings


def test_split_and_join_give_back_the_strings():
    value = np.array([[b"ab", b""], [b"\x00c", b"d\x00"]], dtype=object)
    lengths, data = split_strings(value)
    assert join_strings(lengths, data).tolist() == value.tolist()


@pytest.mark.parametrize("lengths", [
    [2**62, 2**62, 2**62, 2**62 + 3],  # an int64 sum of 2**64 + 3: 3, the bytes' count
    [2**63 - 1, 2**63 - 1, 5],         # 2**64 + 3 again
    [-1, 4], [4, 0], [1, 1],
])
def test_lengths_that_do_not_fit_the_bytes_are_refused(lengths):
    with pytest.raises(ValueError, match="do not add up"):
        join_strings(np.array(lengths, np.int64), np.frombuffer(b"abc", np.uint8))


def test_to_strings_encodes_str_itself_and_names_what_utf8_cannot_encode():
    class Sly(str):
        def encode(self, *args):
            return 5

    assert to_strings([Sly("a"), np.str_("b")]).tolist() == [b"a", b"b"]
    with pytest.raises(ValueError, match=r"words:0: 'x\\ud800' is not text UTF-8 can encode"):
        to_strings(["x\ud800"], "words:0")
