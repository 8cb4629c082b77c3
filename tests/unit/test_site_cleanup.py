"""After pip: protected packages leave the private folder; duplicates leave only when QGIS's copy fits."""

from __future__ import annotations

from pathlib import Path

from geogpt_qgis.toolbelt.site_cleanup import clean, loaded_modules_of, plan_cleanup, protected_left, read_dists

PROTECTED = ["numpy", "GDAL", "PyQt5"]
# QGIS's Python (Debian 12 versions): requests 2.28 wants urllib3 < 1.27.
BASE = {
    "numpy": ("1.24.2", []),
    "requests": ("2.28.1", ["urllib3<1.27,>=1.21.1", "idna<4,>=2.5"]),
    "urllib3": ("1.26.12", []),
    "idna": ("3.3", []),
    "packaging": ("23.0", []),
}


def _dist(site: Path, name: str, version: str, requires: list[str], files: dict[str, str] | None = None) -> None:
    """A distribution the way pip --target leaves it: files, and a dist-info with METADATA and RECORD."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    files = files if files is not None else {f"{name}/__init__.py": ""}
    record = []
    for relative, text in files.items():
        path = site / relative
        if ".." not in Path(relative).parts:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        record.append(f"{relative},,")
    record += [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


def _base(root: Path) -> Path:
    site = root / "dist-packages"
    for name, (version, requires) in BASE.items():
        _dist(site, name, version, requires)
    return site


def _target(root: Path, app_requires: list[str]) -> Path:
    """What pip --target installs for an app that needs requests, packaging >= 23.2 and numpy."""
    site = root / "python-packages"
    numpy_files = {
        "numpy/__init__.py": "raise ImportError('a copy of numpy that shadows QGIS')",
        "numpy/core/multiarray.py": "",
        "numpy.libs/libopenblas.so": "",
        "../../bin/f2py": "",
    }
    _dist(site, "numpy", "1.24.2", [], numpy_files)
    (site / "bin").mkdir()
    (site / "bin" / "f2py").write_text("#!python")
    _dist(site, "requests", "2.32.3", ["urllib3<3,>=1.21.1", "idna<4,>=2.5"])
    _dist(site, "urllib3", "2.2.1", [])
    _dist(site, "idna", "3.7", [])
    _dist(site, "packaging", "24.0", [])
    _dist(site, "geoapp", "1.0", app_requires)
    return site


def _plan(tmp_path: Path, app_requires: list[str]):
    target = read_dists([str(_target(tmp_path, app_requires))])
    base = read_dists([str(_base(tmp_path))])
    return plan_cleanup(target, base, PROTECTED, ["geoapp>=1"])


def test_protected_always_go_and_fitting_duplicates_go(tmp_path):
    plan = _plan(tmp_path, ["requests>=2", "packaging>=23.2", "idna>=3", "numpy>=1.21"])
    assert plan.removed_protected == ["numpy"]
    # QGIS's requests 2.28, urllib3 1.26 and idna 3.3 fit; its packaging 23.0 is too old.
    assert plan.deduplicated == ["idna", "requests", "urllib3"]
    assert plan.kept == ["geoapp", "packaging"]
    assert plan.shadowing == ["packaging"]


def test_a_too_old_dependency_brings_back_the_copies_that_need_the_new_one(tmp_path):
    """geoapp needs urllib3 2: QGIS's requests 2.28 cannot run with it, so the folder's requests stays too."""
    plan = _plan(tmp_path, ["requests>=2", "urllib3>=2", "idna>=3"])
    assert plan.removed_protected == ["numpy"]
    assert plan.kept == ["geoapp", "requests", "urllib3"]
    assert plan.shadowing == ["requests", "urllib3"]
    assert plan.deduplicated == ["idna", "packaging"]


def test_markers_and_extras_decide_which_requirements_count(tmp_path):
    plan = _plan(
        tmp_path,
        ["requests>=2", "packaging>=99; python_version < '3'", 'urllib3>=2; extra == "fast"', "idna>=3"],
    )
    assert plan.deduplicated == ["idna", "packaging", "requests", "urllib3"]
    assert plan.kept == ["geoapp"]


def test_clean_deletes_the_files_and_nothing_protected_is_left(tmp_path):
    target = _target(tmp_path, ["requests>=2", "packaging>=23.2", "numpy>=1.21"])
    base = _base(tmp_path)
    result = clean(target, [str(base)], PROTECTED, ["geoapp"])
    assert result.removed_protected == ["numpy"]
    names = sorted(p.name for p in target.iterdir())
    assert names == ["geoapp", "geoapp-1.0.dist-info", "packaging", "packaging-24.0.dist-info"]
    assert not (target / "bin" / "f2py").exists()  # the script pip recorded as ../../bin/f2py
    assert protected_left(target, PROTECTED) == []
    assert (base / "numpy" / "__init__.py").is_file()  # QGIS's copy untouched


def test_a_namespace_folder_shared_with_a_kept_distribution_stays(tmp_path):
    site = tmp_path / "site"
    _dist(site, "numpy", "1.0", [], {"shared/numpy_part.py": "", "numpy/__init__.py": ""})
    _dist(site, "keeper", "1.0", [], {"shared/keeper_part.py": ""})
    clean(site, [], ["numpy"], [])
    assert (site / "shared" / "keeper_part.py").is_file()
    assert not (site / "shared" / "numpy_part.py").exists()
    assert not (site / "numpy").exists()


def test_modules_already_imported_need_a_restart(tmp_path):
    site = tmp_path / "site"
    _dist(site, "json-lookalike", "9.0", [], {"json/__init__.py": ""})
    _dist(site, "fresh", "1.0", [], {"geogpt_never_imported_mod.py": ""})
    assert loaded_modules_of(site, ["json-lookalike", "fresh"]) == ["json-lookalike"]
