"""Bytes to Python values: Java's `DataInput` primitives and Java serialization parsed as data.

Every format layer above (`savepoint/`, `splits/`) reads through these; they know nothing of Flink or Beam.
"""
