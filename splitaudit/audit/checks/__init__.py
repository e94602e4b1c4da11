"""The audit's pure checks and findings: judged on the driver from a savepoint's small tables, file listings and
offsets, with no Spark. The guard and the watch stand on these; the Spark passes (`audit.passes`) never come up here."""
