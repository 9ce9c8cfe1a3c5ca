#!/usr/bin/env python3
"""Clang's thread-safety analysis over the files that use common/mutex.h.

Every source file of the project (tests left out) that includes common/mutex.h, or a
header of its own folder that does, is compiled again with clang++ -fsyntax-only
-Wthread-safety, with the flags the build gave it (compile_commands.json), and must
compile without a thread-safety warning. The check first proves itself: a snippet that
touches a guarded member without its mutex must fail it.

Usage: thread_safety_check.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

MUTEX_HEADER = '#include "common/mutex.h"'
CHECK_FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
               "-Wno-unknown-warning-option"]


def clang_args(command, clang):
    """The build's compile command as a clang syntax check: no output, no dependency
    file, no GCC precompiled header, no -Werror beyond the thread-safety warnings."""
    args = shlex.split(command)
    out = [clang]
    skip = False
    for i, arg in enumerate(args[1:], start=1):
        if skip:
            skip = False
            continue
        if arg in ("-o", "-MT", "-MF", "-MQ"):
            skip = True
            continue
        if arg == "-include" and args[i + 1].endswith((".hxx", ".h")) and "cmake_pch" in args[i + 1]:
            skip = True
            continue
        if arg in ("-c", "-MD", "-MMD", "-Werror", "-Winvalid-pch") or arg.startswith("-Werror="):
            continue
        if arg == "ccache" or arg.endswith("/ccache"):
            continue
        out.append(arg)
    return out + CHECK_FLAGS


def uses_mutex(path, source_dir):
    """Whether `path` includes common/mutex.h, itself or through a project header."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if MUTEX_HEADER in text:
        return True
    for header in re.findall(r'^#include "([^"]+\.h)"', text, re.M):
        full = os.path.join(source_dir, header)
        if os.path.exists(full):
            with open(full, encoding="utf-8", errors="replace") as f:
                if MUTEX_HEADER in f.read():
                    return True
    return False


def main():
    source_dir, build_dir = (os.path.abspath(p) for p in sys.argv[1:3])
    clang = shutil.which("clang++")
    if clang is None:
        print("thread_safety_check: clang++ is missing; ops/setup.sh installs it")
        return 1
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)

    # The proof: a guarded member touched without its mutex fails the check.
    template = next(e for e in entries if e["file"].endswith("coordinator/group_commit.cc"))
    with tempfile.TemporaryDirectory() as scratch:
        bad = os.path.join(scratch, "unguarded.cc")
        with open(bad, "w") as f:
            f.write(MUTEX_HEADER + "\n"
                    "namespace schedfarm {\n"
                    "class Counter {\n"
                    " public:\n"
                    "  void Add() { ++count_; }  // without mu_\n"
                    " private:\n"
                    "  Mutex mu_;\n"
                    "  int count_ SCHEDFARM_GUARDED_BY(mu_) = 0;\n"
                    "};\n"
                    "}  // namespace schedfarm\n")
        args = clang_args(template["command"], clang)
        args = [a for a in args if a != template["file"]] + [bad]
        proof = subprocess.run(args, cwd=template["directory"], capture_output=True, text=True)
        if proof.returncode == 0 or "thread-safety" not in proof.stderr:
            print("thread_safety_check: an unguarded write was not caught:\n" + proof.stderr)
            return 1
        print("proof: an unguarded write fails the check")

    checked = 0
    failures = []
    for entry in entries:
        path = entry["file"]
        relative = os.path.relpath(path, source_dir)
        if relative.startswith(("..", "tests" + os.sep, "build")) or not path.endswith(".cc"):
            continue
        if not uses_mutex(path, source_dir):
            continue
        result = subprocess.run(clang_args(entry["command"], clang), cwd=entry["directory"],
                                capture_output=True, text=True)
        checked += 1
        status = "ok" if result.returncode == 0 else "FAILED"
        print(f"{status}: {relative}")
        if result.returncode != 0:
            failures.append(relative + ":\n" + result.stderr)
    if checked == 0:
        print("thread_safety_check: no file uses common/mutex.h (is compile_commands.json stale?)")
        return 1
    for failure in failures:
        print(failure)
    print(f"{checked} files checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
