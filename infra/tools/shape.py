#!/usr/bin/env python3
"""Figures for the code's shape, measured the same way before and after a change.

Prints: Rust source files over 400 lines, the longest functions (brace-matched
from each `fn` line, comments and strings are not parsed: close enough for a
trend), and the lines of hand-written DynamoDB attribute mapping in the store
(`AttributeValue::` constructions, `get_s`/`get_n`/`need_*` getters and
`item.insert` lines). Run from the repository root: `python3 infra/tools/shape.py`.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
SKIP = {"target", ".venv", ".git", ".aws-sam"}


def rust_files():
    for p in sorted(ROOT.rglob("*.rs")):
        if not SKIP.intersection(p.relative_to(ROOT).parts):
            yield p


STRINGS = re.compile(r'r#"[^"]*"#|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'')


def functions(path):
    lines = path.read_text().splitlines()
    fn = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?fn\s+(\w+)")
    i = 0
    while i < len(lines):
        m = fn.match(lines[i])
        if not m:
            i += 1
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            text = STRINGS.sub('""', lines[j]).split("//")[0]
            if not started and ";" in text and "{" not in text:
                break  # a declaration without a body
            depth += text.count("{") - text.count("}")
            started = started or "{" in text
            if started and depth <= 0:
                break
            j += 1
        if started:
            yield m.group(5), i + 1, j - i + 1
        i += 1


def main():
    over = []
    fns = []
    mapping = 0
    getter = re.compile(r"AttributeValue::|\b(get_s|get_n|get_bool|need_s|need_n|get_ss|get_l)\(|item\.insert\(")
    for p in rust_files():
        rel = p.relative_to(ROOT)
        n = len(p.read_text().splitlines())
        if n > 400:
            over.append((n, str(rel)))
        for name, line, length in functions(p):
            fns.append((length, f"{rel}:{line} {name}"))
        if rel.parts[:2] == ("shared", "store") and "tests" not in rel.parts:
            mapping += sum(1 for l in p.read_text().splitlines() if getter.search(l))
    over.sort(reverse=True)
    fns.sort(reverse=True)
    print(f"source files over 400 lines: {len(over)}")
    for n, name in over:
        print(f"  {n:5} {name}")
    print(f"functions over 80 lines: {sum(1 for l, _ in fns if l > 80)}; longest:")
    for length, name in fns[:8]:
        print(f"  {length:5} {name}")
    print(f"store attribute-mapping lines: {mapping}")


main()
