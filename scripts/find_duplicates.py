#!/usr/bin/env python3
"""Finds code written twice in host/: two places that share MIN or more consecutive lines.

A line counts after comments are removed and its white space is collapsed; blank lines, comment
lines and boilerplate (#include, #pragma, namespace lines, lone braces, access labels) do not count
and do not break a run. Each pair is printed once, as its longest run, with both places:

  host/a.cpp:10-17 and host/b.cpp:30-37 share 8 lines [host/a.cpp host/b.cpp 1a2b3c4d5e6f]

The bracketed key (the two files and a hash of the shared lines, no line numbers) is how a pair is
listed in the allowlist, so an edit elsewhere in either file does not unlist it. A pair in the list
passes; the check fails (exit 1) on any other pair and notes listed pairs that no longer occur.

  find_duplicates.py [--min N] [--allow FILE] ROOT
"""
import argparse
import hashlib
import os
import re
import sys
from collections import defaultdict

SUFFIXES = (".cpp", ".hpp", ".h", ".c", ".py")
BOILERPLATE = re.compile(
    r"^(#\s*(include|pragma|if|ifdef|ifndef|endif|else|elif|define\s+\w+$)\b.*"
    r"|(inline\s+)?namespace(\s+[\w:]+)?\s*\{"
    r"|[{}()\[\];,]+"
    r"|(public|private|protected):"
    r"|else|else\s*\{|\}\s*else\s*\{|break;|continue;|return;|default:"
    r"|import\s.*|from\s+\S+\s+import\s.*|pass|\"\"\"|''')$"
)


def strip_c_comments(text):
    """The text without // and /* */ comments, strings and characters kept, line breaks kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            if c == '"' and out and re.search(r"R$", out[-1]) and i + 1 < n:
                # A raw string R"delim( ... )delim": kept whole.
                m = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
                if m:
                    end = text.find(")" + m.group(1) + '"', i)
                    end = n if end < 0 else end + len(m.group(1)) + 2
                    out.append(text[i:end])
                    i = end
                    continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in "/\"'":
                j += 1
            if j == i:
                j = i + 1
            out.append(text[i:j])
            i = j
    return "".join(out)


def strip_py_comments(text):
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in text.split("\n"))


def significant_lines(path):
    """[(line number, normalised text)] of the lines that count."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    text = strip_py_comments(text) if path.endswith(".py") else strip_c_comments(text)
    lines = []
    for number, line in enumerate(text.split("\n"), 1):
        norm = " ".join(line.split())
        if norm and not BOILERPLATE.match(norm):
            lines.append((number, norm))
    return lines


def sources(root):
    for top in sorted(os.listdir(os.path.join(root, "host"))):
        base = os.path.join(root, "host", top)
        walk = os.walk(base) if os.path.isdir(base) else [(os.path.dirname(base), [], [top])]
        for folder, dirs, files in walk:
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, root), path


def find_pairs(root, minimum):
    files = {}
    windows = defaultdict(list)  # the hash of MIN lines -> [(file, index)]
    for rel, path in sources(root):
        lines = significant_lines(path)
        files[rel] = lines
        for i in range(len(lines) - minimum + 1):
            key = hash(tuple(text for _, text in lines[i : i + minimum]))
            windows[key].append((rel, i))
    # Matching windows of a pair of files, by diagonal (the offset between them).
    diagonals = defaultdict(set)
    for places in windows.values():
        if len(places) < 2 or len(places) > 50:  # more than 50 copies: a pattern, not a pair
            continue
        for a in range(len(places)):
            for b in range(a + 1, len(places)):
                (fa, ia), (fb, ib) = sorted((places[a], places[b]))
                if (fa, ia) == (fb, ib):
                    continue
                diagonals[(fa, fb, ib - ia)].add(ia)
    pairs = []
    for (fa, fb, offset), starts in diagonals.items():
        run_start = prev = None
        for i in sorted(starts) + [None]:
            if i is not None and prev is not None and i == prev + 1:
                prev = i
                continue
            if run_start is not None:
                count = prev - run_start + minimum
                # Within one file, a run that overlaps its own copy is a repeated line, not a pair.
                if fa != fb or offset >= count:
                    a = files[fa][run_start : run_start + count]
                    b = files[fb][run_start + offset : run_start + offset + count]
                    if [t for _, t in a] == [t for _, t in b]:
                        digest = hashlib.sha1("\n".join(t for _, t in a).encode()).hexdigest()[:12]
                        pairs.append((fa, a[0][0], a[-1][0], fb, b[0][0], b[-1][0], count, digest))
            run_start = prev = i
    return sorted(pairs)


def read_allowlist(path):
    allowed = {}
    if not path or not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 3)
            if len(parts) < 4:
                sys.exit(f"{path}:{number}: want FILE FILE HASH REASON, got: {line}")
            allowed[tuple(parts[:3])] = (number, parts[3])
    return allowed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root")
    parser.add_argument("--min", type=int, default=6, help="shared lines that make a pair (6)")
    parser.add_argument("--allow", help="the allowlist (FILE FILE HASH REASON per line)")
    args = parser.parse_args()
    allowed = read_allowlist(args.allow)
    used = set()
    status = 0
    allow_name = os.path.relpath(args.allow, args.root) if args.allow else "the allowlist"
    for fa, a0, a1, fb, b0, b1, count, digest in find_pairs(args.root, args.min):
        key = (fa, fb, digest)
        if key in allowed:
            used.add(key)
            continue
        print(f"{fa}:{a0}-{a1} and {fb}:{b0}-{b1} share {count} lines: make them one function or "
              f"table, or list the pair in {allow_name} with a reason [{fa} {fb} {digest}]",
              file=sys.stderr)
        status = 1
    for key, (number, _) in sorted(allowed.items(), key=lambda kv: kv[1][0]):
        if key not in used:
            print(f"note: {allow_name}:{number}: the pair {' '.join(key)} no longer occurs: "
                  "remove its line")
    return status


if __name__ == "__main__":
    sys.exit(main())
