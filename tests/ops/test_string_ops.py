"""Strings (sg.string, ops/string_ops.py): constants, feeds and fetches as TF1 gives them,
each string op against Python's own string methods, and strings in the rest of the system
(generic ops, graph files, checkpoints, Print, py_func, generated code)."""

import json

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.errors import DataLossError, InvalidArgumentError
from staticgrad.graph_io import GraphFormatError

WORDS = ["ann", "Bé", "  padded\t", "", "x-y-z"]


def _run(fetches, feeds=None):
    return sg.Session().run(fetches, feeds)


def _as_bytes(words):
    return [w.encode("utf-8") for w in words]


# -- values in and out ---------------------------------------------------------------------------

def test_a_string_constant_fetches_as_bytes_as_in_tf1(g):
    hello = sg.constant("Hello, TensorFlow!")
    assert hello.dtype is sg.string and hello.shape.as_list() == []
    got = _run(hello)
    assert type(got) is bytes and got == b"Hello, TensorFlow!"
    words = _run(sg.constant(WORDS))
    assert words.dtype == object and words.tolist() == _as_bytes(WORDS)


def test_placeholders_take_str_bytes_and_numpy_text_arrays(g):
    x = sg.placeholder(sg.string, [None], name="words")
    y = sg.identity(x)
    for fed in (WORDS, _as_bytes(WORDS), np.array(WORDS), np.array(_as_bytes(WORDS), object)):
        got = _run(y, {x: fed})
        assert got.tolist() == _as_bytes(WORDS)


def test_a_feed_that_is_not_strings_names_the_placeholder(g):
    x = sg.placeholder(sg.string, [2], name="words")
    with pytest.raises(InvalidArgumentError, match=r"cannot feed .* for words:0, which has "
                                                   r"dtype string: int 3 at index \[1\]"):
        _run(sg.identity(x), {x: ["a", 3]})
    n = sg.placeholder(sg.float32, [1], name="n")
    with pytest.raises(InvalidArgumentError, match="for n:0"):
        _run(sg.identity(n), {n: ["1.5"]})


def test_casts_between_strings_and_numbers_are_refused_with_the_op_to_use(g):
    with pytest.raises(TypeError, match=r"cannot cast float32 to string .*sg.as_string"):
        sg.cast(sg.constant([1.5]), sg.string)
    with pytest.raises(TypeError, match=r"sg.strings.to_number"):
        sg.cast(sg.constant(["1"]), sg.float32)
    with pytest.raises(TypeError, match=r"Add op .*input 0 has dtype string"):
        sg.constant(["a"]) + sg.constant(["b"])


def test_generic_ops_move_strings_as_they_move_numbers(g):
    q = sg.constant([["a", "b"], ["c", "d"]])
    pick = sg.placeholder(sg.bool, [])
    outs = _run([sg.gather(q, [1, 0]), sg.concat([q, q], 1)[:, 1:3], sg.transpose(q),
                 sg.where(sg.equal(q, "a"), q, sg.fill([2, 2], "z")), sg.reshape(q, [-1]),
                 sg.cond(pick, lambda: q[0], lambda: q[1])], {pick: False})
    assert [o.tolist() for o in outs] == [
        [[b"c", b"d"], [b"a", b"b"]], [[b"b", b"a"], [b"d", b"c"]],
        [[b"a", b"c"], [b"b", b"d"]], [[b"a", b"z"], [b"z", b"z"]],
        [b"a", b"b", b"c", b"d"], [b"c", b"d"]]


def test_comparing_many_strings_is_not_fused_into_number_blocks(g):
    x = sg.placeholder(sg.string, [None])
    y = sg.placeholder(sg.string, [None])
    same = sg.logical_and(sg.equal(x, y), sg.not_equal(x, "zz"))
    a = np.array([b"a", b"zz"] * 100_000, dtype=object)
    b = np.array([b"a", b"zz"] * 99_999 + [b"a", b"q"], dtype=object)
    np.testing.assert_array_equal(_run(same, {x: a, y: b}), (a == b) & (a != b"zz"))


# -- the ops, against Python's string methods ----------------------------------------------------

@pytest.mark.parametrize("kwargs, fmt", [
    ({}, "%f"), ({"precision": 2}, "%.2f"), ({"scientific": True}, "%e"),
    ({"shortest": True}, "%g"), ({"width": 9, "fill": "0", "precision": 1}, "%09.1f"),
    ({"width": 8}, "%8f"), ({"width": 8, "fill": "-"}, "%-8f")])
def test_as_string_formats_floats_as_printf_does(g, kwargs, fmt):
    values = np.array([1.5, -2.25, 1e-7, 123456.789], np.float64)
    got = _run(sg.as_string(sg.constant(values), **kwargs))
    assert got.tolist() == [(fmt % v).encode() for v in values]


def test_as_string_of_integers_and_bools_and_its_refusals(g):
    assert _run(sg.as_string(sg.constant([7, -12]), width=4)).tolist() == [b"   7", b" -12"]
    assert _run(sg.as_string(sg.constant([True, False]))).tolist() == [b"true", b"false"]
    with pytest.raises(ValueError, match="AsString .*both scientific and shortest"):
        sg.as_string(sg.constant([1.0]), scientific=True, shortest=True)
    with pytest.raises(ValueError, match="precision, scientific and shortest are for floats"):
        sg.as_string(sg.constant([1]), precision=2)
    with pytest.raises(ValueError, match="fill"):
        sg.as_string(sg.constant([1]), fill="x")


def test_reduce_join_follows_tf1s_documented_examples(g):
    a = sg.constant([["a", "b"], ["c", "d"]])
    got = _run([sg.reduce_join(a, 0), sg.reduce_join(a, -1, keep_dims=True),
                sg.reduce_join(a, [0, 1]), sg.reduce_join(a, [1, 0]), sg.reduce_join(a),
                sg.reduce_join(a, 0, separator=".")])
    assert [np.asarray(v).tolist() for v in got] == [
        [b"ac", b"bd"], [[b"ab"], [b"cd"]], b"acbd", b"abcd", b"abcd", [b"a.c", b"b.d"]]


def test_string_join_repeats_scalars_and_refuses_other_shapes(g):
    x = sg.placeholder(sg.string, [None])
    joined = sg.string_join(["<", x, ">", x], separator="|")
    assert _run(joined, {x: ["a", "b"]}).tolist() == [b"<|a|>|a", b"<|b|>|b"]
    assert sg.strings.join is sg.string_join
    with pytest.raises(ValueError, match=r"StringJoin .*input 1 has shape \(3,\).*\(2,\)"):
        sg.string_join([sg.constant(["a", "b"]), sg.constant(["a", "b", "c"])])


@pytest.mark.parametrize("axis, keep", [(None, False), (0, False), (1, True), ([0, 1], False),
                                        (-1, False), ([2, 0], True), ([], False)])
def test_reduce_join_joins_in_row_major_order(g, axis, keep):
    words = np.array([f"w{i}" for i in range(12)], dtype=object).reshape(2, 3, 2)
    # TF1's order: the first axis listed varies fastest; None is [2, 1, 0] (row-major)
    axes = (2, 1, 0) if axis is None else tuple(np.atleast_1d(axis) % 3)
    moved = np.transpose(words, [a for a in range(3) if a not in axes] + list(axes[::-1]))
    rows = moved.reshape(moved.shape[:3 - len(axes)] + (-1,))
    want = np.vectorize(lambda *_: None, otypes=[object])(rows[..., 0])
    for index in np.ndindex(rows.shape[:-1]):
        want[index] = ",".join(rows[index]).encode()
    if keep:
        want = want.reshape([1 if a in axes else words.shape[a] for a in range(3)])
    got = _run(sg.reduce_join(words.astype(str), axis, keep_dims=keep, separator=","))
    assert np.shape(got) == want.shape and np.asarray(got).tolist() == want.tolist()


def test_length_case_and_strip_against_python(g):
    x = sg.placeholder(sg.string, [None])
    fetches = [sg.strings.length(x), sg.strings.length(x, unit="UTF8_CHAR"),
               sg.strings.lower(x), sg.strings.upper(x), sg.strings.upper(x, encoding="utf-8"),
               sg.string_strip(x)]
    got = _run(fetches, {x: WORDS})
    b = _as_bytes(WORDS)
    assert got[0].dtype == np.int32 and got[0].tolist() == [len(w) for w in b]
    assert got[1].tolist() == [len(w) for w in WORDS]
    assert got[2].tolist() == [w.lower() for w in b]  # ASCII only: é stays
    assert got[3].tolist() == [w.upper() for w in b]
    assert got[4].tolist() == [w.upper().encode() for w in WORDS]
    assert got[5].tolist() == [w.strip() for w in b]


def test_substr_from_either_end_and_its_run_time_error(g):
    x = sg.placeholder(sg.string, [None])
    got = _run([sg.substr(x, 1, 2), sg.substr(x, -2, 5), sg.substr(x, [0, 1], 1),
                sg.strings.substr(x, 1, 1, unit="UTF8_CHAR")], {x: ["hello", "Bé"]})
    assert got[0].tolist() == [b"el", b"\xc3\xa9"]
    assert got[1].tolist() == [b"lo", b"\xc3\xa9"]
    assert got[2].tolist() == [b"h", b"\xc3"]
    assert got[3].tolist() == [b"e", "é".encode()]
    with pytest.raises(InvalidArgumentError, match=r"Substr op .* at \S*test_string_ops.py:\d+"
                                                   r".*pos 9 out of range"):
        _run(sg.substr(x, 9, 1), {x: ["hello"]})


def test_to_number_reads_numbers_and_names_a_string_that_is_not_one(g):
    x = sg.placeholder(sg.string, [None])
    got = _run([sg.string_to_number(x), sg.strings.to_number(x, sg.float64)],
               {x: ["1.5", " -2e3", "inf"]})
    assert got[0].dtype == np.float32 and got[0].tolist() == [1.5, -2000.0, np.inf]
    assert got[1].dtype == np.float64
    assert _run(sg.string_to_number(["12", "-3"], sg.int64)).tolist() == [12, -3]
    with pytest.raises(InvalidArgumentError, match="could not correctly convert string: b'1x'"):
        _run(sg.string_to_number(x), {x: ["1", "1x"]})
    with pytest.raises(InvalidArgumentError, match="could not correctly convert"):
        _run(sg.string_to_number(x, sg.int32), {x: ["99999999999"]})
    with pytest.raises(InvalidArgumentError, match="could not correctly convert string: b'1_0'"):
        _run(sg.string_to_number(x, sg.int32), {x: ["1_0"]})
    with pytest.raises(TypeError, match="out_type must be one of"):
        sg.string_to_number(x, sg.bool)


def test_regular_expressions_replace_and_match(g):
    x = sg.placeholder(sg.string, [None])
    fetches = [sg.regex_replace(x, r"([a-z])(\d)", r"<\2\1>"),
               sg.regex_replace(x, "a", "A", replace_global=False),
               sg.regex_replace(x, "[0-9]+", r"(\0)"),
               sg.strings.regex_full_match(x, r"[a-z0-9]+")]
    got = _run(fetches, {x: ["a1b2", "banana", "x"]})
    assert got[0].tolist() == [b"<1a><2b>", b"banana", b"x"]
    assert got[1].tolist() == [b"A1b2", b"bAnana", b"x"]
    assert got[2].tolist() == [b"a(1)b(2)", b"banana", b"x"]
    assert got[3].dtype == np.bool_ and got[3].tolist() == [True, True, True]
    with pytest.raises(ValueError, match=r"RegexReplace .*the pattern '\(' is not a regular"):
        sg.regex_replace(x, "(", "")


# -- strings through the rest of the system ------------------------------------------------------

def test_string_text_never_reaches_generated_code(g):
    payload = "\"); __import__('os').system('echo hacked') #"
    x = sg.placeholder(sg.string, [None])
    y = sg.regex_replace(sg.string_join([sg.constant(payload), x], separator=payload),
                         "hacked", payload)
    with sg.Session() as sess:
        source = sess.source(y, {x: ["a"]})
        got = sess.run(y, {x: ["a"]})
    assert "__import__" not in source.replace(repr(payload.encode()), "").replace(
        repr(payload), "")
    assert payload.encode() in got[0]


def test_graph_files_keep_string_constants_and_byte_attributes(g, tmp_path):
    x = sg.placeholder(sg.string, [None], name="x")
    sg.string_join([sg.constant(["é", "b"]), x], separator=" | ", name="joined")
    path = str(tmp_path / "g.json")
    sg.train.export_meta_graph(path)
    doc = json.loads(open(path).read())
    with sg.Graph().as_default() as g2:
        sg.train.import_meta_graph(path)
        got = sg.Session().run(g2.get_tensor_by_name("joined:0"),
                               {g2.get_tensor_by_name("x:0"): ["1", "2"]})
    assert got.tolist() == ["é | 1".encode(), b"b | 2"]
    const = next(op for op in doc["ops"] if op["type"] == "Const")
    const["attrs"]["value"]["strings"][1] = "not base64!"
    open(path, "w").write(json.dumps(doc))
    with sg.Graph().as_default(), pytest.raises(GraphFormatError, match=r"strings\[1\].*base64"):
        sg.train.import_meta_graph(path)


def test_checkpoints_keep_string_variables_and_catch_damage(g, tmp_path):
    v = sg.Variable([["a", ""], ["é", "long " * 20]], name="v")
    w = sg.Variable([1.5], name="w")
    step = sg.assign(v, sg.string_join([v, "!"]))
    saver = sg.train.Saver()
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        sess.run(step)
        want = sess.run(v)
        path = saver.save(sess, str(tmp_path / "model"))
    with sg.Session() as sess:
        saver.restore(sess, path)
        assert sess.run(v).tolist() == want.tolist() and sess.run(w).tolist() == [1.5]
    assert dict(sg.train.list_variables(path)) == {"v": [2, 2], "w": [1]}
    with np.load(path + ".npz", allow_pickle=False) as data:  # numbers only, no pickle
        lengths, raw = data["v:lengths"], data["v:bytes"]
    damaged = {"v:lengths": lengths + 1, "v:bytes": raw, "w": np.array([1.5], np.float32)}
    np.savez(path + ".npz", **damaged)
    with sg.Session() as sess, pytest.raises(DataLossError, match="lengths do not add up"):
        saver.restore(sess, path)


def test_print_shows_string_text_and_py_func_returns_strings(g, capfd):
    x = sg.placeholder(sg.string, [None])
    shown = sg.Print(x, [x, sg.constant("é!")], "words: ")
    upper = sg.py_func(lambda a: np.array([s.upper() for s in a], object), [x], sg.string)
    assert _run([shown, upper], {x: ["ab", "c"]})[1].tolist() == [b"AB", b"C"]
    assert capfd.readouterr().err == "words: [ab c]é!\n"
    bad = sg.py_func(lambda a: np.array([1, 2], object), [x], sg.string)
    with pytest.raises(InvalidArgumentError, match=r"output 0 of the function of py_func: int 1 "
                                                   r"at index \[0\] is not a string"):
        _run(bad, {x: ["ab", "c"]})


def test_text_utf8_cannot_encode_is_a_clear_error_naming_the_op(g):
    # A lone surrogate (json.loads gives one for "\ud800") once raised "function takes
    # exactly 5 arguments": a UnicodeEncodeError re-raised with one argument.
    words = sg.placeholder(sg.string, [None])
    with pytest.raises(ValueError, match=r"StringJoin op .*separator.*UTF-8"):
        sg.string_join([words, words], separator="\ud800")
    with pytest.raises(ValueError, match=r"RegexReplace op .*not a regular expression"):
        sg.regex_replace(words, "a\ud800", "b")


def test_reduce_join_of_nothing_is_empty_strings_and_an_axis_named_twice_is_refused(g):
    # Both were NumPy's errors when the run ran ("cannot reshape array of size 0", "axes
    # don't match array").
    words = sg.placeholder(sg.string, [None, None])
    none = np.empty((0, 2), dtype=object)
    assert _run(sg.reduce_join(words), {words: none}) == b""
    assert _run(sg.reduce_join(words, 0), {words: none}).tolist() == [b"", b""]
    assert _run(sg.reduce_join(words, 1), {words: none}).tolist() == []
    assert _run(sg.reduce_join(words, 1, keep_dims=True), {words: none}).shape == (0, 1)
    with pytest.raises(ValueError, match=r"ReduceJoin op .*axis \[0, -2\] names an axis twice"):
        sg.reduce_join(words, [0, -2])


def test_zeros_like_of_strings_is_empty_strings_and_number_fills_refuse_strings(g):
    # zeros_like and ones_like once filled a string tensor with the ints 0 and 1, a pad
    # padded it with 0, and scatter_nd failed adding bytes to 0 when the run ran.
    words = sg.placeholder(sg.string, [None])
    feed = {words: ["a", "b"]}
    blank = sg.zeros_like(words)
    assert blank.dtype is sg.string
    assert _run(sg.string_join([blank, words]), feed).tolist() == [b"a", b"b"]
    assert _run(sg.zeros_like(sg.constant(["x", "y", "z"]))).tolist() == [b""] * 3
    with pytest.raises(TypeError, match="OnesLike op .*ones of dtype string"):
        sg.ones_like(words)
    with pytest.raises(TypeError, match="Pad op .*constant pad of strings"):
        sg.pad(words, [[1, 1]])
    assert _run(sg.pad(words, [[1, 1]], mode="REFLECT"), feed).tolist() == [b"b", b"a", b"b",
                                                                             b"a"]
    with pytest.raises(TypeError, match="ScatterNd op .*not strings"):
        sg.scatter_nd([[0]], sg.constant(["z"]), [2])
