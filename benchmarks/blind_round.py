"""One round of blind sets for issue 20, from the names nobody used to the committed scoring.

    python benchmarks/blind_round.py used > used.txt
    python benchmarks/blind_round.py briefs 319-326 poolA.txt poolB.txt --out DIR
    python benchmarks/blind_round.py check 319-326
    python benchmarks/blind_round.py score HEAD PREV 319-326 --note "what HEAD is"
    python benchmarks/blind_round.py figures 99-326

The steps between are helpers' (people who never see the scan's output), each briefed by a
file of benchmarks/blind_round/: `pool.md` asks for candidate repositories that no set used
(`used` lists them: every `corpus.json` repository and every candidate a `method.md` table
named), `brief.md` asks one labeller to take up to eight of ten candidates into one set and
label it blind, set 318 as the template. `briefs` deals the pooled candidates out, ten a set,
alternating between pools, and names each set's neighbours (excluded for it).

`check` reads each set's labels before anything is scanned: the schema, the " (lookalike)"
suffix against must_flag, the files in scope, and the kinds that are neither a rule id nor
in `scan_blind.KIND_RULES` (map them there, and commit, before scoring).

`score` is the one blind scoring: HEAD's `torchdoctor/` (git archive, first on PYTHONPATH)
scans each set as `scan_blind.py --false` does, writing its unlabelled.csv; then, on the same
labels, the rules' own reasoning (HEAD with the calibration table emptied), `--portable`, and
PREV's torchdoctor (the last round's head), and it writes each set's results-blind.md.
Trees are read from `<corpus-root>/scan_corpus<N>`, where the labellers exported them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).with_name("blind_round")
sys.path.insert(0, str(ROOT / "benchmarks"))

import scan_blind as sb  # noqa: E402
import scan_calibration as sc  # noqa: E402

# The template's candidate table rows: `| 3 | owner/name | domain |`
TABLE_ROW = re.compile(r"^\|\s*\d+\s*\|\s*([\w.-]+/[\w.-]+)\s*\|", re.M)
# Named in the first set's method.md as the earlier non-blind corpus
NON_BLIND = [
    "huggingface/diffusers",
    "pytorch/examples",
    "facebookresearch/fairseq",
    "Lightning-AI/lightning",
    "karpathy/nanoGPT",
    "huggingface/pytorch-image-models",
    "facebookresearch/detectron2",
]
MACHINES = ("CPU-only", "MPS", "non-CUDA", "any")
# candidates a labeller may try: eight to take, two to spare (about one in four candidates
# of sets 319-326 had no snapshot to fetch: --per 12 then)
PER_SET = 10


def set_numbers() -> list[int]:
    found = (re.fullmatch(r"scan_blind(\d+)", p.name) for p in (ROOT / "benchmarks").iterdir())
    return sorted(int(m.group(1)) for m in found if m)


def used() -> list[str]:
    """Every repository a set took or tried, and the non-blind corpus."""
    names = set(NON_BLIND)
    for n in [1, *set_numbers()]:
        here = sc.set_dir(n)
        corpus = here / "corpus.json"
        if corpus.is_file():
            names |= {r["repo"] for r in json.loads(corpus.read_text())["repos"]}
        method = here / "method.md"
        if method.is_file():
            names |= set(TABLE_ROW.findall(method.read_text(encoding="utf-8")))
    return sorted(names, key=str.lower)


def pooled(paths: list[Path]) -> list[tuple[str, str]]:
    """(owner/name, domain) of each pool file's `owner/name<TAB>domain` lines, first seen kept,
    alternating between the pools so that each set mixes them."""
    pools = []
    for path in paths:
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            repo, _, domain = line.strip().partition("\t")
            if re.fullmatch(r"[\w.-]+/[\w.-]+", repo.strip()):
                rows.append((repo.strip(), domain.strip() or "-"))
        pools.append(rows)
    out, seen = [], {name.lower() for name in used()}
    for i in range(max(map(len, pools), default=0)):
        for rows in pools:
            if i < len(rows) and rows[i][0].lower() not in seen:
                seen.add(rows[i][0].lower())
                out.append(rows[i])
    return out


def briefs(sets: list[int], pools: list[Path], out: Path, per: int = PER_SET) -> None:
    candidates = pooled(pools)
    if len(candidates) < per * len(sets):
        sys.exit(f"{len(candidates)} new candidates: {per * len(sets)} needed")
    dealt = {n: candidates[i * per : (i + 1) * per] for i, n in enumerate(sets)}
    template = (HERE / "brief.md").read_text(encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    for n, mine in dealt.items():
        rows = ["| # | repo | domain |", "|---|---|---|"]
        rows += [f"| {i} | {repo} | {domain} |" for i, (repo, domain) in enumerate(mine, 1)]
        others = [repo for m, theirs in dealt.items() if m != n for repo, _ in theirs]
        text = (
            template.replace("{N}", str(n))
            .replace("{PREV}", str(sets[0] - 1))
            .replace("{TABLE}", "\n".join(rows))
            .replace("{PARALLEL}", ", ".join(others))
        )
        (out / f"brief{n}.md").write_text(text, encoding="utf-8")
        print(out / f"brief{n}.md")


def problems(row: dict[str, str], scope: set[tuple[str, str]]) -> list[str]:
    if any(not (row.get(k) or "").strip() for k in ("repo", "file", "line", "kind")):
        return ["a cell is missing"]
    wrong = []
    if row["must_flag"] not in ("yes", "no"):
        wrong.append("must_flag")
    if (row["must_flag"] == "no") != row["kind"].endswith(" (lookalike)"):
        wrong.append("lookalike suffix")
    if row["severity"] not in sb.SEVERITIES:
        wrong.append("severity")
    if row["machine"] not in MACHINES:
        wrong.append("machine")
    if (row["repo"], row["file"]) not in scope:
        wrong.append("file not in scope")
    if not row["line"].isdigit():
        wrong.append("line")
    return wrong


def check_set(here: Path) -> tuple[list[str], list[str], str]:
    """One set's bad rows, its kinds that no rule points at (scan_blind.py's reading of a
    kind: a rule id first, else the name before " ("), and a line of counts."""
    corpus = json.loads((here / "corpus.json").read_text(encoding="utf-8"))
    scope = {(r["repo"], f) for r in corpus["repos"] for f in r["files_in_scope"]}
    with open(here / "labels.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    bad = [
        f"{row.get('repo')} {row.get('file')}:{row.get('line')} {', '.join(wrong)}"
        for row in rows
        if (wrong := problems(row, scope))
    ]
    kinds = [(row.get("kind") or "").strip() for row in rows]
    unknown = [
        kind.split(" (")[0]
        for kind in kinds
        if kind
        and not sb.RULE_ID.fullmatch(kind.split()[0])
        and kind.split(" (")[0] not in sb.KIND_RULES
    ]
    yes = sum(row["must_flag"] == "yes" for row in rows)
    return bad, unknown, f"{len(corpus['repos'])} repositories, {len(rows)} rows, {yes} must-flag"


def check(sets: list[int]) -> int:
    """Print each set's counts, each bad row, and the kinds to map; 1 when anything is wrong."""
    wrong = False
    for n in sets:
        if not (sc.set_dir(n) / "labels.csv").is_file():
            print(f"set {n}: no labels.csv (not labelled, or not merged yet)")
            wrong = True
            continue
        bad, unknown, counts = check_set(sc.set_dir(n))
        print(f"set {n}: {counts}")
        for line in bad:
            print(f"set {n}: {line}")
        for kind in sorted(set(unknown)):
            print(f"set {n}: kind to map in KIND_RULES: {kind}")
        wrong = wrong or bool(bad or unknown)
    return 1 if wrong else 0


def scan_blind(code: Path, n: int, corpus_root: Path, *extra: str) -> str:
    """scan_blind.py's output for set n with the torchdoctor exported under `code`."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "scan_blind.py"), "--set", str(sc.set_dir(n))]
    cmd += ["--corpus-root", str(corpus_root / f"scan_corpus{n}"), *extra]
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        sys.exit(f"set {n}: scan_blind.py failed: {proc.stderr[-2000:]}")
    return proc.stdout.rstrip()


def default_figures(output: str) -> str:
    """Precision and crash(+security) recall of the default output, in one phrase."""
    default = output.split("### low output")[0]

    def figure(what: str) -> str:
        found = re.search(rf"^- {re.escape(what)}: (.*)$", default, re.M)
        return found.group(1) if found else "?"

    return (
        f"precision {figure('precision on labelled lines (blind)')}, crash+security recall "
        f"{figure('recall, crash+security')}, crash {figure('recall, crash')}"
    )


def ordinal(n: int) -> str:
    """301 -> three-hundred-and-first: the titles of the earlier results."""
    ones = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"]
    teens = "tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth"
    teens += " eighteenth nineteenth"
    tens = ["-", "-", "twent", "thirt", "fort", "fift", "sixt", "sevent", "eight", "ninet"]
    hundreds, rest = divmod(n, 100)
    if rest < 10:
        tail = ones[rest - 1] if rest else ""
    elif rest < 20:
        tail = teens.split()[rest - 10]
    else:
        ten, one = divmod(rest, 10)
        tail = f"{tens[ten]}y-{ones[one - 1]}" if one else f"{tens[ten]}ieth"
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    head = {0: "", 1: "hundred"}.get(hundreds, f"{words[hundreds - 1]}-hundred")
    if not head:
        return tail
    return f"{head}-and-{tail}" if tail else f"{head}th"


RESULTS = """# Scan on the {ordinal} blind corpus: the one blind scoring

Run once, on {head} ({note}), with:

```
python benchmarks/scan_blind.py --set benchmarks/scan_blind{n} --corpus-root {root} --false
```

The output, unedited:

{output}

## Beside it, on the same labels (after the run above, nothing changed in between)

- The rules' own reasoning, with the calibration table emptied (`torchdoctor/` exported
  from {head}, `MEASURED = {{}}`, through `PYTHONPATH`, `--no-write`): {empty}.
- `--portable` (`scan_blind.py --portable --no-write`, {head}'s `torchdoctor/` through
  `PYTHONPATH`): {portable}.
- The last round's head ({prev}'s `torchdoctor/` through `PYTHONPATH`, `--no-write`):
  {previous}.
"""


def score(head: str, prev: str, sets: list[int], corpus_root: Path, note: str) -> None:
    head, prev = short(head), short(prev)
    with tempfile.TemporaryDirectory() as tmp:
        table, empty = sc.export(head, Path(tmp), empty=False), sc.export(head, Path(tmp))
        before = sc.export(prev, Path(tmp), empty=False)
        for n in sets:  # the blind scoring of every set first: nothing is looked at between
            (sc.set_dir(n) / "scored.tmp").write_text(
                scan_blind(table, n, corpus_root, "--false"), encoding="utf-8"
            )
        for n in sets:
            beside = {
                "empty": scan_blind(empty, n, corpus_root, "--no-write"),
                "portable": scan_blind(table, n, corpus_root, "--no-write", "--portable"),
                "previous": scan_blind(before, n, corpus_root, "--no-write"),
            }
            scored = sc.set_dir(n) / "scored.tmp"
            output = scored.read_text(encoding="utf-8")
            text = RESULTS.format(
                ordinal=ordinal(n),
                head=head,
                prev=prev,
                note=note,
                n=n,
                root=corpus_root / f"scan_corpus{n}",
                output=output,
                **{k: default_figures(v) for k, v in beside.items()},
            )
            write_atomic(sc.set_dir(n) / "results-blind.md", text)
            scored.unlink()
            print(f"set {n}: {default_figures(output)}")


FIGURES = {
    "precision": "precision on labelled lines (blind)",
    "crash+security": "recall, crash+security",
    "security": "recall, security",
    "crash": "recall, crash",
}


def figures(sets: list[int]) -> dict[str, tuple[int, int]]:
    """The default output's figures pooled over the sets' one blind scoring (their
    results-blind.md as committed): (found, out of) for each of FIGURES."""
    out = dict.fromkeys(FIGURES, (0, 0))
    for n in sets:
        results = sc.set_dir(n) / "results-blind.md"
        if not results.is_file():
            continue
        default = results.read_text(encoding="utf-8").split("### low output")[0]
        for key, line in FIGURES.items():
            found = re.search(rf"^- {re.escape(line)}: .*?\((\d+)/(\d+)\)", default, re.M)
            if found:
                had = out[key]
                out[key] = (had[0] + int(found.group(1)), had[1] + int(found.group(2)))
    return out


def short(commit: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", commit],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"not a commit: {commit}")
    return proc.stdout.strip()


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    sub.add_parser("used", help="the repositories no new set may take")
    p = sub.add_parser("briefs", help="deal pooled candidates into labellers' briefs")
    p.add_argument("sets", type=sc.span)
    p.add_argument("pools", type=Path, nargs="+")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--per", type=int, default=PER_SET, help="candidates a set (more where snapshots fail)"
    )
    p = sub.add_parser("check", help="the labels' schema and kinds, before any scan")
    p.add_argument("sets", type=sc.span)
    p = sub.add_parser("figures", help="the default output's figures pooled over sets")
    p.add_argument("sets", type=sc.span)
    p = sub.add_parser("score", help="the one blind scoring, and beside it")
    p.add_argument("head")
    p.add_argument("prev")
    p.add_argument("sets", type=sc.span)
    p.add_argument("--note", required=True, help="what the scoring commit holds")
    p.add_argument("--corpus-root", type=Path, default=Path("/work/research"))
    args = ap.parse_args()
    if args.step == "used":
        print("\n".join(used()))
    elif args.step == "briefs":
        briefs(args.sets, args.pools, args.out, args.per)
    elif args.step == "check":
        sys.exit(check(args.sets))
    elif args.step == "figures":
        for key, (num, den) in figures(args.sets).items():
            print(f"{key}: {num / den:.2%} ({num}/{den})" if den else f"{key}: –")
    else:
        score(args.head, args.prev, args.sets, args.corpus_root, args.note)


if __name__ == "__main__":
    main()
