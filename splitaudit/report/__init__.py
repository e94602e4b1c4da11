"""Rendering of result objects: console (rich) and JSON, plus progress reporting on stderr."""
