"""`patch-jar`: put the beam#31313 enumerator patch into a user's job jar; `lineage-kit`: the lineage kit's jar for
a user's own build."""

from __future__ import annotations

from pathlib import Path

import click

from splitaudit.cli.context import run


@click.command("patch-jar")
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


@click.command("lineage-kit")
@click.option("--out", "out_dir", metavar="DIR", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The folder to write beam-kafka-lineage-0.1.0.jar into; made if missing. An existing jar of that "
                   "name is never overwritten.")  # fmt: skip
@click.pass_context
def lineage_kit_command(ctx: click.Context, out_dir: Path) -> None:
    """Write the lineage kit's jar for your own Maven or Gradle build, and print the lines that add it.

    The kit (dev.splitaudit:beam-kafka-lineage:0.1.0; Java 8 bytecode, Beam 2.54.0 to 2.70.0, with Beam, Kafka and
    Flink `provided`) gives your pipeline's sink the lineage columns topic, partition, offset, reader_id, subtask,
    attempt and job_id, from which `audit` classifies duplicates instead of inferring them (docs/audit.md, "Add
    lineage to your pipeline"). The jar comes from splitaudit's own package (a wheel carries it): no checkout
    needed. Maven: install it with the printed `mvn ...:install-file` line, which generates the kit's pom (its
    dependencies are all provided), then depend on dev.splitaudit:beam-kafka-lineage:0.1.0. Gradle: add the
    printed `implementation(files(...))` line. Refuses (exit 2) when DIR already holds the jar.
    """
    from splitaudit.patch.lineage_kit import write_lineage_kit

    run(ctx, lambda context: context.output.lineage_kit_report(write_lineage_kit(out_dir)))
