"""splitaudit's lab: the embedded stack (a Kafka broker, a Flink cluster, Spark, an object store) and the runs made
on it (the demo, the restore scenarios of the project's own pipelines, the real-cluster matrix).

A distribution of its own (`splitaudit-lab`, installed by `splitaudit[stack]` or a checkout's `make setup`): the
product (`splitaudit`) never imports it. Its commands join `splitaudit`'s through the `splitaudit.commands` entry
points, and its results are rendered by `splitaudit_lab.report`'s Outputs, which extend the product's.
"""
