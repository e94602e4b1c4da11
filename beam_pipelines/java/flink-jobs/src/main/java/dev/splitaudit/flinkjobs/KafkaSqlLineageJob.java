package dev.splitaudit.flinkjobs;

import java.util.Map;
import java.util.UUID;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

/**
 * {@link KafkaLineageJob} as a SQL job: the Table API's {@code kafka} connector (flink-connector-kafka
 * 3.3.0-1.19, a KafkaSource underneath) reads the topics with the records' {@code topic}, {@code partition} and
 * {@code offset} as metadata columns; the rows go on to the same JSON-lines sink. No operator has a uid, as in
 * SQL jobs: Flink derives every id from the job graph.
 *
 * <p>The same arguments; {@code --partitionDiscoveryIntervalMs} becomes the connector's
 * {@code scan.topic-partition-discovery.interval} (0 disables periodic discovery, so a non-positive value gives
 * 0; unset: the connector's default, 5 minutes).
 */
public final class KafkaSqlLineageJob {

  private KafkaSqlLineageJob() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = KafkaLineageJob.parse(args);
    for (String datastreamOnly : new String[] {"startingOffsets", "boundedAt"}) {
      if (options.containsKey(datastreamOnly)) {
        throw new IllegalArgumentException("--" + datastreamOnly + " is the DataStream job's only");
      }
    }
    String topics = KafkaLineageJob.required(options, "topic");
    String discovery = options.get("partitionDiscoveryIntervalMs");
    String discoveryOption =
        discovery == null
            ? ""
            : String.format(
                ",\n 'scan.topic-partition-discovery.interval' = '%d ms'",
                Math.max(0L, Long.parseLong(discovery)));

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(Integer.parseInt(KafkaLineageJob.required(options, "parallelism")));
    env.enableCheckpointing(Long.parseLong(options.getOrDefault("checkpointingInterval", "1000")));
    StreamTableEnvironment tables = StreamTableEnvironment.create(env);
    tables.executeSql(
        String.format(
            "CREATE TABLE records (\n"
                + " `topic` STRING METADATA VIRTUAL,\n"
                + " `partition` INT METADATA VIRTUAL,\n"
                + " `offset` BIGINT METADATA VIRTUAL,\n"
                + " `k` BYTES,\n"
                + " `v` BYTES\n"
                + ") WITH (\n"
                + " 'connector' = 'kafka',\n"
                + " 'topic' = '%s',\n"
                + " 'properties.bootstrap.servers' = '%s',\n"
                + " 'properties.group.id' = '%s',\n"
                + " 'scan.startup.mode' = 'earliest-offset',\n"
                + " 'key.format' = 'raw',\n"
                + " 'key.fields' = 'k',\n"
                + " 'value.format' = 'raw',\n"
                + " 'value.fields-include' = 'EXCEPT_KEY'%s\n"
                + ")",
            topics.replace(",", ";"),
            KafkaLineageJob.required(options, "bootstrapServers"),
            KafkaLineageJob.required(options, "groupId"),
            discoveryOption));
    tables
        .toDataStream(tables.sqlQuery("SELECT `topic`, `partition`, `offset`, `k`, `v` FROM records"))
        .map(new ToLineage())
        .addSink(new JsonLinesSink(KafkaLineageJob.required(options, "sinkDir")))
        .name("JSON lines with lineage");
    env.execute("splitaudit Kafka SQL lineage: " + topics);
  }

  /** A row of the table as its {@link LineageRecord}; the reader id is one per subtask (drawn in open). */
  private static final class ToLineage extends RichMapFunction<Row, LineageRecord> {
    private static final long serialVersionUID = 1L;
    private transient String readerId;

    @Override
    public void open(OpenContext context) {
      readerId = UUID.randomUUID().toString();
    }

    @Override
    public LineageRecord map(Row row) {
      return new LineageRecord(
          (String) row.getField("topic"),
          (Integer) row.getField("partition"),
          (Long) row.getField("offset"),
          readerId,
          LineageDeserializer.sha256Prefix((byte[]) row.getField("k")),
          LineageDeserializer.sha256Prefix((byte[]) row.getField("v")));
    }
  }
}
