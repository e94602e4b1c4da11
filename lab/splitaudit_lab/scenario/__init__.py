"""Scenarios that run the reference Beam pipeline on the real stack: restore from a savepoint, stock vs patched."""
