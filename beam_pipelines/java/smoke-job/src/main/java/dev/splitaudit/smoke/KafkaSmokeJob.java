package dev.splitaudit.smoke;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.utils.ParameterTool;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Reads one Kafka topic with Flink's KafkaSource (uid {@code kafka-source}), keeps a per-partition record
 * count in keyed state (uid {@code count-per-partition}) and discards the output. Arguments:
 * {@code --bootstrap HOST:PORT --topic T --group G [--checkpoint-interval-ms 1000] [--throttle-ms 0]}.
 * {@code --throttle-ms} sleeps per record so a savepoint lands while the topic is still being read.
 */
public final class KafkaSmokeJob {

  private KafkaSmokeJob() {}

  public static void main(String[] args) throws Exception {
    ParameterTool params = ParameterTool.fromArgs(args);
    String bootstrap = params.getRequired("bootstrap");
    String topic = params.getRequired("topic");
    String group = params.get("group", "splitaudit-smoke");
    long checkpointIntervalMs = params.getLong("checkpoint-interval-ms", 1000L);
    long throttleMs = params.getLong("throttle-ms", 0L);

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.enableCheckpointing(checkpointIntervalMs);

    KafkaSource<PartitionOffset> source =
        KafkaSource.<PartitionOffset>builder()
            .setBootstrapServers(bootstrap)
            .setTopics(topic)
            .setGroupId(group)
            .setStartingOffsets(OffsetsInitializer.earliest())
            .setDeserializer(new PartitionOffsetDeserializer())
            .build();

    DataStream<PartitionOffset> records =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "Kafka Source").uid("kafka-source");

    records
        .keyBy(record -> record.partition)
        .process(new CountPerPartition(throttleMs))
        .uid("count-per-partition")
        .name("Count per partition")
        .addSink(new DiscardingSink<>())
        .uid("discard")
        .name("Discard");

    env.execute("splitaudit smoke: " + topic);
  }

  /** A record reduced to where it came from. */
  public static final class PartitionOffset {
    public int partition;
    public long offset;

    public PartitionOffset() {}

    PartitionOffset(int partition, long offset) {
      this.partition = partition;
      this.offset = offset;
    }
  }

  private static final class PartitionOffsetDeserializer
      implements KafkaRecordDeserializationSchema<PartitionOffset> {
    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<PartitionOffset> out) {
      out.collect(new PartitionOffset(record.partition(), record.offset()));
    }

    @Override
    public org.apache.flink.api.common.typeinfo.TypeInformation<PartitionOffset> getProducedType() {
      return org.apache.flink.api.common.typeinfo.TypeInformation.of(PartitionOffset.class);
    }
  }

  private static final class CountPerPartition
      extends KeyedProcessFunction<Integer, PartitionOffset, Long> {
    private final long throttleMs;
    private transient ValueState<Long> count;

    CountPerPartition(long throttleMs) {
      this.throttleMs = throttleMs;
    }

    @Override
    public void open(OpenContext openContext) {
      count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
    }

    @Override
    public void processElement(PartitionOffset record, Context ctx, Collector<Long> out)
        throws Exception {
      if (throttleMs > 0) {
        Thread.sleep(throttleMs);
      }
      Long seen = count.value();
      long next = seen == null ? 1L : seen + 1L;
      count.update(next);
      out.collect(next);
    }
  }
}
