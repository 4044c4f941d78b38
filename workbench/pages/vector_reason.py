"""Why searches take the vector path they take, in the interface language.

index/vector_path.py writes the reason in English, one sentence for /health, the CLI and
this page alike. The status page says it again through the catalogue: each sentence that
`vector_path_plan` writes is recognised here by its pattern, its numbers kept, and a sentence
this module does not know is shown as written (never dropped). Back-quoted commands become code.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from index.vector_path import FULL_PRECISION, REMEASURE
from index.vector_recall import STALE_SHARE

# The recall measurement as vector_path_plan writes it.
_MEASURED = (r"recall@(?P<k>\d+) (?P<recall>[\d.]+) (?P<sign>[≥<]) target (?P<target>[\d.]+) "
             r"at ef_search (?P<ef>\d+)")
_TUNED = re.compile(r" \(tuned for target (?P<tuned>[\d.]+): " + re.escape(REMEASURE) + r"\)$")
_STALE = (f"; measured when the index held over {STALE_SHARE:.0%} more or fewer vectors: "
          f"{REMEASURE}")
_CODE = re.compile(r"`([^`]+)`")


def _measured(found: dict[str, str]) -> str:
    if found["sign"] == "≥":
        return gettext("recall@%(k)s %(recall)s reaches the target %(target)s at ef_search "
                       "%(ef)s") % found
    return gettext("recall@%(k)s %(recall)s stays below the target %(target)s even at "
                   "ef_search %(ef)s") % found


# Each sentence vector_path_plan writes (less the notes it may append), and what it says here.
_SENTENCES: tuple[tuple[re.Pattern[str], Callable[[dict[str, str]], str]], ...] = (
    (re.compile(r"RAG_VECTOR_INDEX=exact"),
     lambda found: gettext("RAG_VECTOR_INDEX=exact: every search compares all the vectors.")),
    (re.compile(r"RAG_VECTOR_INDEX=hnsw but there is no HNSW index for the current embedding "
                r"model; build it with `rag db index`"),
     lambda found: gettext("RAG_VECTOR_INDEX=hnsw, but the current embedding model has no "
                           "HNSW index: build it with `rag db index`.")),
    (re.compile(r"no HNSW index for the current embedding model"),
     lambda found: gettext("The current embedding model has no HNSW index.")),
    (re.compile(r"RAG_VECTOR_INDEX=hnsw; recall@(?P<k>\d+) not measured yet \(`rag db index` "
                r"measures it\), so HNSW_EF_SEARCH=(?P<ef>\d+)"),
     lambda found: gettext("RAG_VECTOR_INDEX=hnsw; its recall@%(k)s is not measured yet "
                           "(`rag db index` measures it), so searches use HNSW_EF_SEARCH="
                           "%(ef)s.") % found),
    (re.compile(r"the HNSW index holds fewer than RAG_HNSW_MIN_CHUNKS \((?P<min>\d+)\) "
                r"vectors"),
     lambda found: gettext("The HNSW index holds fewer than RAG_HNSW_MIN_CHUNKS (%(min)s) "
                           "vectors.") % found),
    (re.compile(r"the HNSW index's recall@(?P<k>\d+) is not measured yet; `rag db index` "
                r"measures it"),
     lambda found: gettext("The HNSW index's recall@%(k)s is not measured yet; `rag db index` "
                           "measures it.") % found),
    (re.compile(r"RAG_VECTOR_INDEX=hnsw(?:; |, although )" + _MEASURED),
     lambda found: gettext("RAG_VECTOR_INDEX=hnsw; %(measured)s.")
     % {"measured": _measured(found)}),
    (re.compile(r"HNSW " + _MEASURED),
     lambda found: gettext("HNSW: %(measured)s.") % {"measured": _measured(found)}),
)


def vector_reason_shown(reason: str) -> SafeString:
    """`reason` (a VectorPath's) in the interface language, escaped, commands as code."""
    return _with_code(_translated(reason) or reason)


def _translated(reason: str) -> str | None:
    notes = []
    if reason.endswith(FULL_PRECISION):
        reason = reason.removesuffix(FULL_PRECISION)
        notes.append(gettext("The index is on full-precision vectors (built by an earlier "
                             "release): `rag db index` rebuilds it on half-precision ones, "
                             "about 5 times smaller."))
    if reason.endswith(_STALE):
        reason = reason.removesuffix(_STALE)
        notes.insert(0, gettext("It was measured when the index held over %(share)s more or "
                                "fewer vectors: `rag db index --status` measures again.")
                     % {"share": f"{STALE_SHARE:.0%}"})
    tuned = _TUNED.search(reason)
    if tuned:
        reason = reason[:tuned.start()]
        notes.insert(0, gettext("It was tuned for the target %(tuned)s: `rag db index "
                                "--status` measures again.") % tuned.groupdict())
    for pattern, said in _SENTENCES:
        found = pattern.fullmatch(reason)
        if found:
            return " ".join([said(found.groupdict()), *notes])
    return None


def _with_code(text: str) -> SafeString:
    return mark_safe(_CODE.sub(r"<code>\1</code>", str(escape(text))))
