"""The one line an error becomes: Java errors passed through Py4J say their cause and file, not `o48.load`."""

from splitaudit.errors import missing_extra, summary

PY4J_TEXT = """An error occurred while calling o26.json.
: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///s/a:b.json
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(QueryExecutionErrors.scala:856)
Caused by: java.lang.IllegalArgumentException: java.net.URISyntaxException: Relative path in absolute URI: .a:b.json.crc
\tat org.apache.hadoop.fs.Path.initialize(Path.java:271)
Caused by: java.net.URISyntaxException: Relative path in absolute URI: .a:b.json.crc
\tat java.base/java.net.URI.checkPath(URI.java:1998)
"""


def test_py4j_error_says_the_file_and_the_root_cause() -> None:
    assert summary(RuntimeError(PY4J_TEXT)) == (
        "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///s/a:b.json; "
        "caused by: Relative path in absolute URI: .a:b.json.crc"
    )


def test_py4j_error_without_java_text_keeps_its_line() -> None:
    assert summary(RuntimeError("An error occurred while calling o48.load.")) == (
        "An error occurred while calling o48.load."
    )


def test_other_errors_are_their_first_line_or_type() -> None:
    assert summary(ValueError("bad thing\nmore")) == "bad thing"
    assert summary(ValueError()) == "ValueError"


def test_a_missing_optional_dependency_names_the_extra_that_installs_it() -> None:
    error = missing_extra(ModuleNotFoundError("No module named 'pyspark'", name="pyspark.sql"))
    assert error is not None
    assert (error.exit_code, str(error)) == (
        3,
        "this command needs pyspark, which splitaudit's extra [spark] installs: pip install 'splitaudit[spark]' "
        "(or uv pip install 'splitaudit[spark]')",
    )
    kafka = missing_extra(ModuleNotFoundError("No module named 'confluent_kafka'", name="confluent_kafka"))
    assert kafka is not None
    assert "[kafka]" in str(kafka)


def test_a_missing_module_no_extra_brings_is_not_explained_away() -> None:
    assert missing_extra(ModuleNotFoundError("No module named 'splitaudit.nothing'", name="splitaudit.nothing")) is None
