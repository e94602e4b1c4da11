"""The one grammar of `--partitions`: `N` or `TOPIC=N` items, comma-separated or the option repeated.

`audit` takes every form (a count per named topic, or N for its one source topic); the scenario commands name
their topics themselves, so they take counts only: one per topic they create, or exactly one when their job
reads one topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import click

# A topic's partition count as `--partitions` gives it: (TOPIC, N), or (None, N) for the one topic meant.
PartitionCount = tuple[str | None, int]


def comma_items(values: Iterable[str]) -> Iterator[str]:
    """The items of a repeatable, comma-separated option's values, each stripped (an empty one included)."""
    return (part.strip() for value in values for part in value.split(","))


def parse_partitions(values: Iterable[str]) -> tuple[PartitionCount, ...]:
    """`--partitions` values as (topic or None, N) pairs; click.BadParameter for an item that is not N or
    TOPIC=N."""
    counts: list[PartitionCount] = []
    for item in comma_items(values):
        topic, _, count = item.rpartition("=")
        try:
            counts.append((topic or None, int(count)))
        except ValueError:
            raise click.BadParameter(f"{item!r} is not N or TOPIC=N") from None
    return tuple(counts)


def partition_counts(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> tuple[PartitionCount, ...]:
    """Click callback of `audit --partitions`: every form of the grammar (audit checks the counts)."""
    return parse_partitions(values)


def topic_counts(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> tuple[int, ...]:
    """Click callback of a scenario's `--partitions` for the topics it creates: one count per topic, each at
    least 1 (`5,2`: two topics)."""
    counts = parse_partitions(values)
    if any(topic is not None for topic, _ in counts):
        raise click.BadParameter(f"{','.join(values)!r}: the run names its topics itself; give N or N,N,…")
    if any(count < 1 for _, count in counts):
        raise click.BadParameter(f"{','.join(values)!r}: every topic needs at least one partition")
    return tuple(count for _, count in counts)


def one_topic_count(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> int:
    """Click callback of `--partitions` for a run whose job reads one topic it creates: its one count."""
    counts = topic_counts(ctx, param, values)
    if len(counts) != 1:
        raise click.BadParameter(f"{','.join(values)!r}: the job reads one topic; give one N")
    return counts[0]
