"""The fuzzing generator's array op families: reshape, transpose, expand_dims/squeeze,
broadcast_to/tile, pad, indexing (`x[...]`, strided_slice, slice), gather, one_hot, concat,
stack, unstack/split, zeros_like/ones_like, repeated lines (for CSE), and leaves (fill, range,
constants, placeholders). Each family adds one node or returns False (see fuzz_ops_math.py).
"""

from __future__ import annotations

import dataclasses
import math

from hypothesis import strategies as st

from tests.fuzz_spec import MAX_ELEMENTS, MAX_RANK, Pool, Val, lit


def reshape_to(pool: Pool, x: Val, shape, minus_one=False) -> Val:
    dims = list(shape)
    if minus_one and dims:
        dims[pool.draw(st.integers(0, len(dims) - 1))] = -1
    return pool.add(f"sg.reshape({x.name}, {dims!r})", tuple(shape), x.dtype, x.lo, x.hi,
                    x.exact, [x], "Reshape")


def _factor(pool: Pool, n: int) -> tuple:
    """A random shape of n elements and rank <= 3."""
    dims = []
    while n > 1 and len(dims) < 2:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = pool.choice(divisors)
        dims.append(d)
        n //= d
    dims.append(n)
    if dims and pool.flag():
        dims.insert(pool.draw(st.integers(0, len(dims))), 1)
    return tuple(dims[:MAX_RANK]) if math.prod(dims[:MAX_RANK]) == math.prod(dims) else \
        tuple(dims)


def reshape(pool: Pool) -> bool:
    x = pool.pick(lambda v: True)
    shape = _factor(pool, x.size)
    if len(shape) > MAX_RANK:
        return False
    reshape_to(pool, x, shape, minus_one=pool.flag())
    return True


def transpose(pool: Pool) -> bool:
    x = pool.pick(lambda v: len(v.shape) >= 2) or pool.pick(lambda v: True)
    rank = len(x.shape)
    if pool.draw(st.integers(0, 3)) == 0:
        perm, text = tuple(reversed(range(rank))), ""
    else:
        perm = tuple(pool.draw(st.permutations(range(rank))))
        text = f", perm={list(perm)!r}"
    pool.add(f"sg.transpose({x.name}{text})", tuple(x.shape[p] for p in perm), x.dtype, x.lo,
             x.hi, x.exact, [x], "Transpose")
    return True


def expand_squeeze(pool: Pool) -> bool:
    if pool.flag() or not any(1 in v.shape for v in pool.all):
        x = pool.pick(lambda v: len(v.shape) < MAX_RANK)
        if x is None:
            return False
        rank = len(x.shape)
        axis = pool.draw(st.integers(-rank - 1, rank))
        shape = list(x.shape)
        shape.insert(axis % (rank + 1), 1)
        pool.add(f"sg.expand_dims({x.name}, {axis})", tuple(shape), x.dtype, x.lo, x.hi,
                 x.exact, [x], "ExpandDims")
        return True
    x = pool.pick(lambda v: 1 in v.shape)
    if x is None:
        return False
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    if pool.flag() and x.static:
        axes, text = ones, ""
    else:
        axes = sorted(set(pool.draw(st.lists(st.sampled_from(ones), min_size=1))))
        text = f", axis={[a - len(x.shape) if pool.flag() else a for a in axes]!r}"
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    pool.add(f"sg.squeeze({x.name}{text})", shape, x.dtype, x.lo, x.hi, x.exact, [x], "Squeeze")
    return True


def broadcast_tile(pool: Pool) -> bool:
    x = pool.pick(lambda v: v.size * 2 <= MAX_ELEMENTS)
    if x is None:
        return False
    if pool.flag():  # broadcast_to: grow the 1-dims, maybe add a leading dim
        target = [pool.draw(st.integers(1, 3)) if d == 1 else d for d in x.shape]
        if len(target) < MAX_RANK and pool.flag():
            target.insert(0, pool.draw(st.integers(1, 3)))
        if math.prod(target) > MAX_ELEMENTS:
            return False
        pool.add(f"sg.broadcast_to({x.name}, {target!r})", tuple(target), x.dtype, x.lo, x.hi,
                 x.exact, [x], "BroadcastTo")
        return True
    if not x.shape:
        return False
    mult = [pool.draw(st.integers(1, 2)) for _ in x.shape]
    shape = tuple(m * d for m, d in zip(mult, x.shape))
    if math.prod(shape) > MAX_ELEMENTS:
        return False
    pool.add(f"sg.tile({x.name}, {mult!r})", shape, x.dtype, x.lo, x.hi, x.exact, [x], "Tile")
    return True


def pad(pool: Pool) -> bool:
    x = pool.pick(lambda v: v.shape and v.kind in "fi")
    if x is None:
        return False
    pads, shape = [], list(x.shape)
    for i, d in enumerate(x.shape):  # widen axes while the result stays within the limit
        before, after = pool.draw(st.integers(0, 1)), pool.draw(st.integers(0, 2))
        grown = shape[:i] + [d + before + after] + shape[i + 1:]
        if math.prod(grown) > MAX_ELEMENTS:
            before = after = 0
        pads.append([before, after])
        shape[i] = d + before + after
    shape = tuple(shape)
    value = pool.choice([0, 1]) if x.kind == "i" else pool.choice([0.0, -1.5])
    extra = f", constant_values={lit(value)}" if value else ""
    pool.add(f"sg.pad({x.name}, {pads!r}{extra})", shape, x.dtype, min(x.lo, value),
             max(x.hi, value), x.exact, [x], "Pad")
    return True


def getitem(pool: Pool) -> bool:
    """x[...]: ints, slices with negative bounds and steps, None, and `...`."""
    x = pool.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return False
    parts, shape = [], []
    axes = list(x.shape)
    use_ellipsis = len(axes) >= 2 and pool.draw(st.integers(0, 3)) == 0
    n_explicit = pool.draw(st.integers(1, len(axes))) if use_ellipsis else len(axes)
    if use_ellipsis and n_explicit == len(axes):
        n_explicit -= 1
    for i, d in enumerate(axes[:n_explicit]):
        style = pool.choice(["slice", "int", "all", "newaxis"])
        if style == "newaxis" and len(shape) + (len(axes) - i) < MAX_RANK:
            parts.append("None")
            shape.append(1)
        if style == "int":
            k = pool.draw(st.integers(-d, d - 1))
            parts.append(str(k))
            continue
        if style == "all":
            parts.append(":")
            shape.append(d)
            continue
        step = pool.choice([1, 2, -1, -2])
        start = pool.choice([None, 0, 1, -1, -2])
        stop = pool.choice([None, -1, 2, 3])
        n = len(range(*slice(start, stop, step).indices(d)))
        if n == 0:
            start, stop = None, None
            n = len(range(*slice(None, None, step).indices(d)))
        text = f"{'' if start is None else start}:{'' if stop is None else stop}"
        parts.append(text + (f":{step}" if step != 1 else ""))
        shape.append(n)
    if use_ellipsis:
        parts.append("...")
        shape.extend(axes[n_explicit:])
    if len(shape) > MAX_RANK:
        return False
    if pool.draw(st.integers(0, 4)) == 0:  # the same index through the op's builder
        spec = "(" + ", ".join(_spec_item(p) for p in parts) + ",)"
        text = f"strided_slice({x.name}, {spec})"
    else:
        text = f"{x.name}[{', '.join(parts)}]"
    pool.add(text, tuple(shape), x.dtype, x.lo, x.hi, x.exact, [x], "StridedSlice")
    return True


def _spec_item(part: str) -> str:
    if part in ("None", "..."):
        return "None" if part == "None" else "Ellipsis"
    if ":" not in part:
        return part
    bits = (part.split(":") + [""])[:3]
    vals = [None if b == "" else int(b) for b in bits]
    return repr(("slice", *vals))


def slice_(pool: Pool) -> bool:
    x = pool.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return False
    begin, size, shape = [], [], []
    for d in x.shape:
        b = pool.draw(st.integers(0, d - 1))
        s = pool.draw(st.integers(1, d - b))
        if pool.draw(st.integers(0, 2)) == 0:
            s_text, s = -1, d - b
        else:
            s_text = s
        begin.append(b)
        size.append(s_text)
        shape.append(s)
    pool.add(f"sg.slice({x.name}, {begin!r}, {size!r})", tuple(shape), x.dtype, x.lo, x.hi,
             x.exact, [x], "Slice")
    return True


def gather(pool: Pool) -> bool:
    x = pool.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return False
    rank = len(x.shape)
    axis = pool.draw(st.integers(-rank, rank - 1))
    d = x.shape[axis]
    room = MAX_ELEMENTS // (x.size // d)
    if pool.flag():  # constant indices (repeats, any order)
        n = pool.draw(st.integers(1, max(1, min(4, room))))
        idx = pool.draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n))
        if pool.flag() and len(idx) >= 2 and len(idx) % 2 == 0:
            idx_text = f"{[idx[:len(idx) // 2], idx[len(idx) // 2:]]!r}"
            ishape = (2, len(idx) // 2)
        else:
            idx_text, ishape = repr(idx), (len(idx),)
        ival = None
    else:  # computed indices: an integer value, brought into range
        ival = pool.pick(lambda v: v.kind == "i" and v.size <= room and
                         len(v.shape) + rank - 1 <= MAX_RANK)
        if ival is None:
            ival = pool.leaf((pool.draw(st.integers(1, max(1, min(4, room)))),), "int32")
        ival = pool.index_into(ival, d)
        idx_text, ishape = ival.name, ival.shape
    shape = x.shape[:axis % rank] + ishape + x.shape[axis % rank + 1:]
    if math.prod(shape) > MAX_ELEMENTS or len(shape) > MAX_RANK:
        return False
    pool.add(f"sg.gather({x.name}, {idx_text}, axis={axis})", shape, x.dtype, x.lo, x.hi,
             x.exact, [x] + ([ival] if ival else []), "GatherV2")
    return True


def one_hot(pool: Pool) -> bool:
    idx = pool.pick(lambda v: v.kind == "i" and len(v.shape) < MAX_RANK)
    if idx is None:
        idx = pool.leaf(pool.shape(max_rank=2, max_elements=16), "int32")
    depth = pool.draw(st.integers(1, 4))
    if idx.size * depth > MAX_ELEMENTS:
        return False
    if pool.flag():  # in range; else out-of-range indices give rows of off_value
        idx = pool.index_into(idx, depth)
    rank = len(idx.shape)
    axis = pool.choice([-1, 0]) if rank else -1
    on, off = pool.choice([(1.0, 0.0), (2.5, -1.0)])
    shape = list(idx.shape)
    shape.insert(axis % (rank + 1) if axis != -1 else rank, depth)
    args = f"{idx.name}, {depth}"
    if (on, off) != (1.0, 0.0):
        args += f", on_value={on!r}, off_value={lit(off)}"
    if axis != -1:
        args += f", axis={axis}"
    dtype = pool.fdtype
    pool.add(f"sg.one_hot({args}, dtype=sg.{dtype})", tuple(shape), dtype, min(on, off),
             max(on, off), True, [idx], "OneHot")
    return True


def concat(pool: Pool) -> bool:
    x = pool.pick(lambda v: len(v.shape) >= 1 and v.size * 2 <= MAX_ELEMENTS)
    if x is None:
        return False
    rank = len(x.shape)
    axis = pool.draw(st.integers(-rank, rank - 1))
    a = axis % rank
    parts, total = [x], x.shape[a]
    for _ in range(pool.draw(st.integers(1, 2))):
        rest = x.size // x.shape[a]
        room = MAX_ELEMENTS // rest - total  # the most the axis may still grow by
        y = pool.pick(lambda v, room=room: v.dtype == x.dtype and len(v.shape) == rank and
                      all(d == e for i, (d, e) in enumerate(zip(v.shape, x.shape)) if i != a)
                      and v.shape[a] <= room)
        if y is None or not pool.flag():
            n = pool.draw(st.integers(1, 3))
            if (total + n) * rest > MAX_ELEMENTS:
                break
            shape = list(x.shape)
            shape[a] = n
            y = x if n == x.shape[a] and pool.flag() else pool.leaf(tuple(shape), x.dtype)
        parts.append(y)
        total += y.shape[a]
    shape = list(x.shape)
    shape[a] = total
    pool.add(f"sg.concat([{', '.join(p.name for p in parts)}], {axis})", tuple(shape), x.dtype,
             min(p.lo for p in parts), max(p.hi for p in parts), all(p.exact for p in parts),
             parts, "ConcatV2")
    return True


def stack(pool: Pool) -> bool:
    x = pool.pick(lambda v: len(v.shape) < MAX_RANK and v.size * 2 <= MAX_ELEMENTS)
    if x is None:
        return False
    n = pool.draw(st.integers(2, 3))
    if x.size * n > MAX_ELEMENTS:
        n = 2
    parts = [x]
    for _ in range(n - 1):
        y = pool.pick(lambda v: v.dtype == x.dtype and v.shape == x.shape)
        parts.append(y if y is not None and pool.flag() else
                     x if pool.flag() else pool.leaf(x.shape, x.dtype))
    rank = len(x.shape)
    axis = pool.draw(st.integers(-rank - 1, rank))
    shape = list(x.shape)
    shape.insert(axis % (rank + 1), n)
    pool.add(f"sg.stack([{', '.join(p.name for p in parts)}], axis={axis})", tuple(shape),
             x.dtype, min(p.lo for p in parts), max(p.hi for p in parts),
             all(p.exact for p in parts), parts, "Pack")
    return True


def unstack_split(pool: Pool) -> bool:
    x = pool.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return False
    rank = len(x.shape)
    axis = pool.draw(st.integers(-rank, rank - 1))
    d = x.shape[axis]
    shape = list(x.shape)
    if pool.flag():
        i = pool.draw(st.integers(0, d - 1))
        del shape[axis % rank]
        pool.add(f"sg.unstack({x.name}, num={d}, axis={axis})[{i}]", tuple(shape), x.dtype,
                 x.lo, x.hi, x.exact, [x], "Unpack")
        return True
    divisors = [n for n in range(1, d + 1) if d % n == 0]
    if pool.flag() or d == 1:
        n = pool.choice(divisors)
        i = pool.draw(st.integers(0, n - 1))
        shape[axis % rank] = d // n
        text = f"sg.split({x.name}, {n}, axis={axis})[{i}]"
    else:
        first = pool.draw(st.integers(1, d - 1))
        sizes = [first, d - first]
        i = pool.draw(st.integers(0, 1))
        shape[axis % rank] = sizes[i]
        text = f"sg.split({x.name}, {sizes!r}, axis={axis})[{i}]"
    pool.add(text, tuple(shape), x.dtype, x.lo, x.hi, x.exact, [x], "Split")
    return True



def like(pool: Pool) -> bool:
    """What only x's shape decides: zeros_like, ones_like, shape, size, rank."""
    x = pool.pick(lambda v: True)
    style = pool.choice(["zeros", "ones", "shape", "size", "rank"])
    if style == "zeros":
        pool.add(f"sg.zeros_like({x.name})", x.shape, x.dtype, 0, 0, True, [x], "ZerosLike")
    elif style == "ones":
        pool.add(f"sg.ones_like({x.name})", x.shape, x.dtype, 1, 1, True, [x], "OnesLike")
    elif style == "shape" and x.shape:  # (no empty values: a scalar's shape is [])
        pool.add(f"sg.shape({x.name})", (len(x.shape),), "int32", min(x.shape, default=0),
                 max(x.shape, default=0), True, [x], "Shape")
    elif style in ("size", "shape"):
        pool.add(f"sg.size({x.name})", (), "int32", x.size, x.size, True, [x], "Size")
    else:
        pool.add(f"sg.rank({x.name})", (), "int32", len(x.shape), len(x.shape), True, [x],
                 "Rank")
    return True


def duplicate(pool: Pool) -> bool:
    """The same line as an earlier node, again: common-subexpression elimination's food."""
    x = pool.pick(lambda v: v.expr is not None and "sg.constant" not in v.expr)
    if x is None:
        return False
    pool.nodes.append(dataclasses.replace(x, name=f"n{len(pool.nodes)}"))
    pool.all.append(pool.nodes[-1])
    return True


def leaf_op(pool: Pool) -> bool:
    """A value made from nothing: a constant or placeholder, fill, range, eye, linspace, or a
    placeholder_with_default (never fed here)."""
    style = pool.choice(["leaf", "fill", "range", "eye", "linspace", "with_default"])
    if style == "eye":
        n, m = pool.draw(st.integers(1, 4)), pool.draw(st.integers(1, 4))
        pool.add(f"sg.eye({n}, {m}, dtype=sg.{pool.fdtype})", (n, m), pool.fdtype, 0, 1, True,
                 [], "Eye")
        return True
    if style == "linspace":
        n = pool.draw(st.integers(1, 6))
        f = f"sg.{pool.fdtype}"
        pool.add(f"sg.linspace(sg.constant(-1.0, dtype={f}), sg.constant(2.0, dtype={f}), {n})",
                 (n,), pool.fdtype, -1.0, 2.0, True, [], "LinSpace")
        return True
    if style == "with_default":
        c = pool.constant(pool.shape(), pool.fdtype)
        pool.add(f"sg.placeholder_with_default({c.name}, {list(c.shape)!r})", c.shape, c.dtype,
                 c.lo, c.hi, True, [c], "PlaceholderWithDefault")
        return True
    if style == "fill":
        shape = pool.shape(min_rank=1)
        v = pool.choice([0.5, -1.25])
        pool.add(f"sg.fill({list(shape)!r}, sg.constant({v!r}, dtype=sg.{pool.fdtype}))",
                 shape, pool.fdtype, v, v, True, [], "Fill")
    elif style == "range":
        n = pool.draw(st.integers(1, 6))
        pool.add(f"sg.range({n})", (n,), "int32", 0, n - 1, True, [], "Range")
    else:
        pool.leaf(pool.shape(), pool.choice([pool.fdtype, pool.fdtype, "int32", "bool"]))
    return True
