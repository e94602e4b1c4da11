"""The S3 client of the filesystem seam, configured from the standard AWS variables (no request is made)."""

from __future__ import annotations

from typing import Any

import pytest

from splitaudit.savepoint.fileio import absolute_location, s3_filesystem


def _options(environment: dict[str, str]) -> dict[str, Any]:
    options: dict[str, Any] = s3_filesystem(environment).__reduce__()[1][0]  # what pyarrow was configured with
    return options


def test_endpoint_region_and_scheme_come_from_the_aws_variables() -> None:
    options = _options({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-3"})
    assert (options["endpoint_override"], options["scheme"], options["region"]) == (
        "127.0.0.1:9000",
        "http",
        "eu-west-3",
    )


def test_the_s3_specific_endpoint_wins_and_an_endpoint_alone_means_us_east_1() -> None:
    options = _options({"AWS_ENDPOINT_URL": "http://a:1", "AWS_ENDPOINT_URL_S3": "https://b:2"})
    assert (options["endpoint_override"], options["scheme"], options["region"]) == ("b:2", "https", "us-east-1")
    assert _options({"AWS_ENDPOINT_URL": "http://a:1", "AWS_DEFAULT_REGION": "ap-south-1"})["region"] == "ap-south-1"


def test_without_an_endpoint_it_is_aws_itself() -> None:
    options = _options({"AWS_REGION": "us-west-2"})
    assert (options["endpoint_override"], options["scheme"], options["region"]) == ("", "https", "us-west-2")


def test_an_endpoint_that_is_not_http_is_refused() -> None:
    with pytest.raises(ValueError, match="AWS_ENDPOINT_URL 'ftp://host:21' is not an http:// or https:// URL"):
        s3_filesystem({"AWS_ENDPOINT_URL": "ftp://host:21"})


def test_a_relative_path_becomes_absolute_and_a_uri_stays_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    assert absolute_location("savepoints/sp-1") == "/savepoints/sp-1"
    assert absolute_location("s3://bucket/savepoints/sp-1") == "s3://bucket/savepoints/sp-1"
