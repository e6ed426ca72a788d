"""A change between two texts as word runs kept, removed and added, for the dashboard's history.

The dashboard shows each change to a memory's value as one text in which the removed words are
struck out and the added ones highlighted, instead of two whole values side by side.
"""

import difflib
import re
from dataclasses import dataclass
from typing import Literal

# Words, runs of white space, and single other characters: a diff at this grain reads like an edit.
TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
# Beyond this many tokens on a side the diff shows the whole old text removed and the new one added:
# difflib's matching grows with the product of the two lengths.
DIFF_MAX_TOKENS = 4000
# A change to a value longer than this is folded behind a summary on the entry's page.
FOLD_CHARACTERS = 600

Operation = Literal["same", "removed", "added"]


@dataclass(frozen=True)
class Run:
    operation: Operation
    text: str


def text_diff(before: str, after: str) -> list[Run]:
    """The runs that turn before into after; joining the same and removed runs gives before, same and added after."""
    old, new = TOKEN.findall(before), TOKEN.findall(after)
    if len(old) > DIFF_MAX_TOKENS or len(new) > DIFF_MAX_TOKENS:
        return [run for run in (Run("removed", before), Run("added", after)) if run.text]
    runs: list[Run] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            runs.append(Run("same", "".join(old[old_start:old_end])))
            continue
        if old_end > old_start:
            runs.append(Run("removed", "".join(old[old_start:old_end])))
        if new_end > new_start:
            runs.append(Run("added", "".join(new[new_start:new_end])))
    return runs


def is_long(*texts: str | None) -> bool:
    """Whether a change between these texts is folded on the page."""
    return any(text is not None and len(text) > FOLD_CHARACTERS for text in texts)
