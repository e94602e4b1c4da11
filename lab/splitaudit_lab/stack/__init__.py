"""The real systems splitaudit runs against: a Kafka broker, a Flink cluster, a Spark session, and their setup."""
