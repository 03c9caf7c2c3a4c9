"""tests/ mirrors staticgrad/: a test module named after a package module lives in the folder
that mirrors the module's (tests/passes/test_fuse.py for staticgrad/passes/fuse.py), so moving
a module means moving its tests. Suites that cross modules (test_error_table.py, test_fuzz.py)
are named after no module and may live anywhere."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE, TESTS = ROOT / "staticgrad", ROOT / "tests"


def test_test_modules_mirror_the_package():
    homes: dict[str, set[Path]] = {}  # module name -> the package folders holding one so named
    for module in PACKAGE.rglob("*.py"):
        homes.setdefault(module.stem, set()).add(module.parent.relative_to(PACKAGE))
    misplaced = []
    for test in sorted(TESTS.rglob("test_*.py")):
        folder = test.parent.relative_to(TESTS)
        where = test.relative_to(ROOT)
        if folder != Path(".") and not (PACKAGE / folder).is_dir():
            misplaced.append(f"{where}: there is no staticgrad/{folder}/ for it to mirror")
        if not (test.parent / "__init__.py").is_file():
            misplaced.append(f"{where}: tests/{folder}/ needs an __init__.py (test modules of "
                             "one name in two folders are told apart by their package)")
        subject = test.stem.removeprefix("test_")
        if subject in homes and folder not in homes[subject]:
            wanted = " or ".join(f"{Path('tests', f, test.name)}" for f in sorted(homes[subject]))
            misplaced.append(f"{where} tests staticgrad module {subject!r}: move it to {wanted}")
    assert not misplaced, "\n".join(misplaced)
