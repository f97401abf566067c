"""docs/architecture.md names every module of the package, and only modules that exist.

A module is named by its path in backquotes (`s5ts/nn/_scan.py`); a package's
`__init__.py` by its folder (`s5ts/nn/`), or by its own path.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def modules() -> list[str]:
    return sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "s5ts").rglob("*.py"))


def named() -> set[str]:
    return set(re.findall(r"`(s5ts/[^`\s]*)`", ARCHITECTURE.read_text()))


def is_named(module: str, names: set[str]) -> bool:
    if module in names:
        return True
    if module.endswith("/__init__.py"):
        return module.removesuffix("__init__.py") in names
    return False


def test_the_package_has_modules():
    found = modules()
    assert "s5ts/__init__.py" in found and "s5ts/nn/_scan.py" in found, found


@pytest.mark.parametrize("module", modules())
def test_every_module_is_named_in_the_architecture_page(module):
    assert is_named(module, named()), (
        f"{module} is not named in docs/architecture.md: add it, in backquotes, with its one concept"
        + (" (a package by its folder)" if module.endswith("__init__.py") else "")
    )


def test_every_name_in_the_architecture_page_exists():
    stale = sorted(name for name in named() if not (ROOT / name).exists())
    assert not stale, f"docs/architecture.md names paths that do not exist: {stale}"


def test_the_check_sees_a_missing_module():
    names = named()
    assert not is_named("s5ts/nn/_not_a_module.py", names)
    assert not is_named("s5ts/not_a_package/__init__.py", names)
    assert is_named("s5ts/nn/__init__.py", names) and is_named("s5ts/nn/_scan.py", names)
