"""One lookup for the tables that word a typed value by its code (findings, KV-tier notes, service notes, model
sources): an unknown code is an error that names it, the table and the codes it knows, never a silent blank."""

from __future__ import annotations


def worded(table: dict, code: str, what: str, where: str, facts) -> str:
    """``table[code](facts)``; ``what`` names the kind of code and ``where`` the table in the error."""
    try:
        words = table[code]
    except KeyError:
        raise ValueError(f"{what} {code!r} has no wording in {where} (known: {', '.join(sorted(table))})") from None
    return words(facts)


__all__ = ["worded"]
