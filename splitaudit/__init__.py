"""splitaudit: audit Flink savepoint split state and Kafka sinks for partitions read twice or lost."""

__version__ = "0.1.0"
