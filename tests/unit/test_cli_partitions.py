"""`--partitions` has one grammar (N or TOPIC=N, comma-separated or repeated); each command takes what it can use."""

from __future__ import annotations

import click
import pytest

from splitaudit.cli.partitions import one_topic_count, parse_partitions, topic_counts

OPTION = click.Option(["--partitions"], multiple=True)
CTX = click.Context(click.Command("probe"))


def test_every_form_parses_to_topic_and_count() -> None:
    assert parse_partitions(("4",)) == ((None, 4),)
    assert parse_partitions(("a=3, b=2", "c=1")) == (("a", 3), ("b", 2), ("c", 1))


@pytest.mark.parametrize("value", ["x", "", "a=", "3,x"])
def test_an_item_that_is_not_n_or_topic_n_is_refused(value: str) -> None:
    with pytest.raises(click.BadParameter, match="is not N or TOPIC=N"):
        parse_partitions((value,))


def test_scenario_counts_comma_separated_or_repeated() -> None:
    assert topic_counts(CTX, OPTION, ("5,2",)) == (5, 2)
    assert topic_counts(CTX, OPTION, ("5", "2")) == (5, 2)


@pytest.mark.parametrize(
    ("values", "message"),
    [(("t=3",), "names its topics itself"), (("4,0",), "at least one partition")],
)
def test_scenario_counts_refuse_topics_and_empty_ones(values: tuple[str, ...], message: str) -> None:
    with pytest.raises(click.BadParameter, match=message):
        topic_counts(CTX, OPTION, values)


def test_a_one_topic_run_takes_exactly_one_count() -> None:
    assert one_topic_count(CTX, OPTION, ("3",)) == 3
    with pytest.raises(click.BadParameter, match="reads one topic"):
        one_topic_count(CTX, OPTION, ("2,3",))
