"""The lab's commands (setup, stack, smoke, scenario, demo, matrix, python-scenario, users-job-scenario), which the
`splitaudit.commands` entry points add to the `splitaudit` group."""
