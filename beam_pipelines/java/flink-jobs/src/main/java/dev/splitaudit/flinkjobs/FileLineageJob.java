package dev.splitaudit.flinkjobs;

import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.reader.TextLineInputFormat;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * A Flink-native job reading a folder of text files with flink-connector-files' FLIP-27 {@code FileSource}
 * ({@code TextLineInputFormat}: one split per file, which a reader resumes by lines to skip), every line becoming
 * one JSON line with its lineage in the same sink as {@link KafkaLineageJob}'s ({@link JsonLinesSink}).
 *
 * <p>Every input line is {@code <file name> <line number>} (lab/splitaudit_lab/scenario/flink_file.py writes
 * them), so a record names where it came from: its row's {@code topic} is the file's path as Flink's
 * {@code Path.toString} writes it (the form the split state holds), {@code partition} 0 (the split's start byte:
 * a text file is not split) and {@code offset} the line number, the records a restored reader skips. A reader id
 * is drawn per subtask, the hashes are of the line's bytes (no key).
 *
 * <p>Arguments, {@code --name=value}: {@code --inputDir} (a local folder), {@code --sinkDir},
 * {@code --parallelism}, and optionally {@code --checkpointingInterval} (ms, default 1000),
 * {@code --monitorIntervalMs} (positive: monitor the folder continuously at that interval; else bounded, the
 * files there at start) and {@code --linesPerSecond} (each reader's pace; 0, the default: unpaced). Operators
 * carry uids: {@code file-source}, {@code file-lineage}, {@code lineage-sink}.
 */
public final class FileLineageJob {

  private FileLineageJob() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options =
        KafkaLineageJob.parse(
            args,
            "inputDir",
            "sinkDir",
            "parallelism",
            "checkpointingInterval",
            "monitorIntervalMs",
            "linesPerSecond");
    Path input = new Path(Paths.get(KafkaLineageJob.required(options, "inputDir")).toUri().toString());
    String sinkDir = KafkaLineageJob.required(options, "sinkDir");
    int parallelism = Integer.parseInt(KafkaLineageJob.required(options, "parallelism"));
    long checkpointing = Long.parseLong(options.getOrDefault("checkpointingInterval", "1000"));
    long monitor = Long.parseLong(options.getOrDefault("monitorIntervalMs", "0"));
    int pace = Integer.parseInt(options.getOrDefault("linesPerSecond", "0"));

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(parallelism);
    env.enableCheckpointing(checkpointing);

    FileSource.FileSourceBuilder<String> builder =
        FileSource.forRecordStreamFormat(new TextLineInputFormat(), input);
    if (monitor > 0) {
      builder.monitorContinuously(Duration.ofMillis(monitor));
    }
    env.fromSource(builder.build(), WatermarkStrategy.noWatermarks(), "File Source")
        .uid("file-source")
        .map(new Lineage(input.toString(), pace))
        .uid("file-lineage")
        .name("line lineage")
        .addSink(new JsonLinesSink(sinkDir))
        .uid("lineage-sink")
        .name("JSON lines with lineage");

    env.execute("splitaudit FileSource lineage: " + input);
  }

  /** A line {@code <file name> <line number>} as its lineage record, paced to {@code pace} lines a second. */
  static final class Lineage extends RichMapFunction<String, LineageRecord> {
    private static final long serialVersionUID = 1L;

    private final String folder;
    private final int pace;
    private transient String readerId;
    private transient long started;
    private transient long count;

    Lineage(String folder, int pace) {
      this.folder = folder;
      this.pace = pace;
    }

    @Override
    public void open(Configuration parameters) {
      readerId = java.util.UUID.randomUUID().toString();
      started = System.nanoTime();
    }

    @Override
    public LineageRecord map(String line) throws InterruptedException {
      int space = line.indexOf(' ');
      String path = new Path(new Path(folder), line.substring(0, space)).toString();
      long number = Long.parseLong(line.substring(space + 1));
      count++;
      if (pace > 0) {
        long due = started + count * 1_000_000_000L / pace;
        long wait = due - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
      }
      byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
      return new LineageRecord(path, 0, number, readerId, null, LineageDeserializer.sha256Prefix(bytes));
    }
  }
}
