package dev.splitaudit.benchmarks;

import dev.splitaudit.fixtures.BenchProfile;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.zip.CRC32;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * The JVM side of benchmarks/keyed_state.py: reads the keyed state of KeyedStateBenchJob's {@code fill} operator
 * with Flink's State Processor API ({@code SavepointReader.readKeyedState(OperatorIdentifier.forUid(uid),
 * KeyedStateReaderFunction)}) and computes the checksum the Python side computes from its own reading.
 *
 * <p>Per state, how many values and a sum over them: {@code payload} (value state, one per key): CRC-32 of the
 * key's UTF-8 bytes plus CRC-32 of the payload's; {@code values} (list state): the elements, each counted; {@code
 * attributes} (map state): CRC-32 of each user key's UTF-8 bytes plus its value; {@code profile} (value state of
 * the POJO {@link BenchProfile}, compiled in from the job's sources): CRC-32 of its label plus its level and
 * score. The sums are Flink accumulators, read from the job's result. The reader function emits one {@code 1L} per key, dropped by a discarding sink: it
 * must emit something, since {@code KeyedStateInputFormat.nextRecord} returns null after a key that emitted
 * nothing, and the source ends its input split at a null record (a function that emits nothing reads one key per
 * split, without an error).
 *
 * <p>Prints one JSON line, {@code {"checksum": {state: {"count": n, "sum": n}}, "jvm_millis": n}}: the checksum
 * and the milliseconds spent inside the JVM (from {@code main} to the job's end). Arguments: {@code savepointPath
 * uid parallelism [hashmap|rocksdb]} (the backend the state is restored into before it is read; {@code hashmap} by
 * default).
 */
public final class KeyedStateRead {

  private KeyedStateRead() {}

  public static void main(String[] args) throws Exception {
    long started = System.nanoTime();
    Configuration conf = new Configuration();
    conf.setString("rest.bind-address", "127.0.0.1");
    conf.setString("taskmanager.host", "127.0.0.1");
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.createLocalEnvironment(Integer.parseInt(args[2]), conf);
    StateBackend backend =
        args.length > 3 && args[3].equals("rocksdb") ? new EmbeddedRocksDBStateBackend() : new HashMapStateBackend();
    SavepointReader savepoint = SavepointReader.read(env, args[0], backend);
    savepoint
        .readKeyedState(OperatorIdentifier.forUid(args[1]), new Checksum(), Types.STRING, Types.LONG)
        .sinkTo(new DiscardingSink<>());
    JobExecutionResult result = env.execute("splitaudit-keyed-state-read");
    long millis = (System.nanoTime() - started) / 1_000_000;
    StringBuilder json = new StringBuilder("{\"checksum\": {");
    String separator = "";
    for (String state : new String[] {"payload", "values", "attributes", "profile"}) {
      json.append(
          String.format(
              "%s\"%s\": {\"count\": %d, \"sum\": %d}",
              separator,
              state,
              (Long) result.getAccumulatorResult(state + ".count"),
              (Long) result.getAccumulatorResult(state + ".sum")));
      separator = ", ";
    }
    json.append("}, \"jvm_millis\": ").append(millis).append("}");
    System.out.println(json);
    System.exit(0);
  }

  /** Adds each key's four states to the accumulators; emits {@code 1L}. */
  static final class Checksum extends KeyedStateReaderFunction<String, Long> {
    private transient ValueState<String> payload;
    private transient ListState<Long> values;
    private transient MapState<String, Long> attributes;
    private transient ValueState<BenchProfile> profile;
    private final LongCounter payloadCount = new LongCounter();
    private final LongCounter payloadSum = new LongCounter();
    private final LongCounter valuesCount = new LongCounter();
    private final LongCounter valuesSum = new LongCounter();
    private final LongCounter attributesCount = new LongCounter();
    private final LongCounter attributesSum = new LongCounter();
    private final LongCounter profileCount = new LongCounter();
    private final LongCounter profileSum = new LongCounter();
    private transient CRC32 crc;

    @Override
    public void open(Configuration parameters) {
      payload = getRuntimeContext().getState(new ValueStateDescriptor<>("payload", Types.STRING));
      values = getRuntimeContext().getListState(new ListStateDescriptor<>("values", Types.LONG));
      attributes =
          getRuntimeContext().getMapState(new MapStateDescriptor<>("attributes", Types.STRING, Types.LONG));
      profile =
          getRuntimeContext().getState(new ValueStateDescriptor<>("profile", Types.POJO(BenchProfile.class)));
      crc = new CRC32();
      getRuntimeContext().addAccumulator("payload.count", payloadCount);
      getRuntimeContext().addAccumulator("payload.sum", payloadSum);
      getRuntimeContext().addAccumulator("values.count", valuesCount);
      getRuntimeContext().addAccumulator("values.sum", valuesSum);
      getRuntimeContext().addAccumulator("attributes.count", attributesCount);
      getRuntimeContext().addAccumulator("attributes.sum", attributesSum);
      getRuntimeContext().addAccumulator("profile.count", profileCount);
      getRuntimeContext().addAccumulator("profile.sum", profileSum);
    }

    private long crc32(String text) {
      crc.reset();
      crc.update(text.getBytes(StandardCharsets.UTF_8));
      return crc.getValue();
    }

    @Override
    public void readKey(String key, Context context, Collector<Long> out) throws Exception {
      String text = payload.value();
      if (text != null) {
        payloadCount.add(1);
        payloadSum.add(crc32(key) + crc32(text));
      }
      Iterable<Long> elements = values.get();
      if (elements != null) {
        for (Long element : elements) {
          valuesCount.add(1);
          valuesSum.add(element);
        }
      }
      for (Map.Entry<String, Long> entry : attributes.entries()) {
        attributesCount.add(1);
        attributesSum.add(crc32(entry.getKey()) + entry.getValue());
      }
      BenchProfile pojo = profile.value();
      if (pojo != null) {
        profileCount.add(1);
        profileSum.add(crc32(pojo.label) + pojo.level + pojo.score);
      }
      out.collect(1L);
    }
  }
}
