"""The audit on Spark: a sink (and, with the reader, savepoint split state) in, one `Findings` out."""
