"""Clients of the systems splitaudit talks to (Kafka, Flink's REST API, Spark), wherever they run.

Used by the audit (a user's clusters) and by `stack/` (the servers splitaudit starts itself); they start nothing.
"""
