"""Whole numbers read from what a client sent: a page, a version, a held write's number, a budget, a length."""

# More digits than any number the hub reads holds (a 64-bit integer has 20 at most). Past 4,300 digits
# int() raises a ValueError (Python's guard against slow parsing), so a longer string of digits is refused
# before it is read, as any other text that is no number the hub takes.
MAX_DIGITS = 20


def plain_whole_number(text: str) -> int | None:
    """The number text spells in plain ASCII digits, at most MAX_DIGITS of them after any leading zeros; else None
    ("+1", " 1", "1_0", "2.5" and "²" are None, though int() takes the first three and isdigit() the last)."""
    digits = text.lstrip("0") if text.isascii() and text.isdigit() else None
    if digits is None or len(digits) > MAX_DIGITS:
        return None
    return int(digits or "0")
