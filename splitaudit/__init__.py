"""splitaudit: audit Flink savepoint split state and Kafka sinks for partitions read twice or lost."""
