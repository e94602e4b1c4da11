"""`python -m splitaudit`: the same CLI as the `splitaudit` console script."""

from splitaudit.cli import main

main()
