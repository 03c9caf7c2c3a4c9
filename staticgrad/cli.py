"""The `staticgrad` command: export, draw and read graphs saved as JSON, and run the demo.

    staticgrad export model.json --fetch probs --feed x:?,2 --checkpoint ckpt/model -o m.py
    staticgrad export model.json --fetch probs --feed x:8,2 --backend cuda -o m.py  # + m.cu
    staticgrad draw model.json -o model.svg          # .svg, .png, or .dot (needs no graphviz)
    staticgrad source model.json --fetch probs --feed x:?,2
    staticgrad demo

Graph files are those of `sg.train.export_meta_graph` / `write_graph`. A fetch or feed is
named as in `sess.run`: `probs:0` is a tensor; a bare op name `probs` means its first
output (or the op itself when it has none, e.g. a training step).

A feed's shape follows a colon: `x:4,3` (4 by 3), `x:?,3` (a `?` keeps the placeholder's
own size there), `x:` or `x:()` (a scalar); with a tensor index, `x:0:4,3` (so `x:4` is x's
first output with shape (4,), not tensor 4). Without a shape the placeholder's declared
shape is used. `export` leaves a size that stays unknown free (the module takes any size
there: see sg.export); `export --backend cuda` and `source` need every size known. Feeds
are zeros of the placeholder's dtype where values are needed (`source`).

Every error is one line on stderr, `staticgrad: error: ...`, with exit status 1 (2 for a
command line argparse rejects).
"""

from __future__ import annotations

import argparse
import os
import sys

PROG = "staticgrad"

__all__ = ["main"]


class CommandError(Exception):
    """An error the command reports as one line (no traceback)."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as the one line every other error is."""

    def error(self, message: str):
        command = self.prog.removeprefix(PROG).strip()
        _fail(f"{command}: {message}" if command else message, status=2)


def _fail(message: str, status: int = 1):
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(status)


# -- shared pieces ------------------------------------------------------------------------------
def parse_feed(spec: str) -> tuple[str, list | None]:
    """Split `NAME[:SHAPE]` into (name, shape or None); a `?` in the shape stays None.

    The name ends at the first colon, or at the second when a tensor index comes first
    (`x:0:4,3`); so `x:4` is op x's first output with shape (4,).

    >>> parse_feed("x:?,3")
    ('x', [None, 3])
    >>> parse_feed("x:0:4")
    ('x:0', [4])
    """
    parts = spec.split(":")
    if len(parts) == 1:
        return spec, None
    if len(parts) == 2:
        name, shape_text = parts
    elif len(parts) == 3 and parts[1].isdigit():
        name, shape_text = f"{parts[0]}:{parts[1]}", parts[2]
    else:
        raise CommandError(f"bad feed {spec!r}: expected NAME[:SHAPE], e.g. x:4,3 or x:?,3")
    if not name:
        raise CommandError(f"feed {spec!r} has no name (expected NAME[:SHAPE], e.g. x:4,3)")
    text = shape_text.strip()
    if text in ("", "()"):
        return name, []
    shape = []
    for part in text.removeprefix("(").removesuffix(")").split(","):
        part = part.strip()
        if part == "?":
            shape.append(None)
        elif part.isdigit():
            shape.append(int(part))
        else:
            raise CommandError(f"bad shape {shape_text!r} in feed {spec!r}: expected sizes "
                               "separated by commas, each a whole number or ?, e.g. x:4,3 "
                               "or x:?,3 (x: for a scalar)")
    return name, shape


def _load_graph(path: str):
    """A fresh Graph holding the saved graph, and the Saver over its variables (or None)."""
    import staticgrad as sg
    if not os.path.exists(path):
        raise CommandError(f"graph file {path!r} does not exist")
    graph = sg.Graph()
    with graph.as_default():
        saver = sg.train.import_meta_graph(path)
    return graph, saver


def _element(graph, name: str, what: str):
    """The tensor (or op, for an op without outputs) that `name` names in `graph`."""
    try:
        element = graph.as_graph_element(name)
    except (KeyError, ValueError, TypeError) as e:
        raise CommandError(f"{what} {name!r} is not in the graph: {_message(e)}") from None
    if ":" not in name and element.outputs:
        return element.outputs[0]
    return element


def _feeds(graph, specs, free: bool = False) -> tuple[list, list]:
    """The fed placeholders, and their shapes, from `NAME[:SHAPE]` specs: concrete, or with
    `free` None where a size stays unknown (the rank must be known)."""
    tensors, shapes = [], []
    for spec in specs or ():
        name, shape = parse_feed(spec)
        tensor = _element(graph, name, "feed")
        if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
            raise CommandError(f"feed {name!r} names an operation without outputs, not a tensor")
        declared = tensor.shape.as_list() if tensor.shape.dims is not None else None
        if shape is None and declared is None and free:
            raise CommandError(f"feed {name!r} has a shape of unknown rank: give its shape, "
                               f"e.g. {name}:?,3 (a ? is free)")
        if shape is None:
            shape = declared if declared is not None else [None]
        elif declared is not None and len(declared) != len(shape):
            raise CommandError(f"feed {spec!r} gives {len(shape)} dimension(s); {tensor.name} "
                               f"has shape {tensor.shape}")
        sizes = []
        for i, size in enumerate(shape):
            if size is None:
                size = declared[i] if declared is not None else None
            if size is None and not free:
                raise CommandError(f"feed {name!r} (shape {tensor.shape}) needs its size in "
                                   f"dimension {i}: give it as {name}:" +
                                   ",".join("N" if d is None else str(d) for d in
                                            (declared or shape)))
            sizes.append(size)
        tensors.append(tensor)
        shapes.append(tuple(sizes))
    return tensors, shapes


def _session(graph, saver, checkpoint: str | None, backend: str = "numpy"):
    """A Session on `graph` holding the checkpoint's values, or the initializers' values."""
    import staticgrad as sg
    sess = sg.Session(graph=graph, backend=backend)
    with graph.as_default():
        if checkpoint is None:
            sess.run(sg.global_variables_initializer())
        elif saver is None:
            raise CommandError("--checkpoint was given, but the graph has no variables")
        else:
            saver.restore(sess, checkpoint)
    return sess


def _message(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror and e.filename:
        return f"{e.strerror}: {e.filename}"
    if isinstance(e, KeyError) and len(e.args) == 1:
        return str(e.args[0])
    return str(e) or type(e).__name__


# -- the subcommands ------------------------------------------------------------------------------
def cmd_export(args) -> None:
    import staticgrad as sg
    graph, saver = _load_graph(args.graph)
    fetches = [_element(graph, name, "fetch") for name in args.fetch]
    feeds, shapes = _feeds(graph, args.feed, free=True)
    # the values are computed on the host whatever the backend exported to (cuda needs no GPU)
    sess = _session(graph, saver, args.checkpoint)
    with graph.as_default():
        path = sg.export(fetches, feeds, args.output, backend=args.backend, session=sess,
                         feed_shapes=shapes)
    stem = os.path.splitext(path)[0]
    cuda = f", {stem}.cu" if sg.backends.get_backend(args.backend).name == "cuda" else ""
    print(f"wrote {path}{cuda} and {stem}.npz")


def cmd_draw(args) -> None:
    from . import viz
    from .train.atomic_files import atomic_write
    graph, _ = _load_graph(args.graph)
    what = [_element(graph, name, "fetch") for name in args.fetch] if args.fetch else graph
    options = {"rankdir": args.rankdir}
    if args.output.lower().endswith(".dot"):
        # the whole text first, then one rename: a failed draw leaves an older file as it was
        text = viz.to_dot(what, **options)
        atomic_write(args.output, lambda f: f.write(text.encode("utf-8")))
    else:
        suffix = os.path.splitext(args.output)[1].lower()
        if suffix not in (".svg", ".png"):
            raise CommandError(f"cannot tell the format of {args.output!r}: name a .svg, "
                               ".png or .dot file")
        viz.render(what, args.output, **options)
    print(f"wrote {args.output}")


def cmd_source(args) -> None:
    import numpy as np
    graph, _ = _load_graph(args.graph)
    fetches = [_element(graph, name, "fetch") for name in args.fetch]
    feeds, shapes = _feeds(graph, args.feed)
    import staticgrad as sg
    sess = sg.Session(graph=graph, backend=args.backend)
    feed_dict = {t: np.zeros(s, dtype=t.dtype.np) for t, s in zip(feeds, shapes)}
    print(sess.source(fetches, feed_dict), end="")


def cmd_demo(args) -> None:
    from .demo import main as demo
    demo()


# -- the parser ----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the `staticgrad` command."""
    parser = _Parser(prog=PROG, description="Export, draw and read staticgrad graphs saved as "
                     "JSON (sg.train.export_meta_graph), and run the demo.",
                     epilog="Run `staticgrad COMMAND --help` for a command's options.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                     parser_class=_Parser)
    feed_help = ("a placeholder to feed, NAME[:SHAPE]: x:4,3, x:?,3 (? keeps the placeholder's "
                 "own size), x: for a scalar; repeatable")
    fetch_help = ("a tensor or op to fetch: probs:0, or probs for its first output; "
                  "repeatable")
    backend_help = "the backend to generate code for (default numpy; see sg.available_backends())"

    p = commands.add_parser(
        "export", help="write a standalone NumPy (or CUDA) module computing fetches of a saved "
        "graph",
        description="Import GRAPH.json into a fresh graph, give its variables the values of "
        "--checkpoint (else their initializers'), and write OUT.py (needing only NumPy) with "
        "run(<feeds>) returning the fetches, and OUT.npz with the variable values beside it. "
        "With --backend cuda, OUT.py needs NumPy and CuPy, and its kernels go to OUT.cu "
        "beside it; every size must then be known.")
    p.add_argument("graph", metavar="GRAPH.json", help="a graph saved by export_meta_graph")
    p.add_argument("--fetch", action="append", required=True, metavar="NAME", help=fetch_help)
    p.add_argument("--feed", action="append", default=[], metavar="NAME[:SHAPE]",
                   help=feed_help + "; a size left unknown is free (run() takes any size "
                   "there); the order of run()'s arguments")
    p.add_argument("--checkpoint", metavar="PREFIX",
                   help="a Saver checkpoint prefix (PREFIX.npz) to restore the variables from")
    p.add_argument("-o", "--output", required=True, metavar="OUT.py", help="the module to write")
    p.add_argument("--backend", default="numpy", metavar="NAME", help=backend_help)
    p.set_defaults(run=cmd_export)

    p = commands.add_parser(
        "draw", help="draw a saved graph as SVG, PNG or DOT",
        description="Draw GRAPH.json (or the part the --fetch names need). .dot writes the "
        "DOT source and needs nothing else; .svg and .png need the graphviz package "
        "(pip install 'staticgrad[viz]') and the `dot` program.")
    p.add_argument("graph", metavar="GRAPH.json", help="a graph saved by export_meta_graph")
    p.add_argument("-o", "--output", required=True, metavar="OUT.svg|OUT.png|OUT.dot",
                   help="the file to write; its suffix picks the format")
    p.add_argument("--fetch", action="append", default=[], metavar="NAME",
                   help="draw only what these need; " + fetch_help)
    p.add_argument("--rankdir", default="TB", choices=["TB", "LR", "BT", "RL"],
                   help="layout direction (default TB: top to bottom)")
    p.set_defaults(run=cmd_draw)

    p = commands.add_parser(
        "source", help="print the generated NumPy source for fetches of a saved graph",
        description="Print the NumPy code Session.run would execute for the fetches, "
        "specialized to the feed shapes (the feeds are zeros of those shapes).")
    p.add_argument("graph", metavar="GRAPH.json", help="a graph saved by export_meta_graph")
    p.add_argument("--fetch", action="append", required=True, metavar="NAME", help=fetch_help)
    p.add_argument("--feed", action="append", default=[], metavar="NAME[:SHAPE]",
                   help=feed_help)
    p.add_argument("--backend", default="numpy", metavar="NAME", help=backend_help)
    p.set_defaults(run=cmd_source)

    p = commands.add_parser("demo", help="run the demo: a graph, its results and its code",
                            description="Build two small graphs, run them, and print the "
                            "generated NumPy code (examples/demo.py).")
    p.set_defaults(run=cmd_demo)
    return parser


# errors whose message says it all; any other is shown with its type's name
_PLAIN_ERRORS = (OSError, ValueError, TypeError, KeyError, RuntimeError, ImportError)


def main(argv: list[str] | None = None) -> int:
    """Run the `staticgrad` command with `argv` (default: sys.argv[1:]); return 0 on success.
    Errors print one line on stderr and exit with status 1 (2 for a bad command line).

    >>> main(["source", "model.json", "--fetch", "probs", "--feed", "x:1,2"])  # doctest: +SKIP
    """
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except CommandError as e:
        _fail(str(e))
    except KeyboardInterrupt:
        _fail("interrupted", status=130)
    except BrokenPipeError:
        sys.stderr.close()  # the reader (e.g. `| head`) left: nothing more to say
        return 1
    except Exception as e:  # one line, never a traceback: the message names what is wrong
        plain = isinstance(e, _PLAIN_ERRORS) or type(e).__module__.startswith("staticgrad")
        _fail(_message(e) if plain else f"{type(e).__name__}: {_message(e)}")
    return 0
