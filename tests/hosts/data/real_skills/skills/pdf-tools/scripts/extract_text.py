#!/usr/bin/env python3
"""Print the text of each page of a PDF (a stand-in: reads a .txt sidecar when present)."""

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: extract_text.py FILE.pdf", file=sys.stderr)
        return 2
    sidecar = Path(argv[1]).with_suffix(".txt")
    if not sidecar.is_file():
        print(f"no text layer for {argv[1]}", file=sys.stderr)
        return 1
    for number, page in enumerate(sidecar.read_text().split("\f"), start=1):
        print(f"--- page {number} ---")
        print(page.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
