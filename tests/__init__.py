"""staticgrad's tests. A package, with one subpackage per package folder it mirrors
(tests/ops/ for staticgrad/ops/...), so that two folders may hold test modules of one name and
test modules import shared tables and helpers by their path (`from tests.conftest import
lineno`)."""
