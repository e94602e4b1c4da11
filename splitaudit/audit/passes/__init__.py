"""The audit's passes over a sink on Spark: the sink read as Spark sees it, its offsets bucketed, tallied and judged
into findings (`audit.checks.findings`)."""
