"""Operator names as a user types them on the command line.

A bare name stands for its overloads (`add` -> `add.Scalar`, `add.Tensor`, `add.out`, ...), and
a name that matches nothing gets the few known names closest to it, never the whole list.
Names may carry a namespace (`aten::add.Tensor`); suggestions keep the one that was typed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

_SUGGESTIONS = 6  # at most this many close names are offered


def overloads(name: str, known: Iterable[str]) -> list[str]:
    """The known names `name` stands for: `name + ".<overload>"`, and `name` itself if known.

    A name that already has an overload (`add.Tensor`) stands only for itself.
    """
    known = set(known)
    if "." in name.rpartition("::")[2]:
        return [name] if name in known else []
    prefix = name + "."
    return sorted(k for k in known if k == name or k.startswith(prefix))


def close_names(name: str, known: Iterable[str]) -> list[str]:
    """The known names most like `name`, best first (case is ignored).

    A bare name is compared with the bare names (`sofmtax` -> `softmax`, which then stands for
    its overloads); `add.Tensr` with the full names (`add.Tensor`). Names are compared within
    the namespace typed, or whole when no known name is in it.
    """
    namespace, sep, unqualified = name.rpartition("::")
    known = list(known)
    pool = [k.rpartition("::")[2] for k in known if k.rpartition("::")[0] == namespace]
    if not pool:
        namespace, sep, unqualified, pool = "", "", name, known
    if "." not in unqualified:
        pool = [k.split(".", 1)[0] for k in pool]
    by_lower: dict[str, str] = {}
    for candidate in sorted(pool):
        by_lower.setdefault(candidate.lower(), candidate)
    matches = difflib.get_close_matches(unqualified.lower(), by_lower, n=_SUGGESTIONS)
    return [f"{namespace}{sep}{by_lower[m]}" for m in matches]
