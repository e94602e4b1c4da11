package dev.splitaudit.flinkjobs;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

/**
 * Writes the rows of the reference sink's schema (beam_pipelines/java/README.md, "Each sink row") as JSON lines.
 * Rows wait in memory until the next checkpoint or savepoint barrier: its snapshot writes them to a hidden temp
 * file and renames it to {@code <job>-<subtask>-<attempt>-<checkpoint>.jsonl}, so the sink holds exactly the rows
 * emitted before each completed snapshot's barrier (a restore from it emits the others again), never a partial
 * file. Rows after the last snapshot are dropped on cancel, as the source re-reads them on restore. The subtask,
 * attempt and job id come from {@code getTaskInfo()} and {@code getJobInfo()} (Flink 1.19 on; 2.0 removed the
 * older getters), so the same source builds for every connector release of the matrix. Without lineage ({@code
 * lineage} false) a row is only the record's {@code value_hash}, as a user's job writes what its records mean and
 * not where they were read: the audit maps such rows to source records by that identity.
 */
final class JsonLinesSink extends LegacyRichSink<LineageRecord> implements CheckpointedFunction {
  private static final long serialVersionUID = 1L;

  private final String sinkDir;
  private final boolean lineage;
  private transient StringBuilder pending;

  JsonLinesSink(String sinkDir) {
    this(sinkDir, true);
  }

  JsonLinesSink(String sinkDir, boolean lineage) {
    this.sinkDir = sinkDir;
    this.lineage = lineage;
  }

  @Override
  public void initializeState(FunctionInitializationContext context) throws IOException {
    pending = new StringBuilder();
    Files.createDirectories(Paths.get(sinkDir));
  }

  @Override
  public void invoke(LineageRecord record, Context context) {
    if (!lineage) {
      pending.append("{\"value_hash\":").append(quoted(record.valueHash)).append("}\n");
      return;
    }
    pending.append(line(record, getRuntimeContext())).append('\n');
  }

  /** A record and the subtask, attempt and job that emit it, as one JSON object of the sink's columns. */
  static String line(LineageRecord record, RuntimeContext runtime) {
    return new StringBuilder()
        .append("{\"topic\":")
        .append(quoted(record.topic))
        .append(",\"partition\":")
        .append(record.partition)
        .append(",\"offset\":")
        .append(record.offset)
        .append(",\"subtask\":")
        .append(runtime.getTaskInfo().getIndexOfThisSubtask())
        .append(",\"reader_id\":")
        .append(quoted(record.readerId))
        .append(",\"attempt\":")
        .append(runtime.getTaskInfo().getAttemptNumber())
        .append(",\"job_id\":")
        .append(quoted(runtime.getJobInfo().getJobId().toString()))
        .append(",\"key_hash\":")
        .append(quoted(record.keyHash))
        .append(",\"value_hash\":")
        .append(quoted(record.valueHash))
        .append("}")
        .toString();
  }

  @Override
  public void snapshotState(FunctionSnapshotContext context) throws IOException {
    if (pending.length() == 0) {
      return;
    }
    RuntimeContext runtime = getRuntimeContext();
    String name =
        runtime.getJobInfo().getJobId()
            + "-"
            + runtime.getTaskInfo().getIndexOfThisSubtask()
            + "-"
            + runtime.getTaskInfo().getAttemptNumber()
            + "-"
            + context.getCheckpointId()
            + ".jsonl";
    Path dir = Paths.get(sinkDir);
    Path tmp = dir.resolve("." + name + ".tmp");
    Files.write(tmp, pending.toString().getBytes(StandardCharsets.UTF_8));
    Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    pending.setLength(0);
  }

  private static String quoted(String text) {
    if (text == null) {
      return "null";
    }
    return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}
