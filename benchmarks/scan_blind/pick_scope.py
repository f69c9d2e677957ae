import os
import re
import sys

PAT = re.compile(r"cuda|mps|device|torch\.load|\.item\(\)|\.numpy\(\)|pin_memory|pickle")


def is_test(rel):
    parts = rel.split("/")
    b = parts[-1]
    return (
        b.startswith("test_")
        or b.endswith("_test.py")
        or b == "conftest.py"
        or any(p in ("test", "tests", "testing") for p in parts[:-1])
    )


def rank(root):
    rows = []
    for dp, dn, fn in os.walk(root):
        dn[:] = sorted(d for d in dn if not d.startswith("."))
        for f in fn:
            if not f.endswith(".py"):
                continue
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, root)
            if is_test(rel):
                continue
            with open(p, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
            n = sum(1 for line in lines if PAT.search(line))
            if n:
                rows.append((n, len(lines), rel))
    rows.sort(key=lambda r: (-r[0], r[2]))
    return rows


if __name__ == "__main__":
    for r in rank(sys.argv[1])[: int(sys.argv[2])]:
        print(*r)


def scope(root, max_files=8, max_lines=2500, max_file_lines=1000, min_hits=3):
    """Rank order; skip files over max_file_lines or under min_hits matching lines;
    stop at max_files or when the next eligible file would push the total over max_lines."""
    out, total = [], 0
    for n, ln, rel in rank(root):
        if ln > max_file_lines or n < min_hits:
            continue
        if total + ln > max_lines:
            break
        out.append((rel, n, ln))
        total += ln
        if len(out) == max_files:
            break
    return out, total
