"""Basic descriptive statistics."""

from collections import Counter


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    values = list(values)
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values):
    """Middle value of a non-empty sequence (mean of the two middle values when even)."""
    values = list(values)
    if not values:
        raise ValueError("median() of an empty sequence")
    mid = len(values) // 2
    if len(values) % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2


def mode(values):
    """Most common value; the smallest one on a tie."""
    counts = Counter(values)
    if not counts:
        raise ValueError("mode() of an empty sequence")
    best = max(counts.values())
    return min(v for v, c in counts.items() if c == best)
