#!/usr/bin/env python3
"""tests/stubs.py — the exported functions of our libraries that are stubs.

A stub is a function exported from verbs/ or rdmacm/ (SOFV_EXPORT,
SOFCM_EXPORT, directly or through a macro such as rsocket.c's STUB) whose
body does nothing but fail: it names ENOSYS or EOPNOTSUPP and holds no
statement besides `(void)arg;`, `errno = E...;` and a `return`. A function
that fails only in some cases (an `if`) is not one, nor a no-op without an
error (ibv_unimport_pd).

Prints "LIBRARY SYMBOL ERRNO FILE" lines, sorted, for tests/symbols.sh,
which compares them with tests/stubs.txt: a stub that is implemented, or a
new one, changes the list, and the check fails until stubs.txt says so.
--all: every exported definition read, ERRNO "-" when it is no stub
(symbols.sh checks that each symbol the library exports was read, so a
stub written in a form this reader misses cannot pass unseen).

Usage: tests/stubs.py [--all] [REPO-ROOT]
"""
import os
import re
import sys

LIBS = {
    "verbs": ("libibverbs.so.1", "SOFV_EXPORT"),
    "rdmacm": ("librdmacm.so.1", "SOFCM_EXPORT"),
    "umad": ("libibumad.so.3", "SOFU_EXPORT"),
}
ERRNO = re.compile(r"\b(ENOSYS|EOPNOTSUPP)\b")
# the statements a stub may hold
TRIVIAL = re.compile(
    r"^(\(void\)\s*\w+|errno\s*=\s*E\w+|return(\s*\(\w+\))?\s*"
    r"(E\w+|-\s*1|NULL|false|0|-\s*E\w+|\w+\(\s*E\w+\s*\))?)$"
)


def strip_comments(text):
    """the source without comments and attributes"""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", text)


def is_stub(body):
    """body: the text between a function's braces; its errno when a stub"""
    if not ERRNO.search(body):
        return None
    stmts = [s.strip() for s in body.split(";") if s.strip()]
    if not stmts or not all(TRIVIAL.match(s) for s in stmts):
        return None
    return ERRNO.search(body).group(1)


def body_at(text, i):
    """the text inside the braces that open at text[i] == '{'"""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return ""


def scan(path, export):
    text = strip_comments(open(path, encoding="utf-8").read())
    found = {}
    # macros that define a stub: #define M(params) EXPORT ret name(...) { body }
    joined = text.replace("\\\n", " ")
    for m in re.finditer(r"^#define\s+(\w+)\(([^)]*)\)(.*)$", joined, flags=re.M):
        mname, params, mbody = m.group(1), [p.strip() for p in m.group(2).split(",")], m.group(3)
        d = re.search(export + r"\b[^{;]*?\b(\w+)\s*\([^{;]*\)\s*\{", mbody)
        if not d or d.group(1) not in params:
            continue
        err = is_stub(body_at(mbody, d.end() - 1)) or "-"
        k = params.index(d.group(1))
        for use in re.finditer(r"^\s*" + mname + r"\s*\(([^;{]*?)\)\s*$", text, flags=re.M):
            args = [a.strip() for a in use.group(1).split(",")]
            if len(args) > k and re.fullmatch(r"\w+", args[k]):
                found[args[k]] = err
    # plain definitions: EXPORT ret name(args) { body }
    for d in re.finditer(r"^" + export + r"\b[^{;#]*?\b(\w+)\s*\([^{;#]*\)\s*\{", text, flags=re.M):
        found[d.group(1)] = is_stub(body_at(text, d.end() - 1)) or "-"
    return found


def main():
    args = sys.argv[1:]
    every = "--all" in args
    args = [a for a in args if a != "--all"]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    rows = []
    for folder, (lib, export) in LIBS.items():
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                path = os.path.join(dirpath, f)
                for name, err in scan(path, export).items():
                    if every or err != "-":
                        rows.append(f"{lib} {name} {err} {os.path.relpath(path, root)}")
    for r in sorted(rows):
        print(r)


if __name__ == "__main__":
    main()
