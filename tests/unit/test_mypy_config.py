"""The mypy configuration: strict where the logic lives, and a ratchet that can only relax named modules.

mypy applies ``strict = true`` in an override to every module (python/mypy#11401), so pyproject.toml lists
the per-module flags ``--strict`` turns on; these tests keep that list equal to the installed mypy's own (a
flag a new mypy adds to ``--strict`` fails here until it is listed) and keep the ratchet honest.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mypy.main import define_options
from mypy.options import PER_MODULE_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
STRICT_PACKAGES = ["geogpt_qgis.core.*", "geogpt_qgis.toolbelt.*", "geogpt_qgis.agent.*"]


def _mypy_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    return config


def _strict_flags() -> dict[str, bool]:
    """What ``mypy --strict`` sets, flag by flag (the installed mypy's own list)."""
    _parser, _names, assignments = define_options()
    return dict(assignments)


def _overrides() -> list[dict[str, Any]]:
    overrides: list[dict[str, Any]] = _mypy_config()["overrides"]
    return overrides


def _strict_override() -> dict[str, Any]:
    matching = [o for o in _overrides() if o["module"] == STRICT_PACKAGES]
    assert len(matching) == 1, f"one override makes {STRICT_PACKAGES} strict, found {len(matching)}"
    return matching[0]


def _ratchets() -> list[dict[str, Any]]:
    return [
        o
        for o in _overrides()
        if any(str(m).startswith("geogpt_qgis.") for m in o["module"]) and o["module"] != STRICT_PACKAGES
    ]


def test_the_strict_packages_get_every_per_module_flag_of_strict() -> None:
    wanted = {flag: value for flag, value in _strict_flags().items() if flag in PER_MODULE_OPTIONS}
    override = _strict_override()
    given = {flag: override.get(flag) for flag in wanted}
    assert given == wanted
    assert "strict" not in override  # it would make every module strict (python/mypy#11401)


def test_the_global_only_flags_of_strict_are_on_for_everything() -> None:
    config = _mypy_config()
    global_only = {flag: value for flag, value in _strict_flags().items() if flag not in PER_MODULE_OPTIONS}
    assert global_only, "mypy's --strict has global-only flags (warn_redundant_casts at least)"
    assert {flag: config.get(flag) for flag in global_only} == global_only
    assert config.get("warn_return_any") is True
    assert "strict" not in config


def test_the_ratchet_only_relaxes_strict_flags_for_named_modules_that_exist() -> None:
    strict = _strict_flags()
    # Empty since issue 32 typed its last modules; an entry added later must still pass these checks.
    for override in _ratchets():
        relaxed = {flag: value for flag, value in override.items() if flag != "module"}
        assert relaxed, f"{override['module']}: a ratchet entry relaxes at least one flag"
        for flag, value in relaxed.items():
            assert flag in strict, f"{override['module']}: {flag} is not one of --strict's flags"
            assert value == (not strict[flag]), f"{override['module']}: {flag} = {value} does not relax it"
        for module in override["module"]:
            parts = module.removesuffix(".*").split(".")
            package, file = ROOT.joinpath(*parts), ROOT.joinpath(*parts[:-1], parts[-1] + ".py")
            exists = package.is_dir() if module.endswith(".*") else file.is_file() or package.is_dir()
            assert exists, f"the ratchet names {module}, which no longer exists: remove it"
