"""splitaudit's Python Beam pipeline; a package so that the SDK harness imports its DoFns by name.

The SDK harness workers (started by the worker pool) and the submitting process both run with
`beam_pipelines/python` on PYTHONPATH: the DoFns are pickled as references to `splitaudit_beam.pipeline`,
never as copies of a `__main__` module whose imports the workers would not have.
"""
