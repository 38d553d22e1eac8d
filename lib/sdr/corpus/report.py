"""What every corpus reader shares: :class:`ReadReport`, the count of every record read, kept or skipped (by
reason, with examples), so that nothing is dropped silently. It changes with how readers report, not with any
one data layout.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class ReadReport:
    """What a reader counted: records read and kept, and every skip or oddity by reason.

    Readers never drop anything silently: each reason has a count and up to five example ids,
    and :meth:`summary` is the one line the reader prints.
    """

    source: str
    read: int = 0
    kept: int = 0
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, reason: str, example: object | None = None, count: int = 1) -> None:
        """Count ``count`` occurrences of ``reason`` (keeping a few examples)."""
        self.counts[reason] += count
        if example is not None:
            examples = self.examples.setdefault(reason, [])
            if len(examples) < 5:
                examples.append(str(example))

    def __getitem__(self, reason: str) -> int:
        return self.counts.get(reason, 0)

    def summary(self) -> str:
        """One line: source, records read/kept and the counted reasons."""
        details = ", ".join(f"{reason}: {count}" for reason, count in sorted(self.counts.items()))
        return f"{self.source}: read {self.read}, kept {self.kept}" + (f" ({details})" if details else "")

    def to_dict(self) -> dict:
        return {"source": self.source, "read": self.read, "kept": self.kept,
                "counts": dict(self.counts), "examples": dict(self.examples)}


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""
