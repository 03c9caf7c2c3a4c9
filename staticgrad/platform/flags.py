"""Command-line flags as TF1 programs define them (`tf.app.flags`, `tf.flags`):

    flags = sg.app.flags
    flags.DEFINE_integer("batch_size", 100, "examples per step")
    flags.DEFINE_boolean("fake_data", False, "use fake data")
    FLAGS = flags.FLAGS
    ...
    print(FLAGS.batch_size)          # parsed from sys.argv on first use, or by sg.app.run

Flags are given as `--name=value`, `--name value` or `-name=value`; a boolean also as
`--name` and `--noname`. Flags nobody defined are left in the arguments (TF1's app.run
tolerates them too); a value of the wrong type, or a flag defined twice, is an error naming
the flag.
"""

from __future__ import annotations

import sys

from .._namespace import missing_name, public_dir

_TRUE, _FALSE = ("true", "t", "1", "yes"), ("false", "f", "0", "no")


class FlagsError(ValueError):
    """A flag defined twice, or given a value its type refuses."""


def _boolean(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean (true/false)")


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",")] if text else []


_PARSERS = {"string": str, "integer": int, "float": float, "boolean": _boolean, "list": _list}


class _Flag:
    def __init__(self, name: str, kind: str, default, help: str):
        self.name, self.kind, self.default, self.help = name, kind, default, help
        self.value = self.parse(default) if isinstance(default, str) and kind != "string" \
            else default

    def parse(self, text: str):
        try:
            return _PARSERS[self.kind](text)
        except ValueError as e:
            raise FlagsError(f"flag --{self.name}: {e} (a {self.kind} flag)") from None


class FlagValues:
    """The defined flags and their values: `FLAGS.name`. Calling it with an argument list
    parses it and returns what is left (the program's name first)."""

    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    def _define(self, name: str, kind: str, default, help: str) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise FlagsError(f"a flag's name must be an identifier, got {name!r}")
        if name in self._flags:
            raise FlagsError(f"flag --{name} is defined twice")
        self._flags[name] = _Flag(name, kind, default, help)

    def __call__(self, argv, known_only: bool = True) -> list[str]:
        argv = list(argv)
        rest, args = argv[:1], iter(argv[1:])
        for arg in args:
            if arg == "--":
                rest += list(args)
                break
            flag, value = self._match(arg)
            if flag is None:
                if not known_only and arg.startswith("-"):
                    raise FlagsError(f"unknown command-line flag {arg!r}")
                rest.append(arg)
                continue
            if value is None:
                value = next(args, None)
                if value is None:
                    raise FlagsError(f"flag --{flag.name} needs a value")
            flag.value = flag.parse(value) if isinstance(value, str) else value
        object.__setattr__(self, "_parsed", True)
        return rest

    def _match(self, arg: str):
        """(the flag `arg` sets, its value: text, a bool, or None to take the next
        argument), or (None, None) for an argument that sets none."""
        if not arg.startswith("-") or arg == "-":
            return None, None
        name, eq, value = arg.lstrip("-").partition("=")
        flag = self._flags.get(name)
        if flag is not None:
            if flag.kind == "boolean" and not eq:
                return flag, True
            return flag, value if eq else None
        if name.startswith("no") and not eq:
            flag = self._flags.get(name[2:])
            if flag is not None and flag.kind == "boolean":
                return flag, False
        return None, None

    def __getattr__(self, name: str):
        flags = self._flags
        if name not in flags:
            raise AttributeError(f"no flag --{name} is defined (define it with "
                                 f"flags.DEFINE_string and kin)")
        if not self._parsed:  # (TF1's FLAGS parse sys.argv on first use)
            self(sys.argv, known_only=True)
        return flags[name].value

    def __setattr__(self, name: str, value) -> None:
        if name not in self._flags:
            raise AttributeError(f"no flag --{name} is defined")
        self._flags[name].value = value

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def flag_values_dict(self) -> dict:
        return {name: getattr(self, name) for name in self._flags}

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)


FLAGS = FlagValues()


def DEFINE_string(name, default, help, flag_values=FLAGS, **_):  # noqa: N802 - TF1's names
    """Define the flag --name: a string, `default` until the command line says."""
    flag_values._define(name, "string", default, help)


def DEFINE_integer(name, default, help, flag_values=FLAGS, **_):  # noqa: N802
    """Define the flag --name: an int, `default` until the command line says."""
    flag_values._define(name, "integer", default, help)


def DEFINE_float(name, default, help, flag_values=FLAGS, **_):  # noqa: N802
    """Define the flag --name: a float, `default` until the command line says."""
    flag_values._define(name, "float", default, help)


def DEFINE_boolean(name, default, help, flag_values=FLAGS, **_):  # noqa: N802
    """Define the flag --name: a bool (--name, --noname, --name=false), `default` until the
    command line says."""
    flag_values._define(name, "boolean", default, help)


def DEFINE_list(name, default, help, flag_values=FLAGS, **_):  # noqa: N802
    """Define the flag --name: a list of strings, given comma-separated, `default` until the
    command line says."""
    flag_values._define(name, "list", default, help)


DEFINE_bool = DEFINE_boolean  # noqa: N816 - TF1's name

__all__ = ["FLAGS", "FlagValues", "FlagsError", "DEFINE_string", "DEFINE_integer",
           "DEFINE_float", "DEFINE_boolean", "DEFINE_bool", "DEFINE_list"]

__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.flags", "tf.flags", globals())
