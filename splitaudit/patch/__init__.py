"""Putting the beam#31313 enumerator patch into a user's own shaded Beam-on-Flink job jar (`patch-jar`)."""
