"""`python -m splitaudit_beam ARGS`: submit the pipeline (see splitaudit_beam.pipeline)."""

from splitaudit_beam.pipeline import main

main()
