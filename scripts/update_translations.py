"""Update ``i18n/geogpt_qgis_<lang>.ts`` from the ``tr("...")`` calls in ``geogpt_qgis/``.

pylupdate5 cannot be used: it files module-level ``tr()`` calls under the ``@default``
context, while ``geogpt_qgis.toolbelt.i18n.tr`` translates in the ``GeoGPT`` context.
This script reads every ``tr("literal")`` with ``ast`` and merges them into the ``.ts``:
existing translations are kept, new strings are added as unfinished, strings no longer
in the code are marked obsolete. ``lrelease`` then compiles the ``.qm`` (``make translations``).

    python scripts/update_translations.py [--check] [lang ...]   # default: every i18n/*.ts, else nb

``--check`` writes nothing and exits 1 when the ``.ts`` is not up to date, a translation
is missing, or a ``tr()`` argument is not a plain string literal.
"""

from __future__ import annotations

import argparse
import ast
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "geogpt_qgis"
I18N = REPO / "i18n"
CONTEXT = "GeoGPT"  # geogpt_qgis.toolbelt.i18n.CONTEXT
LANGUAGES = {"nb": "nb_NO"}


@dataclass
class Message:
    source: str
    locations: list[tuple[str, int]] = field(default_factory=list)
    translation: str = ""
    kind: str = "unfinished"  # "" (finished), "unfinished" or "obsolete"


def extract(package: Path = PACKAGE) -> tuple[dict[str, list[tuple[str, int]]], list[str]]:
    """Every ``tr()`` literal with its locations, and the ``tr()`` calls whose argument is not a literal."""
    found: dict[str, list[tuple[str, int]]] = {}
    problems: list[str] = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _is_tr(node.func)):
                continue
            argument = node.args[0] if len(node.args) == 1 and not node.keywords else None
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                found.setdefault(argument.value, []).append((relative, node.lineno))
            else:
                problems.append(f"{relative}:{node.lineno}: tr() needs one plain string literal")
    return found, problems


def _is_tr(func: ast.expr) -> bool:
    return isinstance(func, ast.Name) and func.id == "tr"


def read_ts(path: Path) -> dict[str, Message]:
    """The messages of the ``GeoGPT`` context in an existing ``.ts`` (empty when there is none)."""
    if not path.is_file():
        return {}
    messages: dict[str, Message] = {}
    root = ET.parse(path).getroot()  # noqa: S314 - our own file
    for context in root.iter("context"):
        if context.findtext("name") != CONTEXT:
            continue
        for element in context.iter("message"):
            translation = element.find("translation")
            source = element.findtext("source") or ""
            messages[source] = Message(
                source=source,
                translation=(translation.text or "") if translation is not None else "",
                kind=translation.get("type", "") if translation is not None else "unfinished",
            )
    return messages


def merge(found: dict[str, list[tuple[str, int]]], existing: dict[str, Message]) -> list[Message]:
    """Current strings in code order (kept translations), then obsolete ones that still hold a translation."""
    merged: list[Message] = []
    for source, locations in found.items():
        old = existing.get(source)
        message = Message(source, locations)
        if old is not None and old.translation:
            message.translation = old.translation
            message.kind = "unfinished" if old.kind == "unfinished" else ""
        merged.append(message)
    for source, old in existing.items():
        if source not in found and old.translation:
            merged.append(Message(source, [], old.translation, "obsolete"))
    return merged


def render(messages: list[Message], language: str) -> str:
    """The ``.ts`` XML, in the layout Qt Linguist writes."""
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        "<!DOCTYPE TS>",
        f'<TS version="2.1" language="{language}" sourcelanguage="en">',
        "<context>",
        f"    <name>{CONTEXT}</name>",
    ]
    for message in messages:
        lines.append("    <message>")
        lines.extend(f'        <location filename="../{file}" line="{line}"/>' for file, line in message.locations)
        lines.append(f"        <source>{_escape(message.source)}</source>")
        kind = f' type="{message.kind}"' if message.kind else ""
        lines.append(f"        <translation{kind}>{_escape(message.translation)}</translation>")
        lines.append("    </message>")
    lines += ["</context>", "</TS>", ""]
    return "\n".join(lines)


def _escape(text: str) -> str:
    return escape(text, {'"': "&quot;", "'": "&apos;"})


def ts_path(lang: str) -> Path:
    return I18N / f"geogpt_qgis_{lang}.ts"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("languages", nargs="*", help="language codes (default: every i18n/*.ts, else nb)")
    parser.add_argument("--check", action="store_true", help="write nothing; fail if anything is out of date")
    args = parser.parse_args(argv)
    shipped = sorted(p.stem.removeprefix("geogpt_qgis_") for p in I18N.glob("geogpt_qgis_*.ts"))
    languages = args.languages or shipped or ["nb"]
    found, problems = extract()
    for problem in problems:
        print(problem, file=sys.stderr)
    failed = bool(problems)
    for lang in languages:
        path = ts_path(lang)
        messages = merge(found, read_ts(path))
        text = render(messages, LANGUAGES.get(lang, lang))
        unfinished = [m.source for m in messages if m.kind != "obsolete" and (m.kind or not m.translation)]
        obsolete = sum(m.kind == "obsolete" for m in messages)
        print(f"{path.relative_to(REPO)}: {len(found)} strings, {len(unfinished)} unfinished, {obsolete} obsolete")
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                print(f"{path.relative_to(REPO)} is out of date: run make translations", file=sys.stderr)
                failed = True
            for source in unfinished:
                print(f"  untranslated: {source!r}", file=sys.stderr)
            failed = failed or bool(unfinished)
        else:
            path.write_text(text, encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
