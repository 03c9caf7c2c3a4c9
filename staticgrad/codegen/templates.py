"""The jinja2 environment over `codegen_templates/` (inside the wheel, or beside the package
in a source checkout)."""

from __future__ import annotations

import functools
import os

import jinja2

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = [
    os.path.join(_HERE, "..", "codegen_templates"),        # installed wheel
    os.path.join(_HERE, "..", "..", "codegen_templates"),  # source checkout
]


def template_dir() -> str:
    for path in _CANDIDATES:
        if os.path.isdir(path):
            return os.path.normpath(path)
    raise FileNotFoundError("staticgrad's codegen_templates folder is missing; looked in "
                            + ", ".join(os.path.normpath(p) for p in _CANDIDATES))


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir()),
                              keep_trailing_newline=True, trim_blocks=True,
                              lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                              autoescape=False)


def render_template(template: str, /, **values) -> str:
    return environment().get_template(template).render(**values)
