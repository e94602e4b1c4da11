"""`patch-jar`: put the beam#31313 enumerator patch into a user's job jar."""

from __future__ import annotations

from pathlib import Path

import click

from splitaudit.cli.context import run
from splitaudit.cli.group import main


@main.command("patch-jar")
@click.argument("in_jar", metavar="IN.jar", type=click.Path(path_type=Path))
@click.option("--out", "out_jar", metavar="OUT.jar", required=True, type=click.Path(path_type=Path),
              help="Where to write the patched jar.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="Overwrite OUT.jar if it exists, and patch a jar splitaudit already patched again.")  # fmt: skip
@click.pass_context
def patch_jar_command(ctx: click.Context, in_jar: Path, out_jar: Path, force: bool) -> None:
    """Put the beam#31313 enumerator patch into a shaded Beam-on-Flink job jar.

    Replaces Beam's FlinkSource, FlinkSourceSplitEnumerator, FlinkSourceReaderBase and
    FlinkUnboundedSourceReader classes with the patched build's for the jar's own Beam release, adds the
    classes of partition discovery on restore (after a restore, partitions added to the topic while the job
    was down are read, from earliest; Kafka unreachable fails the job; see beam_pipelines/java/README.md for
    the options) and copies every other entry byte for byte. The release and runner come from the jar's Maven
    metadata (never its name), and its classes must be that release's (SHA-256). Supported: Beam
    2.54.0, 2.56.0 and 2.59.0 with beam-runners-flink-1.16, 2.62.0 with beam-runners-flink-1.19. IN.jar is
    never modified. Refuses (exit 2) jars that are not Beam, have no classic Flink runner, already have the
    upstream fix (Beam 2.70.0 and later), are already patched (unless --force), or are of a release no
    variant is built for.
    """
    from splitaudit.patch.jar import patch_jar

    run(ctx, lambda context: context.output.patch_report(patch_jar(in_jar, out_jar, force)))
