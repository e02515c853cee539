"""The "no readers" report: documents a source offers to nobody.

Deny by default is right (a file without an ACL is readable by no one but admins), but
silent invisibility is not: ``sync`` and ``watch`` name such documents and say how to
give them readers, and ``ragline documents no-readers`` lists them from Postgres.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["NO_READERS", "no_readers_report"]

NO_READERS = "no_readers"  # the status such a document is reported with


def no_readers_report(
    document_ids: Sequence[str], *, root: Path, tenant: str, limit: int = 20
) -> list[str]:
    """Lines naming documents without ``acl_groups`` and the fix (empty: none)."""
    if not document_ids:
        return []
    n = len(document_ids)
    lines = [
        f"{NO_READERS}: {n} document{'s' if n != 1 else ''} with no acl_groups will be "
        "indexed but readable by nobody:"
    ]
    lines += [f"  {doc_id}" for doc_id in document_ids[:limit]]
    if n > limit:
        lines.append(f"  ... and {n - limit} more")
    lines += [
        f"  fix: put a _policy.yaml with 'acl_groups: [<group>]' in {root} (or the folder "
        "above the files), or run again with --default-groups <group>[,<group>...]",
        f"  list them later: ragline documents no-readers --tenant {tenant}",
    ]
    return lines
